package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// maxClockSkew is how far the local clock may be from the API's Date header.
const maxClockSkew = 2 * time.Minute

var doctorCmd = &Command{
	Name:  "doctor",
	Usage: "doctor [--dry] [--move-env]",
	Short: "check this machine, one line per check: OK, or what to do",
	Long: `Checks: the .env file; DEEPSEEK_API_KEY is present and the API accepts it (GET
/models with the key; --dry skips every network call); MCP_PATH_SECRET; the
port; the state directory's permissions (0700) and the .env file's (0600); the
bridge binary; the harness binary (Claude Code) and its --version; bubblewrap
(and socat) for the sandbox; whether jobs write into an overlay (the exact
record of their changes) or straight into their workspaces; cloudflared for
tunnels; the allowed roots (and any directory of the daemon's PATH inside one); the clock (against the API's
Date header). Exits 1 if any check FAILs; WARN lines are advice. Doctor never
creates or changes anything, except with --move-env.

A ./.env in the working directory (where the TypeScript bridge kept it) is not
read unless named: doctor says so and offers --move-env, which moves it to the
per-user file ($XDG_CONFIG_HOME/deepseek-mcp-bridge/.env, mode 0600) when that
does not exist yet.`,
	Run: runDoctor,
}

func runDoctor(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	dry := f.Bool("dry", false, "no network: skip the API key probe and the clock comparison")
	move := f.Bool("move-env", false, "move ./.env to the per-user .env (when that does not exist yet)")
	if _, err := f.parse(args); err != nil {
		return err
	}
	r := &report{w: e.Stdout}
	if *move {
		if err := moveLocalEnv(e, f.env); err != nil {
			return err
		}
	}
	// A named .env file that is missing is one FAIL line; the other checks
	// still run on the rest of the configuration.
	cfg, _, err := f.pickEnv(config.LoadMissingOK)
	envPath := config.ResolveEnvFile(f.env, e.Getenv)
	_, missingErr := config.LoadFrom(f.env, e.Getenv)
	if err != nil {
		if _, serr := os.Stat(envPath); serr != nil {
			r.fail("config: %v", err) // the .env itself cannot be read: err names it
		} else {
			r.fail("config: %v — fix it in %s or the environment", err, envPath)
		}
		return r.result()
	}
	e.mask.add(cfg.Secrets()...)
	// Not statedir.Open: doctor must not create or chmod what it inspects.
	c := &ctl{e: e, cfg: cfg, dir: statedir.Dir{Root: cfg.StateDir}, envPath: envPath}
	switch {
	case cfg.EnvFile != "":
		c.envPath = cfg.EnvFile
		r.ok("env file: %s", cfg.EnvFile)
	case cfg.MissingEnvFile != "" && errors.Is(missingErr, config.ErrNoEnvFile):
		c.envPath = cfg.MissingEnvFile
		r.fail("env file: %v", missingErr)
	default:
		r.warn("env file: no %s — settings come from the environment only; `bridgectl secret` creates it (then add DEEPSEEK_API_KEY; .env.example lists the rest)", envPath)
	}
	if cfg.IgnoredLocalEnv != "" {
		r.warn("local .env: %s", config.LocalEnvNote(cfg.IgnoredLocalEnv, envPath))
	}

	var apiDate time.Time
	noClock := "" // why the clock cannot be compared
	switch {
	case cfg.APIKey == "":
		r.fail("API key: DEEPSEEK_API_KEY is not set — put your key (platform.deepseek.com → API keys) into %s", c.envPath)
		noClock = "the API was not asked (no DEEPSEEK_API_KEY)"
	case *dry:
		r.ok("API key: present (not probed: --dry)")
	default:
		apiDate, noClock = c.doctorProbeKey(ctx, r)
	}

	if err := cfg.CheckSecret(); err != nil {
		r.fail("secret: %v", err)
	} else {
		r.ok("secret: MCP_PATH_SECRET set (%d characters)", len(cfg.PathSecret))
	}

	c.doctorPort(ctx, r)
	c.doctorPerms(r)

	bridgeBin, err := findBridge(e)
	if err != nil {
		r.fail("bridge binary: %v", err)
	} else {
		r.ok("bridge binary: %s", bridgeBin)
	}

	if bin, err := c.locateHarness(); err != nil && err != harness.ErrNoBinary {
		// BRIDGE_CLAUDE_BIN or a pinned install names something that is not there.
		r.fail("harness: %v — fix it, run scripts/install.sh or set BRIDGE_CLAUDE_BIN; agent jobs cannot run without it", err)
	} else if err != nil {
		r.fail("harness: Claude Code not found (BRIDGE_CLAUDE_BIN, the pinned install, PATH) — run scripts/install.sh or set BRIDGE_CLAUDE_BIN; agent jobs cannot run without it")
	} else if v, err := versionOf(ctx, bin, "--version"); err != nil {
		r.fail("harness: %s --version failed (%v) — reinstall with scripts/install.sh", bin, err)
	} else {
		r.ok("harness: %s (%s)", v, bin)
	}

	jail := c.doctorSandbox(ctx, r)
	c.doctorRecord(r, bridgeBin, jail)
	c.doctorLimits(r, jail)

	if bin, err := c.findCloudflared(); err != nil {
		r.warn("cloudflared: %v (needed only for `bridgectl tunnel`)", err)
	} else if v, err := versionOf(ctx, bin, "--version"); err != nil {
		r.fail("cloudflared: %s --version failed (%v) — reinstall it", bin, err)
	} else {
		r.ok("cloudflared: %s", v)
	}

	c.doctorRoots(r)
	c.doctorFloor(r)
	if len(c.cfg.AllowedOrigins) == 0 {
		r.ok("origins: browser requests are served from this machine's pages only; a host whose requests carry another Origin is refused (403, logged with the value for BRIDGE_ALLOWED_ORIGINS)")
	} else {
		r.ok("origins: browser requests are served from this machine's pages and %s (BRIDGE_ALLOWED_ORIGINS)", strings.Join(c.cfg.AllowedOrigins, ", "))
	}

	switch {
	case *dry:
		r.ok("clock: %s (not compared: --dry)", e.Now().UTC().Format(time.RFC3339))
	case apiDate.IsZero():
		r.warn("clock: not compared: %s; local time %s", noClock, e.Now().UTC().Format(time.RFC3339))
	default:
		skew := e.Now().Sub(apiDate)
		if skew < 0 {
			skew = -skew
		}
		if skew > maxClockSkew {
			r.fail("clock: off by %v from the API's clock — turn on time sync (`timedatectl set-ntp true`)", skew.Round(time.Second))
		} else {
			r.ok("clock: within %v of the API's clock", skew.Round(time.Second))
		}
	}
	return r.result()
}

// doctorProbeKey asks GET {base}/models with the key and returns the
// response's Date, or why there is none to compare the clock with.
func (c *ctl) doctorProbeKey(ctx context.Context, r *report) (time.Time, string) {
	// The endpoint the running daemon calls, not one this shell would pick.
	base, from := c.endpoint(c.daemon(ctx))
	if base != c.cfg.DeepSeekBaseURL {
		r.warn("API endpoint: the running daemon calls %s (from %s); %s says %s — `bridgectl reload` applies it", base, from, cmp.Or(c.cfg.Origin("DEEPSEEK_BASE_URL"), "the default"), c.cfg.DeepSeekBaseURL)
	} else {
		r.ok("API endpoint: %s (from %s)", base, from)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		r.fail("API key: DEEPSEEK_BASE_URL=%s is not a URL: %v", base, err)
		return time.Time{}, "DEEPSEEK_BASE_URL is not a URL, so the API was not asked"
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	resp, err := c.e.HTTP.Do(req)
	if err != nil {
		r.fail("API key: cannot reach %s (%v) — check the network or DEEPSEEK_BASE_URL; `bridgectl doctor --dry` skips this", base, err)
		return time.Time{}, "the API at " + base + " could not be reached"
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		r.ok("API key: present and accepted by %s", base)
	case http.StatusUnauthorized, http.StatusForbidden:
		r.fail("API key: rejected by %s (%d) — check DEEPSEEK_API_KEY (platform.deepseek.com → API keys)", base, resp.StatusCode)
	case http.StatusPaymentRequired:
		r.fail("API key: accepted, but the balance is insufficient (402) — top up at platform.deepseek.com")
	default:
		r.warn("API key: present; %s/models answered %d, so acceptance is unverified", base, resp.StatusCode)
	}
	if resp.Header.Get("Date") == "" {
		return time.Time{}, "the API gave no Date header"
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}, fmt.Sprintf("the API's Date header %q is not a date", truncate(resp.Header.Get("Date"), 60))
	}
	return date, ""
}

func (c *ctl) doctorPort(ctx context.Context, r *report) {
	if d := c.daemon(ctx); d.PID != 0 && d.Healthy {
		r.ok("port: http://%s is served by the running bridge (pid %d)", d.Addr, d.PID)
		return
	}
	if c.cfg.Port == 0 {
		r.ok("port: PORT=0, a free port is picked at start")
		return
	}
	ln, err := net.Listen("tcp", c.cfg.Addr())
	if err != nil {
		r.fail("port: %s is taken (%v) — stop what listens there (`ss -ltnp 'sport = :%d'`); or %s", c.cfg.Addr(), errors.Unwrap(err), c.cfg.Port, c.portAdvice(c.cfg.Port))
		return
	}
	ln.Close()
	r.ok("port: %s is free", c.cfg.Addr())
}

func (c *ctl) doctorPerms(r *report) {
	fi, err := os.Stat(c.dir.Root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.ok("state dir: %s does not exist yet; it is created with mode 0700 at the first start", c.dir.Root)
	case err != nil:
		r.fail("state dir: %v", err)
	case !fi.IsDir():
		r.fail("state dir: %s is not a directory — remove it or set BRIDGE_STATE_DIR", c.dir.Root)
	case runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700:
		r.fail("state dir: %s has mode %04o — `chmod 700 %s` (it holds the approval queue)", c.dir.Root, fi.Mode().Perm(), c.dir.Root)
	default:
		r.ok("state dir: %s (mode 0700)", c.dir.Root)
	}
	if c.cfg.EnvFile == "" || runtime.GOOS == "windows" {
		return
	}
	if fi, err := os.Stat(c.cfg.EnvFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		r.fail("env file: %s has mode %04o and holds the API key — `chmod 600 %s`", c.cfg.EnvFile, fi.Mode().Perm(), c.cfg.EnvFile)
	}
}

// doctorSandbox checks the OS sandbox; it reports whether jobs get the
// bridge's jail (Linux, bubblewrap working).
func (c *ctl) doctorSandbox(ctx context.Context, r *report) bool {
	if !c.cfg.Sandbox {
		r.warn("sandbox: BRIDGE_SANDBOX=off — harness commands run without bubblewrap (trusted runs only)")
		return false
	}
	if runtime.GOOS != "linux" {
		r.ok("sandbox: %s uses Claude Code's own sandbox (bubblewrap is Linux only)", runtime.GOOS)
		return false
	}
	bwrap, err := lookPath(c.e, "bwrap")
	if err != nil {
		r.fail("sandbox: bubblewrap (bwrap) is missing — `sudo apt-get install bubblewrap socat` (or your distribution's package); agent jobs are refused without it")
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").CombinedOutput(); err != nil {
		r.fail("sandbox: %s cannot create a sandbox here (%v: %s) — allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, or the AppArmor profile for bwrap)", bwrap, err, strings.TrimSpace(string(out)))
		return false
	}
	if _, err := lookPath(c.e, "socat"); err != nil {
		r.fail("sandbox: bubblewrap works but socat is missing (Claude Code's sandbox needs it) — `sudo apt-get install socat`")
		return false
	}
	r.ok("sandbox: bubblewrap works (%s), socat present", bwrap)
	return true
}

// doctorRecord says how jobs' changes will be recorded: exactly, from an
// overlay of the workspace (mounted here as a job's start does), or by a
// walk of the workspace, which can miss changes.
func (c *ctl) doctorRecord(r *report, bridge string, jail bool) {
	const walk = "jobs write straight into their workspaces and the record of their changes is a walk, which can miss some (same-size edits, changes past its limits)"
	switch {
	case runtime.GOOS != "linux":
		r.warn("record: no overlay on %s: %s", runtime.GOOS, walk)
		return
	case !c.cfg.Sandbox:
		r.warn("record: no overlay without the jail (BRIDGE_SANDBOX=off): %s", walk)
		return
	case !jail:
		r.warn("record: no overlay without the jail (see the sandbox line): %s", walk)
		return
	case !c.cfg.Overlay:
		r.warn("record: BRIDGE_OVERLAY=off: %s", walk)
		return
	case bridge == "":
		r.warn("record: the overlay cannot be checked without the bridge binary")
		return
	}
	scratch, err := os.MkdirTemp("", "bridgectl-doctor-")
	if err != nil {
		r.warn("record: the overlay cannot be checked: %v", err)
		return
	}
	defer os.RemoveAll(scratch)
	if err := sandbox.ProbeOverlay(bridge, scratch); err != nil {
		r.warn("record: no overlay can be mounted here (%v): %s — a kernel with unprivileged overlayfs (5.11 or later) and user namespaces gives the exact record", err, walk)
		return
	}
	r.ok("record: exact — each job writes into an overlay of its workspace; what a person reads in a diff lands at its end, the rest is held for `bridgectl jobs ID --promote`")
}

// doctorLimits says which bounds every job has of its own and how they
// are held here.
func (c *ctl) doctorLimits(r *report, jail bool) {
	bound := func(n int, unit string) string {
		if n == 0 {
			return "no bound on " + unit
		}
		return fmt.Sprintf("%d %s", n, unit)
	}
	what := strings.Join([]string{bound(c.cfg.JobMaxProcesses, "processes and threads"), bound(c.cfg.JobMaxMemoryMB, "MiB of memory"), bound(c.cfg.JobMaxDiskMB, "MiB of its own files")}, ", ")
	switch {
	case harness.LimitsHeldBy == "":
		r.warn("limits: a job's own bounds (%s) are not held on %s: only the wall-clock ceiling stops a job that forks, allocates or writes without end", what, runtime.GOOS)
	case !jail:
		r.warn("limits: each job: %s, held by the daemon's watcher over its process tree; without the jail a process that leaves the tree (a daemonised child) is not counted until the job ends, when it is killed (cgroup v2 is not used)", what)
	default:
		r.ok("limits: each job: %s, held by %s; past one the whole job is killed (stop_reason process_limit, memory_limit, disk_limit; cgroup v2 is not used)", what, harness.LimitsHeldBy)
	}
}

func (c *ctl) doctorRoots(r *report) {
	if len(c.cfg.AllowedRoots) == 0 {
		r.warn("allowed roots: none — every agent workspace is refused; `bridgectl allow DIR` grants one")
		return
	}
	bad := 0
	path, whose := c.daemonPath()
	for _, root := range c.cfg.AllowedRoots {
		fi, err := os.Stat(root)
		switch {
		case err != nil:
			hint := ""
			if c.cfg.RootsSemicolon {
				hint = " (\";\" separates roots, as in the TypeScript bridge: a root whose name holds one is not supported)"
			}
			r.fail("allowed root %s: %v%s — create it or `bridgectl allow --remove %s`", root, errors.Unwrap(err), hint, root)
			bad++
		case !fi.IsDir():
			r.fail("allowed root %s is not a directory — `bridgectl allow --remove %s`", root, root)
			bad++
		default:
			if why := broadRoot(root, c.home()); why != "" {
				r.warn("allowed root %s is %s — an agent may work anywhere in it", root, why)
			}
			for _, h := range c.heldBy(root) {
				switch {
				case h.path == c.dir.Root:
					r.fail("allowed root %s contains the state directory %s — a job could reach the approval queue; `bridgectl allow --remove %s` and allow a narrower directory, or move BRIDGE_STATE_DIR", root, c.dir.Root, root)
					bad++
				case h.refused:
					r.fail("allowed root %s contains the .env file %s with the API key — `bridgectl allow --remove %s` and allow a narrower directory, or move the .env file", root, h.path, root)
					bad++
				default:
					r.warn("allowed root %s", h.warning(root))
				}
			}
			for _, d := range pathDirsIn(root, path) {
				r.warn("allowed root %s: %s", root, pathWarning(d, whose))
			}
		}
	}
	if bad == 0 {
		r.ok("allowed roots: %s", strings.Join(c.cfg.AllowedRoots, ", "))
	}
}

// versionOf runs bin with arg and returns the first line of its output.
func versionOf(ctx context.Context, bin, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, arg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, truncate(string(out), 200))
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first, nil
}

package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

var setupCmd = &Command{
	Name:  "setup",
	Usage: "setup [--yes] [--base-url URL] [--key-stdin] [--keep-unprobed] [--roots DIRS] [--approval on|off] [--claude PATH] [--tunnel none|quick|named] [--systemd] [--show]",
	Short: "first-run wizard: key, secret, roots, approval, sandbox, Claude Code, tunnel; then start, register, doctor",
	Long: `Walks through the settings a new install needs and writes them into the .env
(the per-user one unless --env names another), keeping its comments and every
line it does not change. On a terminal it asks, showing each default in
[brackets] (Enter keeps it); with --yes it asks nothing and takes the flags and
the current values. Run it again at any time: every step starts from what is set.

  base URL  DEEPSEEK_BASE_URL (--base-url), default https://api.deepseek.com:
            the API the key is probed on; written into the .env, so every later
            start (another shell, systemd, bridge stdio) uses the same one.
  key       DEEPSEEK_API_KEY, typed without echo (--key-stdin reads it from
            stdin), then probed with GET /models and /user/balance: a rejected
            key or an empty balance is named. The key is never printed. When
            the API cannot be reached, setup offers to keep the key unprobed
            and go on (--keep-unprobed says yes without asking).
  secret    MCP_PATH_SECRET, generated when missing or too short; printed only
            with --show.
  roots     DEEPSEEK_ALLOWED_ROOTS, separated by ':', each checked as
            ` + "`bridgectl allow`" + ` checks it.
  approval  BRIDGE_CC_APPROVAL: on (a human answers commands off the allow list)
            or off (trusted runs only).
  sandbox   whether bubblewrap and socat are there, and how to install them.
  claude    Claude Code: found (with its version, and whether it is the
            project's pinned install), or BRIDGE_CLAUDE_BIN set to --claude PATH,
            or --claude install runs the project's scripts/install.sh claude.
  tunnel    none, quick (a trycloudflare.com URL now) or named (your hostname;
            the command to run with its token is printed).
  systemd   --systemd writes a user unit that runs the daemon at login.

Then it starts (or reloads) the daemon, prints the registration for each host
(` + "`bridgectl register`" + `), doctor's verdict and the next command to run.`,
}

// setup runs other commands (start, register, doctor) through Main, which
// looks commands up in the table that holds setupCmd: Run is set here.
func init() { setupCmd.Run = runSetup }

// setup is one run of the wizard.
type setup struct {
	e           *Env
	c           *ctl
	interactive bool
	in          *bufio.Reader
	envArgs     []string // --env FILE for the commands setup runs
	base        string   // the DeepSeek base URL the key is probed on, written with it
	// keepUnprobed: --keep-unprobed, write the key when the API cannot be reached
	keepUnprobed bool
}

func runSetup(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	yes := f.Bool("yes", false, "ask nothing: take the flags and the current values")
	keyStdin := f.Bool("key-stdin", false, "read the API key from stdin")
	baseURL := f.String("base-url", "", "the DeepSeek API base URL (DEEPSEEK_BASE_URL; default: the current one, else "+config.DefaultDeepSeekBaseURL+")")
	keepUnprobed := f.Bool("keep-unprobed", false, "when the API cannot be reached, write the key unprobed and go on")
	roots := f.String("roots", "", "allowed roots, separated by ':' (default: the current ones)")
	approval := f.String("approval", "", "on or off (default: the current mode, on)")
	claude := f.String("claude", "", "the Claude Code binary (BRIDGE_CLAUDE_BIN), or install: run the project's scripts/install.sh claude")
	tunnel := f.String("tunnel", "", "none, quick or named (default none)")
	hostname := f.String("hostname", "", "the hostname of a named tunnel")
	systemd := f.Bool("systemd", false, "write a systemd user unit for the daemon")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("setup takes no arguments, got %q (see `bridgectl setup --help`)", pos)}
	}
	if *approval != "" && *approval != "on" && *approval != "off" {
		return usageError{fmt.Sprintf("setup --approval %q: want on or off", *approval)}
	}
	if *tunnel != "" && !slices.Contains([]string{"none", "quick", "named"}, *tunnel) {
		return usageError{fmt.Sprintf("setup --tunnel %q: want none, quick or named", *tunnel)}
	}
	c, err := f.loadCreatingEnv()
	if err != nil {
		return err
	}
	s := &setup{e: e, c: c, in: bufio.NewReader(e.Stdin), interactive: !*yes && isTerminal(e.Stdin)}
	if !*yes && !s.interactive && !*keyStdin {
		return usageError{"setup: stdin is not a terminal — answer with flags and --yes (the key from the environment, the .env or --key-stdin)"}
	}
	s.envArgs = []string{"--env", c.envPath}
	fmt.Fprintf(e.Stdout, "setting up %s\n", c.envPath)

	if err := s.baseURL(*baseURL); err != nil {
		return err
	}
	s.keepUnprobed = *keepUnprobed
	if err := s.key(ctx, *keyStdin); err != nil {
		return err
	}
	if err := s.secret(*f.show); err != nil {
		return err
	}
	if err := s.roots(*roots); err != nil {
		return err
	}
	if err := s.approval(*approval); err != nil {
		return err
	}
	s.sandbox()
	if err := s.claude(ctx, *claude); err != nil {
		return err
	}
	kind, err := s.choose("tunnel: none, quick or named", *tunnel, "none", []string{"none", "quick", "named"})
	if err != nil {
		return err
	}
	if *systemd {
		if err := s.systemdUnit(); err != nil {
			return err
		}
	}
	// Start the daemon, or reload it onto the new settings.
	if s.c.daemon(ctx).PID != 0 {
		s.sub(ctx, "reload")
	} else if code := s.sub(ctx, "start"); code != 0 {
		return errors.New("the daemon did not start (see above); fix it and run `bridgectl setup` again")
	}
	if err := s.tunnel(ctx, kind, *hostname); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "\nregister the bridge with your MCP host (pick yours):")
	for _, h := range registerHosts {
		fmt.Fprintf(e.Stdout, "-- %s:\n", h)
		s.sub(ctx, "register", h)
	}
	fmt.Fprintln(e.Stdout, "\ndoctor:")
	if code := s.sub(ctx, "doctor"); code != 0 {
		fmt.Fprintln(e.Stdout, "\nnext: fix the FAIL lines above, then run `bridgectl setup` again")
		return silentError{}
	}
	fmt.Fprintln(e.Stdout, "\nnext: `bridgectl accept` runs three agent jobs end to end (a few cents), `bridgectl smoke` one deepseek_flash call")
	return nil
}

// sub runs another bridgectl command on the same .env and returns its exit status.
func (s *setup) sub(ctx context.Context, args ...string) int {
	return Main(ctx, s.e, append(slices.Clone(s.envArgs), args...))
}

// ask prints question with its default and returns the answer (the default
// on an empty line). Without a terminal it returns the default.
func (s *setup) ask(question, def string) (string, error) {
	if !s.interactive {
		return def, nil
	}
	fmt.Fprintf(s.e.Stdout, "%s [%s]: ", question, def)
	s.e.Flush()
	line, err := s.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", fmt.Errorf("read the answer: %w", err)
	}
	if line = strings.TrimSpace(line); line == "" {
		return def, nil
	}
	return line, nil
}

// choose asks for one of options; flag, when set, answers without asking.
func (s *setup) choose(question, flag, def string, options []string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	for {
		a, err := s.ask(question, def)
		if err != nil {
			return "", err
		}
		if slices.Contains(options, a) {
			return a, nil
		}
		fmt.Fprintf(s.e.Stdout, "  want one of: %s\n", strings.Join(options, ", "))
	}
}

// set writes key=value into the .env, keeping every other line.
func (s *setup) set(key, value string) error {
	if err := s.c.setEnv(key, value); err != nil {
		return err
	}
	if s.c.overriddenByEnv(key) {
		fmt.Fprintf(s.e.Stderr, "warning: %s is also set in the environment, which wins over .env: unset it, or this setting has no effect\n", key)
	}
	return s.c.reread()
}

func (s *setup) secret(show bool) error {
	if s.c.cfg.CheckSecret() == nil {
		fmt.Fprintln(s.e.Stdout, "secret: MCP_PATH_SECRET kept")
	} else {
		if _, err := s.c.writeSecret(); err != nil {
			return err
		}
		fmt.Fprintln(s.e.Stdout, "secret: MCP_PATH_SECRET generated")
	}
	if show {
		fmt.Fprintf(s.e.Stdout, "secret: %s\n", s.c.cfg.PathSecret)
	}
	return nil
}

func (s *setup) roots(flag string) error {
	def := strings.Join(s.c.cfg.AllowedRoots, string(os.PathListSeparator))
	for {
		ans := flag
		if ans == "" {
			var err error
			if ans, err = s.ask("roots: directories agent jobs may work in, separated by ':' ('none' for none)", cmp.Or(def, "none")); err != nil {
				return err
			}
		}
		var roots []string
		var bad error
		if ans != "none" {
			for _, r := range strings.FieldsFunc(ans, func(c rune) bool { return c == os.PathListSeparator || c == ';' }) {
				if r = strings.TrimSpace(r); r == "" {
					continue
				}
				real, err := s.c.checkRoot(r, false)
				if err != nil {
					bad = err
					break
				}
				roots = append(roots, real)
			}
		}
		switch {
		case bad != nil && (flag != "" || !s.interactive):
			return fmt.Errorf("roots: %w", bad)
		case bad != nil:
			fmt.Fprintf(s.e.Stdout, "  %v\n", bad)
			continue
		}
		joined := strings.Join(roots, string(os.PathListSeparator))
		if joined != def {
			if err := s.set("DEEPSEEK_ALLOWED_ROOTS", joined); err != nil {
				return err
			}
		}
		if len(roots) == 0 {
			fmt.Fprintln(s.e.Stdout, "roots: none — agent jobs are refused until `bridgectl allow DIR`")
		} else {
			fmt.Fprintf(s.e.Stdout, "roots: %s\n", strings.Join(roots, ", "))
		}
		return nil
	}
}

func (s *setup) approval(flag string) error {
	def := "on"
	if !s.c.cfg.CCApproval {
		def = "off"
	}
	mode, err := s.choose("approval: a human answers commands off the allow list (on), or nobody (off, trusted runs only)", flag, def, []string{"on", "off"})
	if err != nil {
		return err
	}
	if mode != def {
		if err := s.set("BRIDGE_CC_APPROVAL", mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.e.Stdout, "approval: %s\n", mode)
	return nil
}

func (s *setup) sandbox() {
	var missing []string
	for _, p := range []string{"bwrap", "socat"} {
		if _, err := lookPath(s.e, p); err != nil {
			missing = append(missing, p)
		}
	}
	switch {
	case !s.c.cfg.Sandbox:
		fmt.Fprintln(s.e.Stdout, "sandbox: off (BRIDGE_SANDBOX=off) — harness commands run without bubblewrap")
	case len(missing) == 0:
		fmt.Fprintln(s.e.Stdout, "sandbox: bubblewrap and socat found")
	default:
		fmt.Fprintf(s.e.Stdout, "sandbox: %s missing — `sudo apt-get install bubblewrap socat` (or your distribution's packages); agent jobs are refused without them\n", strings.Join(missing, " and "))
	}
}

func (s *setup) claude(ctx context.Context, flag string) error {
	script := s.installScript()
	if flag == "" && s.interactive && s.c.findHarness() == "" {
		q := "claude: Claude Code not found; its path, or Enter to install it later"
		if script != "" {
			q = "claude: Claude Code not found; 'install' runs " + script + " claude (about 370 MB from npm), or its path, or Enter to install it later"
		}
		var err error
		if flag, err = s.ask(q, ""); err != nil {
			return err
		}
	}
	switch {
	case flag == "install" && script == "":
		return errors.New("claude: no scripts/install.sh next to this install: run it from the project's checkout (`scripts/install.sh claude`), or pass --claude PATH")
	case flag == "install":
		fmt.Fprintf(s.e.Stdout, "claude: running %s claude\n", script)
		s.e.Flush()
		cmd := exec.CommandContext(ctx, script, "claude")
		cmd.Stdout, cmd.Stderr = s.e.Stdout, s.e.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("claude: %s claude failed (%v): see its output above", script, err)
		}
	case flag != "":
		abs, err := filepath.Abs(flag)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("claude: %s is not an executable file", abs)
		}
		if err := s.set("BRIDGE_CLAUDE_BIN", abs); err != nil {
			return err
		}
	}
	p, err := s.c.locateHarness()
	if err != nil {
		how := "`scripts/install.sh claude` from the project's checkout"
		if script != "" {
			how = "`bridgectl setup --claude install` (runs " + script + " claude)"
		}
		fmt.Fprintf(s.e.Stdout, "claude: not found (%v) — install the pinned version with %s, or pass --claude PATH; agent jobs cannot run without it\n", err, how)
		return nil
	}
	v, verr := versionOf(ctx, p, "--version")
	if verr != nil {
		fmt.Fprintf(s.e.Stdout, "claude: %s --version failed (%v) — reinstall it\n", p, verr)
		return nil
	}
	pinned := ""
	if slices.Contains(harness.PinnedPaths(s.bridgeExe()), p) {
		pinned = ", the project's pinned install"
	}
	fmt.Fprintf(s.e.Stdout, "claude: %s (%s%s)\n", v, p, pinned)
	return nil
}

// bridgeExe is the bridge binary the daemon runs as (else bridgectl's own).
func (s *setup) bridgeExe() string {
	if b, err := findBridge(s.e); err == nil {
		return b
	}
	return s.e.Exe
}

// installScript is the project's scripts/install.sh next to the bridge
// binary of a checkout (bin/bridge), or "".
func (s *setup) installScript() string {
	exe := s.bridgeExe()
	if exe == "" {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "..", "scripts", "install.sh")
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func (s *setup) tunnel(ctx context.Context, kind, hostname string) error {
	switch kind {
	case "quick":
		if code := s.sub(ctx, "tunnel"); code != 0 {
			return errors.New("the quick tunnel did not start (see above)")
		}
	case "named":
		host := hostname
		if host == "" {
			host = "HOST"
		}
		fmt.Fprintf(s.e.Stdout, "tunnel: named — run `cloudflared tunnel token NAME | bridgectl tunnel named %s` (deploy/README.md)\n", host)
	default:
		fmt.Fprintln(s.e.Stdout, "tunnel: none — hosts on this machine only; `bridgectl tunnel` gives a public URL later")
	}
	return nil
}

// systemdUnit writes the daemon's user unit, running this bridgectl.
func (s *setup) systemdUnit() error {
	exe := s.e.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	dir := filepath.Join(config.UserConfigDir(s.e.Getenv), "..", "systemd", "user")
	unit := filepath.Join(filepath.Clean(dir), "deepseek-bridge.service")
	body := "# written by `bridgectl setup`; deploy/systemd/deepseek-bridge.service explains each line\n" +
		"[Unit]\nDescription=DeepSeek MCP bridge (bridge serve)\nAfter=network-online.target\nWants=network-online.target\n\n" +
		"[Service]\nType=simple\nExecStart=" + exe + " --env " + s.c.envPath + " start --foreground\n" +
		"KillSignal=SIGTERM\nTimeoutStopSec=30\nRestart=on-failure\nRestartSec=5\nUMask=0077\nNoNewPrivileges=yes\n\n" +
		"[Install]\nWantedBy=default.target\n"
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(unit, []byte(body), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.e.Stdout, "systemd: wrote %s — `systemctl --user daemon-reload && systemctl --user enable --now deepseek-bridge` runs it at login (stop this one first: `bridgectl stop`)\n", unit)
	return nil
}

// readKey reads the key: without echo on a terminal, else one line of stdin.
func (s *setup) readKey() (string, error) {
	if f, ok := s.e.Stdin.(*os.File); ok && s.interactive {
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(s.e.Stdout)
		return strings.TrimSpace(string(b)), err
	}
	line, err := s.in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

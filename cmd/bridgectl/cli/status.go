package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var statusCmd = &Command{
	Name:  "status",
	Usage: "status [--show] [--json]",
	Short: "what is running: daemon, endpoints, tunnel, approval and sandbox modes, harness, roots, jobs",
	Long: `One screen for a glance: enabled or disabled, the daemon's pid and health, the
local and public MCP endpoints (masked unless --show), approval mode, sandbox
mode, whether the harness binary was found, the allowed roots and the agent jobs
that are not finished (how many wait for your approval: ` + "`bridgectl pending`" + `).
The daemon is the process holding the state dir's lock; a pid file naming any
other process is reported as stale (and never signalled). It also says when the
state dir is full or read-only, when audit records could not be written (the
tool calls they would have recorded were denied), and how many job snapshots
are damaged. The roots and the env file say where they come from: the running
daemon (what it serves) or the .env (what the next start reads), and both are
shown when they differ. The daemon's unix socket (what ` + "`bridge stdio`" + ` forwards to)
is asked for /health too. --json prints the same as one JSON object.`,
	Run: runStatus,
}

// statusReport is `bridgectl status --json`.
type statusReport struct {
	Enabled  bool   `json:"enabled"`
	EnvFile  string `json:"env_file"`
	StateDir string `json:"state_dir"`
	// StateDirMissing: the state dir does not exist (the bridge never ran
	// with it); status does not create it.
	StateDirMissing bool   `json:"state_dir_missing,omitempty"`
	Daemon          string `json:"daemon"` // running | stopped | unhealthy
	PID             int    `json:"pid,omitempty"`
	// DaemonNote: why daemon.json was not used although the daemon runs
	// (damaged, not written yet, left from an earlier daemon).
	DaemonNote string `json:"daemon_note,omitempty"`
	// StalePID: bridge.pid or daemon.json names a process that is not this
	// state dir's daemon; Stale says what it is. It is never signalled.
	StalePID  int    `json:"stale_pid,omitempty"`
	Stale     string `json:"stale,omitempty"`
	StartedAt string `json:"started_at,omitempty"`
	// EnvChanged: .env was written after the daemon started, so what it
	// serves (secret, roots, ...) may differ from what this report shows.
	EnvChanged    bool   `json:"env_changed_since_start,omitempty"`
	Addr          string `json:"addr"`
	LocalEndpoint string `json:"local_endpoint"`
	// DeepSeek is the API base URL (the running daemon's when it says),
	// DeepSeekFrom where it came from: "the environment", a .env path or
	// "default", and " (reported by the daemon)" when it is the daemon's.
	DeepSeek       string `json:"deepseek_base_url"`
	DeepSeekFrom   string `json:"deepseek_base_url_from"`
	Tunnel         string `json:"tunnel"` // none | quick | named | dead
	TunnelPID      int    `json:"tunnel_pid,omitempty"`
	TunnelStale    string `json:"tunnel_stale,omitempty"` // a recorded pid that is not the tunnel
	PublicEndpoint string `json:"public_endpoint,omitempty"`
	Approval       string `json:"approval"`
	// ApprovalNote: the config on disk would give another approval mode
	// than the running daemon's at its next start.
	ApprovalNote  string          `json:"approval_note,omitempty"`
	Sandbox       string          `json:"sandbox"`
	Record        string          `json:"record,omitempty"`
	PolicyFloor   string          `json:"policy_floor"`
	Harness       string          `json:"harness"`
	DaemonReports json.RawMessage `json:"daemon_reports,omitempty"`
	AllowedRoots  []string        `json:"allowed_roots"`
	// RootsFrom says where AllowedRoots come from: "daemon" (what the
	// running daemon admits in) or "file" (the .env: no daemon runs, or it
	// did not say). FileRoots is the .env's list when it differs from the
	// daemon's (a reload applies it).
	RootsFrom string   `json:"roots_from"`
	FileRoots []string `json:"file_roots,omitempty"`
	// EnvFrom: "daemon" when EnvFile is the running daemon's file, "file"
	// when no daemon runs or it read none; DaemonEnvFile names the daemon's
	// file when this report read another.
	EnvFrom       string `json:"env_from"`
	DaemonEnvFile string `json:"daemon_env_file,omitempty"`
	// Socket is the daemon's unix socket (bridge stdio), when it runs one;
	// SocketErr is why GET /health over it failed ("" when it answered).
	Socket    string    `json:"socket,omitempty"`
	SocketErr string    `json:"socket_error,omitempty"`
	Jobs      []jobLine `json:"jobs"`
	// AuditUnwritten: audit records could not be written (a full or
	// read-only state dir); the tool calls they would have recorded were denied.
	AuditUnwritten string `json:"audit_unwritten,omitempty"`
	// DamagedJobs: job snapshots that cannot be read as jobs (`bridgectl jobs`).
	DamagedJobs int `json:"damaged_jobs,omitempty"`
	// StateDirTrouble: the state dir's disk is full or read-only now.
	StateDirTrouble string `json:"state_dir_trouble,omitempty"`
}

type jobLine struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Steps  int    `json:"steps"`
	Task   string `json:"task,omitempty"`
}

func runStatus(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	asJSON := f.Bool("json", false, "print JSON")
	if _, err := f.parse(args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	r := c.status(ctx)
	if *asJSON {
		return printJSON(e.Stdout, r)
	}
	w := e.Stdout
	if r.Enabled {
		fmt.Fprintln(w, "bridge:    enabled")
	} else {
		fmt.Fprintln(w, "bridge:    DISABLED — `bridgectl enable` to allow starts")
	}
	switch r.Daemon {
	case "running":
		fmt.Fprintf(w, "daemon:    running, pid %d, http://%s (health OK)%s\n", r.PID, r.Addr, ifNotEmpty(", since ", r.StartedAt))
	case "unhealthy":
		fmt.Fprintf(w, "daemon:    pid %d alive but /health on %s does not answer — `bridgectl logs`, then `bridgectl restart`\n", r.PID, r.Addr)
	default:
		if r.Enabled {
			fmt.Fprintln(w, "daemon:    stopped — `bridgectl start`")
		} else {
			fmt.Fprintln(w, "daemon:    stopped — `bridgectl enable`, then `bridgectl start`")
		}
	}
	if r.DaemonNote != "" {
		fmt.Fprintf(w, "           note: %s\n", r.DaemonNote)
	}
	if r.Stale != "" {
		fmt.Fprintf(w, "           stale: %s\n", r.Stale)
	}
	if r.StateDirTrouble != "" {
		fmt.Fprintf(w, "STATE DIR: %s\n", r.StateDirTrouble)
	}
	if r.AuditUnwritten != "" {
		fmt.Fprintf(w, "AUDIT:     %s — free space in the state dir; `bridgectl audit` shows the gap once records are written again\n", r.AuditUnwritten)
	}
	if r.EnvChanged {
		fmt.Fprintf(w, "note:      %s\n", envChangedNote(r.EnvFile))
	}
	fmt.Fprintf(w, "local:     %s\n", r.LocalEndpoint)
	fmt.Fprintf(w, "deepseek:  %s (from %s)\n", r.DeepSeek, r.DeepSeekFrom)
	switch r.Tunnel {
	case "none":
		fmt.Fprintln(w, "tunnel:    none — `bridgectl tunnel` for a public URL")
	case "dead":
		fmt.Fprintf(w, "tunnel:    recorded but cloudflared is gone%s — `bridgectl untunnel && bridgectl tunnel`\n", ifNotEmpty(" (", r.TunnelStale)+ifNotEmpty("", closeParen(r.TunnelStale)))
	default:
		fmt.Fprintf(w, "tunnel:    %s, pid %d\npublic:    %s\n", r.Tunnel, r.TunnelPID, r.PublicEndpoint)
	}
	fmt.Fprintf(w, "approval:  %s\n", r.Approval)
	if r.ApprovalNote != "" {
		fmt.Fprintf(w, "           note: %s\n", r.ApprovalNote)
	}
	fmt.Fprintf(w, "sandbox:   %s\n", r.Sandbox)
	if r.Record != "" {
		fmt.Fprintf(w, "record:    %s\n", r.Record)
	}
	fmt.Fprintf(w, "floor:     %s\n", r.PolicyFloor)
	fmt.Fprintf(w, "harness:   %s\n", r.Harness)
	from := " (from the daemon)"
	if r.RootsFrom == "file" {
		from = " (from " + r.EnvFile + ")"
	}
	if len(r.AllowedRoots) == 0 {
		fmt.Fprintf(w, "roots:     none%s — every agent workspace is refused; `bridgectl allow DIR` grants one\n", from)
	} else {
		fmt.Fprintf(w, "roots:     %s%s\n", strings.Join(r.AllowedRoots, ", "), from)
	}
	if r.FileRoots != nil {
		fmt.Fprintf(w, "           %s says: %s — `bridgectl reload` applies it\n", r.EnvFile, orNone(r.FileRoots))
	}
	if len(r.Jobs) == 0 {
		fmt.Fprintln(w, "jobs:      none running")
	} else {
		fmt.Fprintf(w, "jobs:      %d not finished%s (`bridgectl jobs` for more)\n", len(r.Jobs), waitingNote(r.Jobs))
		for _, j := range r.Jobs {
			fmt.Fprintf(w, "  %s  %-16s %3d steps  %s\n", j.ID, j.Status, j.Steps, visible(j.Task, 60))
		}
	}
	if r.DamagedJobs > 0 {
		fmt.Fprintf(w, "           %d job %s cannot be read as jobs (damaged or set aside): `bridgectl jobs` says what is still known\n", r.DamagedJobs, plural(r.DamagedJobs, "snapshot", "snapshots"))
	}
	switch {
	case r.EnvFrom == "daemon":
		fmt.Fprintf(w, "env file:  %s (the running daemon's)%s\n", r.EnvFile, ifNotEmpty("", missingNote(r.EnvFile)))
	case r.DaemonEnvFile != "":
		fmt.Fprintf(w, "env file:  %s%s — the running daemon reads %s\n", r.EnvFile, ifNotEmpty("", missingNote(r.EnvFile)), r.DaemonEnvFile)
	default:
		fmt.Fprintf(w, "env file:  %s%s\n", r.EnvFile, ifNotEmpty("", missingNote(r.EnvFile)))
	}
	if r.Socket != "" {
		fmt.Fprintf(w, "socket:    %s (bridge stdio)%s\n", r.Socket, ifNotEmpty(" — does not answer: ", r.SocketErr))
	}
	if r.StateDirMissing {
		fmt.Fprintf(w, "state dir: %s (does not exist: the bridge has not run with this state dir; `bridgectl start` creates it)\n", r.StateDir)
	} else {
		fmt.Fprintf(w, "state dir: %s\n", r.StateDir)
	}
	return nil
}

// waitingNote says how many of the unfinished jobs wait for a human, and
// where to answer them ("" when none does).
func waitingNote(js []jobLine) string {
	n := 0
	for _, j := range js {
		if j.Status == string(jobs.StatusWaitingApproval) {
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 waiting for your approval: `bridgectl pending` shows what it asks"
	}
	return fmt.Sprintf(", %d waiting for your approval: `bridgectl pending` shows what they ask", n)
}

// orNone is a list for a line of output.
func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func closeParen(s string) string {
	if s == "" {
		return ""
	}
	return ")"
}

// stateDirTrouble says when the state dir can record nothing now: a full or
// read-only filesystem ("" when it has room, or the OS does not tell).
func (c *ctl) stateDirTrouble() string {
	if !c.dir.Exists() {
		return ""
	}
	free, ro, err := c.dir.Space()
	switch {
	case err != nil:
		return ""
	case ro:
		return "READ-ONLY: nothing can be recorded — tool calls of agent jobs are denied, and job snapshots on disk stop changing (the daemon keeps the truth and retries)"
	case free < minStateDirFree:
		return fmt.Sprintf("FULL (%d bytes free): audit records and job snapshots may not be written — such tool calls are denied, and snapshots on disk may lag (the daemon keeps the truth and retries); free space", free)
	}
	return ""
}

// minStateDirFree is the free space below which status warns: a few audit
// records and one job snapshot.
const minStateDirFree = 256 << 10

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func missingNote(path string) string {
	if _, err := os.Stat(path); err != nil {
		return " (missing — `bridgectl secret` creates it)"
	}
	return ""
}

func (c *ctl) status(ctx context.Context) statusReport {
	r := statusReport{EnvFile: c.envPath, StateDir: c.dir.Root, StateDirMissing: !c.dir.Exists(), AllowedRoots: c.cfg.AllowedRoots, Jobs: []jobLine{}}
	if r.AllowedRoots == nil {
		r.AllowedRoots = []string{}
	}
	r.Enabled = !c.disabled()
	d := c.daemon(ctx)
	r.Addr = d.Addr
	r.DaemonNote, r.StalePID, r.Stale = d.InfoNote, d.StalePID, d.StaleNote
	if u, ok := approvals.AuditUnwritten(c.dir); ok {
		r.AuditUnwritten = u.Text()
	}
	r.StateDirTrouble = c.stateDirTrouble()
	switch {
	case d.PID != 0 && d.Healthy:
		r.Daemon, r.PID = "running", d.PID
	case d.PID != 0:
		r.Daemon, r.PID = "unhealthy", d.PID
	default:
		r.Daemon = "stopped"
	}
	r.RootsFrom, r.EnvFrom = "file", "file"
	if d.Info != nil {
		r.Socket = d.Info.Socket
		if err := mcpsock.Ping(ctx, r.Socket); r.Socket != "" && err != nil {
			r.SocketErr = err.Error()
		}
		if d.Info.AllowedRoots != nil {
			r.RootsFrom, r.AllowedRoots = "daemon", append([]string{}, d.Info.AllowedRoots...)
			if !slices.Equal(r.AllowedRoots, c.cfg.AllowedRoots) && !(len(r.AllowedRoots) == 0 && len(c.cfg.AllowedRoots) == 0) {
				r.FileRoots = append([]string{}, c.cfg.AllowedRoots...)
			}
		}
		switch {
		case d.Info.EnvFile != "" && config.SameFile(d.Info.EnvFile, c.envPath):
			r.EnvFrom = "daemon"
		case d.Info.EnvFile != "":
			r.DaemonEnvFile = d.Info.EnvFile
		}
		r.StartedAt = d.Info.StartedAt
		r.EnvChanged = c.envChanged(d)
		if d.Info.Harness != nil || d.Info.Sandbox != "" || d.Info.Approval != "" {
			r.DaemonReports = daemonReports(*d.Info)
		}
	}
	r.DeepSeek, r.DeepSeekFrom = c.endpoint(d)
	r.LocalEndpoint = localEndpoint(d.Addr, c.cfg.PathSecret)
	if c.cfg.PathSecret == "" {
		r.LocalEndpoint = "none: no MCP_PATH_SECRET — run `bridgectl secret`"
	}
	t := c.tunnel()
	switch {
	case t.PID != 0 && t.Info != nil:
		r.Tunnel, r.TunnelPID = t.Info.Kind, t.PID
		r.PublicEndpoint = t.Info.URL + "/mcp/" + c.cfg.PathSecret
		if c.cfg.PathSecret == "" {
			r.PublicEndpoint = "none: no MCP_PATH_SECRET — run `bridgectl secret`"
		}
	case t.Info != nil || t.StalePID != 0:
		r.Tunnel, r.TunnelStale = "dead", t.StaleNote
	default:
		r.Tunnel = "none"
	}
	r.Approval = c.approvalMode(d)
	r.ApprovalNote = c.approvalState(d).configNote(c)
	r.Sandbox = c.sandboxMode(d)
	if d.Info != nil && d.Info.Record != "" {
		r.Record = d.Info.Record + " (reported by the daemon)"
	}
	r.PolicyFloor = c.floorLine(d)
	r.Harness = c.harnessLine(d)
	js, trouble := unfinishedJobs(c)
	r.Jobs = append(r.Jobs, js...)
	r.DamagedJobs = len(trouble)
	return r
}

// endpoint is the DeepSeek base URL the running daemon calls and where it
// came from, as its daemon.json says; else the one the next start reads.
func (c *ctl) endpoint(d daemonctl.Status) (url, from string) {
	if d.PID != 0 && d.Info != nil && d.Info.DeepSeekBaseURL != "" {
		return d.Info.DeepSeekBaseURL, d.Info.DeepSeekBaseURLFrom + ", reported by the daemon"
	}
	return c.cfg.DeepSeekBaseURL, cmp.Or(c.cfg.Origin("DEEPSEEK_BASE_URL"), "default")
}

// daemonReports is what the daemon said about itself in daemon.json, for
// status --json: its harness and its modes (each left out when it did not
// say).
func daemonReports(info statedir.DaemonInfo) json.RawMessage {
	b, err := json.Marshal(struct {
		Harness  *statedir.DaemonHarness `json:"harness,omitempty"`
		Sandbox  string                  `json:"sandbox,omitempty"`
		Approval string                  `json:"approval,omitempty"`
		Record   string                  `json:"record,omitempty"`
	}{info.Harness, info.Sandbox, info.Approval, info.Record})
	if err != nil {
		return nil
	}
	return b
}

// approvalMode is status's approval line, from the same state as
// `bridgectl approval`: the daemon's boot mode, the flag and the config.
func (c *ctl) approvalMode(d daemonctl.Status) string {
	st := c.approvalState(d)
	line := "on: commands outside the rules wait for `bridgectl approve`"
	switch {
	case st.off():
		line = "OFF (" + st.reasons() + "): commands outside the rules run without a human"
	case st.PID != 0:
		line = "on (reported by the daemon): commands outside the rules wait for `bridgectl approve`"
	}
	return line
}

func (c *ctl) sandboxMode(d daemonctl.Status) string {
	if d.Info != nil && d.Info.Sandbox != "" {
		return d.Info.Sandbox + " (reported by the daemon)"
	}
	if !c.cfg.Sandbox {
		return "OFF (BRIDGE_SANDBOX=off): harness commands run without bubblewrap"
	}
	if p, err := lookPath(c.e, "bwrap"); err == nil {
		return "on (bubblewrap: " + p + ")"
	}
	return "on, but bubblewrap is missing: agent jobs are refused — install the `bubblewrap` package"
}

func (c *ctl) harnessLine(d daemonctl.Status) string {
	if d.Info != nil && d.Info.Harness != nil {
		if h := d.Info.Harness; h.Available {
			return fmt.Sprintf("%s found: %s (reported by the daemon)", h.Kind, h.Bin)
		}
		return fmt.Sprintf("%s NOT available: %s (reported by the daemon)", d.Info.Harness.Kind, d.Info.Harness.Error)
	}
	if p := c.findHarness(); p != "" {
		return "found: " + p
	}
	return "not found — agent jobs cannot run; set BRIDGE_CLAUDE_BIN or run scripts/install.sh"
}

// findHarness mirrors the daemon's lookup (harness.Locate): BRIDGE_CLAUDE_BIN,
// the project's pinned install next to the bridge binary or in the working
// directory, then claude on PATH. "" when none is found.
func (c *ctl) findHarness() string {
	p, _ := c.locateHarness()
	return p
}

// locateHarness finds the harness binary the way the daemon does; the error
// says what is wrong (a bad BRIDGE_CLAUDE_BIN, a broken pinned install).
func (c *ctl) locateHarness() (string, error) {
	exe := c.e.Exe
	if b, err := findBridge(c.e); err == nil {
		exe = b
	}
	pinned := harness.PinnedPaths(exe)
	// On PATH, only where the daemon would look: among the dirs no job
	// can write (harness.TrustedPath), so doctor never runs a planted one.
	path, _ := c.e.Getenv("PATH")
	untrusted := append([]string{c.cfg.StateDir, "/tmp", os.TempDir()}, c.cfg.AllowedRoots...)
	p, err := harness.Locate(c.cfg.ClaudeBin, pinned, harness.TrustedLook(path, untrusted))
	if err == nil || c.cfg.ClaudeBin != "" {
		return p, err
	}
	for _, pp := range pinned {
		if target, lerr := os.Readlink(pp); lerr == nil {
			if _, serr := os.Stat(pp); serr != nil {
				return "", fmt.Errorf("the pinned install %s is a broken symlink (to %s): %w", pp, target, err)
			}
		}
	}
	return "", err
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

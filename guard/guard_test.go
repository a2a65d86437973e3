package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// guardFixture is a guard over a fresh state dir with one allowed root.
type guardFixture struct {
	g     *Guard
	dir   statedir.Dir
	root  string
	home  string
	env   string
	log   *syncbuf.Buffer
	probe int // calls of the sandbox probe
}

func newGuardFixture(t testing.TB, env map[string]string, probeErr error) *guardFixture {
	t.Helper()
	base := t.TempDir()
	f := &guardFixture{root: filepath.Join(base, "root"), home: filepath.Join(base, "home"), env: filepath.Join(base, "daemon", ".env"), log: &syncbuf.Buffer{}}
	for _, d := range []string{f.root, f.home, filepath.Dir(f.env)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.env, []byte("BRIDGE_LOG_LEVEL=debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := configtest.New(t, mergeMaps(map[string]string{
		"BRIDGE_STATE_DIR":           filepath.Join(base, "state"),
		"DEEPSEEK_ALLOWED_ROOTS":     f.root,
		"BRIDGE_APPROVAL_TIMEOUT_MS": "60000",
		"BRIDGE_APPROVE_ALLOW":       "ls,cat,echo",
	}, env))
	cfg.EnvFile = f.env
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	f.dir = dir
	g, err := New(Options{Config: cfg, Dir: dir, Exe: "/opt/bridge/bin/bridge", Home: f.home,
		SandboxAvailable: func() (string, error) { f.probe++; return "", probeErr }, Logger: zerolog.New(f.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	f.g = g
	return f
}

// bootAgain builds a second guard on f's state dir, as the next boot does.
func (f *guardFixture) bootAgain(t *testing.T) {
	t.Helper()
	if _, err := New(Options{Config: configtest.New(t, map[string]string{"BRIDGE_STATE_DIR": f.dir.Root}), Dir: f.dir, Exe: "/bin/bridge", Home: f.home,
		SandboxAvailable: func() (string, error) { return "", nil }, Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
}

func mergeMaps(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func (f *guardFixture) workspace(t *testing.T) string {
	t.Helper()
	ws, err := os.MkdirTemp(f.root, "ws-")
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// The job's harness files: the approval child's config, the MCP config that
// launches this binary with it, and the settings — in the job's private dir
// inside the state dir; the spec points at them and pre-allows nothing.
func TestGuardPrepareWritesTheJobsHarnessFiles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		sandbox  bool
		mode     string
		logWants []string
	}{
		{name: "defaults", sandbox: true, mode: approvals.ModeOn},
		{name: "approval off", env: map[string]string{"BRIDGE_CC_APPROVAL": "off"}, sandbox: true, mode: approvals.ModeOff,
			logWants: []string{"HUMAN APPROVAL IS OFF (BRIDGE_CC_APPROVAL=off)", "HUMAN APPROVAL IS OFF for this job"}},
		{name: "sandbox off", env: map[string]string{"BRIDGE_SANDBOX": "off"}, sandbox: false, mode: approvals.ModeOn,
			logWants: []string{"OS SANDBOX IS OFF (BRIDGE_SANDBOX=off)", "OS SANDBOX IS OFF for this job"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGuardFixture(t, tc.env, nil)
			ws := f.workspace(t)
			spec := harness.Spec{JobID: "0123456789abcdef0123456789abcdef", Workspace: ws, ConfigDir: f.dir.HarnessDir("0123456789abcdef0123456789abcdef")}
			if err := f.g.Prepare(t.Context(), &spec); err != nil {
				t.Fatal(err)
			}
			hd := f.dir.HarnessDir(spec.JobID)
			if st, err := os.Stat(hd); err != nil || st.Mode().Perm() != 0o700 {
				t.Fatalf("harness dir %v %v", st, err)
			}

			// The approval child's config names the service, the job's token
			// and the rules' inputs (to classify in the job's view), and no
			// path of the state dir beyond what it protects; the service
			// answers with the job's config.
			child, err := prompt.LoadChildConfig(filepath.Join(hd, "approval.json"))
			if err != nil {
				t.Fatal(err)
			}
			if child.JobID != spec.JobID || child.URL != f.g.ApprovalService().URL() || len(child.Token) != 64 {
				t.Errorf("child config %+v", child)
			}
			if raw := readJSONFile(t, filepath.Join(hd, "approval.json")); raw["ledger"] != nil || raw["state_dir"] != nil {
				t.Errorf("the child's config names the ledger or the state dir: %v", raw)
			}
			if child.Rules.Workspace != ws || !slices.Equal(child.Rules.Allow, []string{"ls", "cat", "echo"}) || !slices.Contains(child.Rules.Protected, f.dir.Root) {
				t.Errorf("the child's rules %+v", child.Rules)
			}
			pc, ok := f.g.ApprovalService().Config(spec.JobID)
			if !ok {
				t.Fatal("the job is not registered with the approval service")
			}
			if pc.JobID != spec.JobID || pc.Workspace != ws || pc.StateDir != f.dir.Root || pc.Timeout != time.Minute ||
				pc.ApprovalMode != tc.mode || !slices.Equal(pc.Allow, []string{"ls", "cat", "echo"}) ||
				!slices.Equal(pc.Protected[:2], []string{f.dir.Root, f.env}) || !slices.Contains(pc.Protected, filepath.Join(f.home, ".ssh")) {
				t.Errorf("prompt config %+v", pc)
			}

			// Under that policy no tool call may name the state dir, the .env,
			// a credential store or the bridge binary (also through a link in
			// the workspace) — denied outright, whatever the mode.
			pol := rules.Policy{Workspace: pc.Workspace, Allow: pc.Allow, Protected: pc.Protected}
			const exe = "/opt/bridge/bin/bridge"
			if err := os.Symlink(exe, filepath.Join(ws, "bridgelink")); err != nil {
				t.Fatal(err)
			}
			for _, req := range []rules.Request{
				{Tool: "Write", Input: map[string]any{"file_path": exe, "content": "#!/bin/sh\n"}},
				{Tool: "Edit", Input: map[string]any{"file_path": exe, "old_string": "a", "new_string": "b"}},
				{Tool: "Read", Input: map[string]any{"file_path": exe}},
				{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "bridgelink"), "content": "#!/bin/sh\n"}},
				{Tool: "Bash", Input: map[string]any{"command": "cat " + exe}},
				{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(f.home, ".ssh", "id_ed25519")}},
				{Tool: "Read", Input: map[string]any{"file_path": f.env}},
				{Tool: "Write", Input: map[string]any{"file_path": f.dir.ApprovalOffFlag(), "content": "x"}},
				{Tool: "Edit", Input: map[string]any{"file_path": filepath.Join(hd, "approval.json"), "old_string": "on", "new_string": "off"}},
				{Tool: "Bash", Input: map[string]any{"command": "cat " + filepath.Join(f.home, ".aws", "credentials")}},
			} {
				if v := rules.Classify(req, pol); v.Decision != rules.Deny {
					t.Errorf("%s %v: %s (%s), want deny", req.Tool, req.Input, v.Decision, v.Reason)
				}
			}

			// The MCP config launches this binary, with that file and nothing the job controls.
			mcp := readJSONFile(t, filepath.Join(hd, "mcp-config.json"))
			srv, _ := mcp["mcpServers"].(map[string]any)["bridge"].(map[string]any)
			if srv["command"] != "/opt/bridge/bin/bridge" || !slices.Equal(strs(srv["args"]), []string{"approval-prompt", "--config", filepath.Join(hd, "approval.json")}) {
				t.Errorf("mcp config %v", mcp)
			}
			if len(mcp["mcpServers"].(map[string]any)) != 1 {
				t.Errorf("more than one MCP server: %v", mcp)
			}

			// Settings: every tool asks; the sandbox hides the state dir, .env and credentials.
			st := readJSONFile(t, filepath.Join(hd, "settings.json"))
			perms, _ := st["permissions"].(map[string]any)
			for _, tool := range []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "WebSearch"} {
				if !slices.Contains(strs(perms["ask"]), tool) {
					t.Errorf("permissions.ask lacks %s: %v", tool, perms["ask"])
				}
			}
			sb, hasSandbox := st["sandbox"].(map[string]any)
			if hasSandbox != tc.sandbox {
				t.Fatalf("sandbox section present %v, want %v: %v", hasSandbox, tc.sandbox, st)
			}
			if tc.sandbox {
				fs, _ := sb["filesystem"].(map[string]any)
				deny := strs(fs["denyRead"])
				for _, p := range []string{f.dir.Root, f.env, filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".aws")} {
					if !slices.Contains(deny, p) {
						t.Errorf("denyRead lacks %s: %v", p, deny)
					}
				}
				if sb["enabled"] != true || sb["autoAllowBashIfSandboxed"] != false || sb["allowUnsandboxedCommands"] != false || sb["failIfUnavailable"] != true {
					t.Errorf("sandbox %v", sb)
				}
			}

			// The harness flags: the prompt tool, and nothing pre-allowed.
			args := harness.Args(spec)
			joined := strings.Join(args, " ")
			for _, want := range []string{
				"--permission-prompt-tool mcp__bridge__approve",
				"--settings " + filepath.Join(hd, "settings.json"),
				"--mcp-config " + filepath.Join(hd, "mcp-config.json"),
				"--permission-mode default",
			} {
				if !strings.Contains(joined, want) {
					t.Errorf("args lack %q: %s", want, joined)
				}
			}
			if slices.Contains(args, "--allowedTools") || strings.Contains(joined, "acceptEdits") {
				t.Errorf("something is pre-allowed: %s", joined)
			}
			for _, w := range tc.logWants {
				if !strings.Contains(f.log.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, f.log.String())
				}
			}
			// One line says where the preparation's time went, for the
			// spawn breakdown of make bench.
			stages := 0
			for line := range strings.SplitSeq(strings.TrimSpace(f.log.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) != nil || !strings.HasPrefix(fmt.Sprint(m["message"]), "harness files written") {
					continue
				}
				stages++
				for _, k := range []string{"secret_walk", "runs_later_scan", "config_files", "prepare"} {
					if v, ok := m[k].(float64); !ok || v < 0 || m["job"] != spec.JobID {
						t.Errorf("stage %s = %v (job %v), want a duration of job %s", k, m[k], m["job"], spec.JobID)
					}
				}
			}
			if stages != 1 {
				t.Errorf("%d \"harness files written\" lines, want 1:\n%s", stages, f.log.String())
			}
		})
	}
}

// The workspace's own secret files join the sandbox's denyRead and get a
// Read and an Edit deny rule for Claude Code's own file tools (templates such
// as .env.example do not); with the sandbox off only the deny rules remain.
// The log says how many, never what they hold.
func TestGuardPrepareHidesTheWorkspacesSecretFiles(t *testing.T) {
	const canary = "test-secret-0123456789abcdef"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		sandbox bool
	}{
		{name: "sandbox on", sandbox: true},
		{name: "approval off", env: map[string]string{"BRIDGE_CC_APPROVAL": "off"}, sandbox: true},
		{name: "sandbox off", env: map[string]string{"BRIDGE_SANDBOX": "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGuardFixture(t, tc.env, nil)
			ws := f.workspace(t)
			files := map[string]string{".env": "KEY=" + canary, "sub/.env.local": "KEY=" + canary, ".env.example": "KEY=", "main.go": "package main"}
			for rel, content := range files {
				p := filepath.Join(ws, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			spec := harness.Spec{JobID: "0123456789abcdef0123456789abcdef", Workspace: ws}
			if err := f.g.Prepare(t.Context(), &spec); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(spec.SettingsFile)
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Sandbox *struct {
					Filesystem struct {
						DenyRead []string `json:"denyRead"`
					} `json:"filesystem"`
				} `json:"sandbox"`
				Permissions struct {
					Deny []string `json:"deny"`
				} `json:"permissions"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			logText := f.log.String()
			if strings.Contains(logText, canary) || strings.Contains(string(raw), canary) {
				t.Errorf("a secret's contents reached the log or the settings")
			}
			secret := []string{filepath.Join(ws, ".env"), filepath.Join(ws, "sub", ".env.local")}
			readable := []string{filepath.Join(ws, ".env.example"), filepath.Join(ws, "main.go"), ws}
			wantRules := slices.Clone(sandbox.DeniedTools)
			for _, p := range secret {
				wantRules = append(wantRules, "Read(/"+p+")", "Edit(/"+p+")")
			}
			// The daemon's environment is in /proc: no file tool reads it.
			for _, d := range []string{"//proc", "//sys"} {
				wantRules = append(wantRules, "Read("+d+")", "Read("+d+"/**)", "Edit("+d+")", "Edit("+d+"/**)")
			}
			if !slices.Equal(st.Permissions.Deny, wantRules) {
				t.Errorf("permissions.deny %q, want %q", st.Permissions.Deny, wantRules)
			}
			if !strings.Contains(logText, `"secret_files":2`) || !strings.Contains(logText, "hidden from the job") {
				t.Errorf("the log does not count the secret files:\n%s", logText)
			}
			if !tc.sandbox {
				if st.Sandbox != nil {
					t.Errorf("sandbox off, yet settings %s", raw)
				}
				return
			}
			deny := st.Sandbox.Filesystem.DenyRead
			for _, p := range append(secret, f.dir.Root, f.env) {
				if !slices.Contains(deny, p) {
					t.Errorf("denyRead lacks %s: %v", p, deny)
				}
			}
			for _, p := range readable {
				if slices.Contains(deny, p) {
					t.Errorf("denyRead hides %s, which the job may read: %v", p, deny)
				}
			}
		})
	}
}

func TestGuardModesAndAdmission(t *testing.T) {
	hint := errors.New("OS sandbox unavailable: bubblewrap (bwrap) not found: install it with `sudo apt-get install bubblewrap socat`")
	for _, tc := range []struct {
		name       string
		env        map[string]string
		probeErr   error
		sandbox    SandboxMode
		approval   ApprovalMode
		probes     int
		admitError string // "" = the workspace is admitted
	}{
		{name: "on", sandbox: "on", approval: "on", probes: 1},
		{name: "bubblewrap missing", probeErr: hint, sandbox: "unavailable", approval: "on", probes: 1, admitError: "apt-get install bubblewrap"},
		{name: "sandbox off: no probe, jobs run", env: map[string]string{"BRIDGE_SANDBOX": "off"}, probeErr: hint, sandbox: "off", approval: "on"},
		{name: "approval off", env: map[string]string{"BRIDGE_CC_APPROVAL": "off"}, sandbox: "on", approval: "off", probes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGuardFixture(t, tc.env, tc.probeErr)
			if f.probe != tc.probes {
				t.Errorf("sandbox probed %d times, want %d", f.probe, tc.probes)
			}
			if got := f.g.SandboxMode(); got != tc.sandbox {
				t.Errorf("sandbox mode %q, want %q", got, tc.sandbox)
			}
			if got := f.g.ApprovalMode(); got != tc.approval {
				t.Errorf("approval mode %q, want %q", got, tc.approval)
			}
			ws := f.workspace(t)
			got, err := f.g.Admit(ws)
			switch {
			case tc.admitError == "" && (err != nil || got != ws):
				t.Errorf("admit = %q, %v", got, err)
			case tc.admitError != "" && (err == nil || !strings.Contains(err.Error(), tc.admitError)):
				t.Errorf("admit error %v, want one with %q", err, tc.admitError)
			}
		})
	}
}

func TestGuardAdmitRefusesWhatAJobMustNotReach(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	outside := t.TempDir()
	link := filepath.Join(f.root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"outside the roots", outside, "outside every allowed root"},
		{"symlink out", link, "through a symlink"},
		{"relative", "ws", "not an absolute path"},
		{"missing", filepath.Join(f.root, "nope"), "does not exist"},
		{"the root holding the env file", filepath.Dir(f.env), "outside every allowed root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.g.Admit(tc.dir)
			if err == nil || !errors.Is(err, sandbox.ErrWorkspace) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("admit(%s) = %v, want ErrWorkspace with %q", tc.dir, err, tc.want)
			}
		})
	}
	// A state dir inside a root: the root itself overlaps it and is refused.
	g2 := newGuardFixture(t, nil, nil)
	g2.g.roots = []string{filepath.Dir(g2.dir.Root)}
	if _, err := g2.g.Admit(filepath.Dir(g2.dir.Root)); err == nil || !strings.Contains(err.Error(), "overlaps") ||
		!strings.Contains(err.Error(), "BRIDGE_STATE_DIR") {
		t.Errorf("a workspace holding the state dir: %v", err)
	}
	// A workspace holding the bridge binary (the approval child) or the
	// Claude Code binary: a job could replace either, and the next job would
	// run the replacement outside the OS sandbox.
	for _, which := range []string{"bridge", "claude"} {
		t.Run("a workspace holding the "+which+" binary", func(t *testing.T) {
			g3 := newGuardFixture(t, nil, nil)
			proj := filepath.Join(g3.root, "bridge-src")
			bin := filepath.Join(proj, ".cache", "bin", which)
			if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if which == "bridge" {
				g3.g.exe = bin
			} else {
				g3.g.harnessBin = bin
			}
			what := map[string]string{"bridge": "the bridge binary", "claude": "the Claude Code binary"}[which]
			_, err := g3.g.Admit(proj)
			if err == nil || !errors.Is(err, sandbox.ErrWorkspace) || !strings.Contains(err.Error(), "overlaps") ||
				!strings.Contains(err.Error(), what) || strings.Contains(err.Error(), "state dir") {
				t.Errorf("admit(%s) = %v, want ErrWorkspace naming %s and no state dir", proj, err, what)
			}
			if _, err := g3.g.Admit(filepath.Join(g3.root)); err == nil {
				t.Errorf("admit(root holding %s) = nil, want refused", bin)
			}
		})
	}
}

// Without its own executable the daemon cannot launch the approval child:
// the job fails to prepare instead of running without one.
func TestGuardPrepareNeedsTheBridgeExecutable(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	f.g.exe = ""
	spec := harness.Spec{JobID: "0123456789abcdef0123456789abcdef", Workspace: f.workspace(t)}
	if err := f.g.Prepare(t.Context(), &spec); err == nil || !strings.Contains(err.Error(), "approval child") {
		t.Fatalf("prepare = %v", err)
	}
	if spec.PermissionPromptTool != "" || spec.SettingsFile != "" {
		t.Errorf("spec changed: %+v", spec)
	}
}

// The daemon clears the approval-off flag at every boot, and says so.
func TestGuardClearsTheApprovalOffFlagAtBoot(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	if err := approvals.SetApprovalOff(f.dir, "test"); err != nil {
		t.Fatal(err)
	}
	if f.g.ApprovalMode() != "off" {
		t.Fatalf("the flag does not turn approval off")
	}
	f.bootAgain(t)
	if _, err := os.Stat(f.dir.ApprovalOffFlag()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("flag still there after boot: %v", err)
	}
	if f.g.ApprovalMode() != "on" {
		t.Errorf("approval still off")
	}
}

// At boot the requests a previous run left are denied: nobody waits for them.
// (Pruning decided requests is approvals.Watch's.)
func TestGuardBootDeniesLeftovers(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	q := approvals.NewQueue(f.dir, zerolog.Nop())
	leftDecision := make(chan approvals.Decision, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req := rules.Request{Tool: "Bash", Input: map[string]any{"command": "rm -rf build"}}
	go func() { // owner: this test; ends with a decision or at cleanup
		d, _ := q.Submit(ctx, "old-job", req, rules.Classify(req, rules.Policy{Workspace: "/ws"}), time.Minute)
		leftDecision <- d
	}()
	if !poll.Until(10*time.Second, func() bool { ps, err := q.PendingForJob("old-job"); return err == nil && len(ps) > 0 }) {
		t.Fatal("the request never reached the queue")
	}
	f.bootAgain(t)
	select {
	case d := <-leftDecision:
		if d.Approved || d.Kind != approvals.KindCancel || !strings.Contains(d.Reason, "restarted") {
			t.Errorf("the leftover request: %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover request was not denied at boot")
	}
}

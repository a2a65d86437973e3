package guard

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// A runtime root is refused at start-up when it is missing, or would show
// a job the state dir, the .env, a credential store, an allowed root or the
// whole home; a toolchain dir under the home is fine.
func TestRuntimeRootsAreCheckedAtStart(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	for _, d := range []string{"home/.cargo", "home/.ssh", "roots/ws", "state", "daemon"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := filepath.Join(base, "daemon", ".env")
	if err := os.WriteFile(env, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		root, refused string // refused: a part of the error, "" = accepted
	}{
		{filepath.Join(home, ".cargo"), ""},
		{filepath.Join(base, "nowhere"), "no such file"},
		{env, "not a directory"},
		{base, "overlaps"},
		{filepath.Join(base, "state"), "overlaps"},
		{filepath.Join(base, "daemon"), "overlaps"},
		{filepath.Join(home, ".ssh"), "credential store"},
		{filepath.Join(home, ".ssh", "x"), "no such file"},
		{filepath.Join(base, "roots", "ws"), "overlaps"},
		{home, "holds the home directory"},
	} {
		cfg := configtest.New(t, map[string]string{
			"BRIDGE_STATE_DIR": filepath.Join(base, "state"), "DEEPSEEK_ALLOWED_ROOTS": filepath.Join(base, "roots"),
			"BRIDGE_RUNTIME_ROOTS": c.root,
		})
		cfg.EnvFile = env
		dir, err := statedir.Open(cfg.StateDir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(Options{Config: cfg, Dir: dir, Exe: "/bin/bridge", Home: home,
			SandboxAvailable: func() (string, error) { return "", nil }, Logger: zerolog.Nop()})
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s refused: %v", c.root, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "BRIDGE_RUNTIME_ROOTS")):
			t.Errorf("%s: err %v, want one naming BRIDGE_RUNTIME_ROOTS and %q", c.root, err, c.refused)
		}
	}
}

// With bubblewrap, Prepare starts the harness through the job's jail, which
// binds the harness files read-only over the read-write harness dir, and
// denies the workspace's existing runs-later paths to commands; Audit then
// moves aside what the job planted and writes it to the audit log.
func TestPrepareJailsAndAuditQuarantines(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	f.g.bwrap = "/usr/bin/bwrap"
	ws := filepath.Join(f.root, "ws")
	for rel, body := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".npmrc": "fund=false\n", "main.go": "package main\n"} {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := strings.Repeat("a", 32)
	spec := harness.Spec{JobID: id, Workspace: ws, ConfigDir: f.dir.HarnessDir(id)}
	if err := f.g.Prepare(context.Background(), &spec); err != nil {
		t.Fatal(err)
	}
	// bridge jail-proc -- bwrap … --
	if len(spec.Wrap) < 4 || spec.Wrap[1] != sandbox.ProcCommand || spec.Wrap[3] != "/usr/bin/bwrap" || spec.Wrap[len(spec.Wrap)-1] != "--" {
		t.Fatalf("wrap %q", spec.Wrap)
	}
	joined := strings.Join(spec.Wrap, " ")
	for _, want := range []string{
		"--bind-fd 3 " + ws, // the admitted dir itself, by descriptor
		"--bind " + spec.ConfigDir + " " + spec.ConfigDir,
		"--ro-bind " + spec.SettingsFile + " " + spec.SettingsFile,
		"--ro-bind " + filepath.Join(spec.ConfigDir, baselineFile) + " " + filepath.Join(spec.ConfigDir, baselineFile),
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the jail lacks %q: %s", want, joined)
		}
	}
	// Nothing of the state dir but the job's harness dir: the queue, the
	// audit log, the ledgers and the switches stay outside.
	for _, p := range []string{f.dir.Approvals(), f.dir.AuditLog(), f.dir.Switches(), f.dir.LedgerRoot()} {
		if strings.Contains(joined, p) {
			t.Errorf("the jail binds %s: %s", p, joined)
		}
	}
	if strings.Contains(joined, f.home) || strings.Contains(joined, f.env) || strings.Contains(joined, "--bind "+f.dir.Root+" ") {
		t.Errorf("the jail shows the home, the .env or the whole state dir: %s", joined)
	}
	if len(spec.WrapFiles) != 1 || spec.WrapFiles[0].Name() != ws {
		t.Errorf("the jail's descriptors %v, want the workspace's alone", spec.WrapFiles)
	}
	// The jail starts in the job's own PID namespace.
	if !spec.OwnPIDNamespace || spec.WrapAttr == nil {
		t.Errorf("the jail has no PID namespace of its own")
	}
	spec.CloseWrapFiles()
	settings, err := os.ReadFile(spec.SettingsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(ws, ".git", "config"), filepath.Join(ws, ".npmrc")} {
		if !strings.Contains(string(settings), `"`+p+`"`) {
			t.Errorf("denyWrite lacks %s: %s", p, settings)
		}
	}

	// The job rewrites a hook and builds a repository in a subfolder.
	if err := os.WriteFile(filepath.Join(ws, ".npmrc"), []byte("node-options=--require ./evil.js\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub", ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := f.g.Audit(context.Background(), id, ws)
	var moved []string
	for _, q := range res.Quarantined {
		moved = append(moved, q.Path+" → "+q.MovedTo)
	}
	want := []string{".npmrc → .npmrc.quarantined-" + id, "sub/.git → sub/.git.quarantined-" + id}
	if !slices.Equal(moved, want) || res.Note != "" {
		t.Fatalf("quarantined %q (note %q), want %q", moved, res.Note, want)
	}
	recs, err := approvals.ReadAudit(f.dir, true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event == EventQuarantine && r.JobID == id && strings.Contains(r.Reason, "put it back on purpose") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d quarantine records in the audit log, want 2: %+v", n, recs)
	}
	// A job that never reached its harness has nothing to audit.
	if res := f.g.Audit(context.Background(), strings.Repeat("b", 32), ws); len(res.Quarantined) != 0 || res.Note != "" {
		t.Errorf("audit without a start record: %+v", res)
	}
}

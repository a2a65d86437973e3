package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Defects a first walk-through as a new owner found, each pinned by a test.

// /dev/null is a character device but no terminal: `tunnel named HOST
// </dev/null` reads it as an empty pipe instead of claiming a terminal.
func TestNamedTunnelDevNullIsNoTerminal(t *testing.T) {
	te := newTestEnv(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var out, errb bytes.Buffer
	e := NewEnv(null, &out, &errb, te.environ)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code := Main(ctx, e, []string{"tunnel", "named", "bridge.example.com"})
	if code == 0 || strings.Contains(errb.String(), "is a terminal") || !strings.Contains(errb.String(), "no token on stdin and none stored") {
		t.Fatalf("tunnel named </dev/null: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
}

// A taken port names where PORT came from: the environment wins over the
// .env file, so "set PORT in .env" would not help there.
func TestTakenPortNamesWherePortCameFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	te := newTestEnv(t, "PORT="+port)
	_, errs, code := te.run("start")
	if code == 0 || !strings.Contains(errs, "PORT="+port+" comes from the environment: unset it") || strings.Contains(errs, "set PORT in") {
		t.Fatalf("PORT from the environment: exit %d\n%s", code, errs)
	}

	te = newTestEnv(t)
	te.dropEnvLine("PORT=")
	te.appendEnv("PORT=" + port)
	_, errs, code = te.run("start")
	if code == 0 || !strings.Contains(errs, "PORT="+port+" is set in "+te.envFile+": change it there") {
		t.Fatalf("PORT from the file: exit %d\n%s", code, errs)
	}
	if out, _, _ := te.run("doctor"); !strings.Contains(out, "PORT="+port+" is set in "+te.envFile) {
		t.Fatalf("doctor:\n%s", out)
	}
}

// `allow` on a .env copied from .env.example edits its commented
// DEEPSEEK_ALLOWED_ROOTS= line: one assignment, no stale example left.
func TestAllowEditsTheCommentedExample(t *testing.T) {
	te := newTestEnv(t)
	te.appendEnv("# roots a job's workspace must lie in", "# DEEPSEEK_ALLOWED_ROOTS=", "AFTER=stays last")
	root := t.TempDir()
	te.must("allow", root)
	b, err := os.ReadFile(te.envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if n := strings.Count(env, "DEEPSEEK_ALLOWED_ROOTS="); n != 1 {
		t.Fatalf("%d DEEPSEEK_ALLOWED_ROOTS= lines:\n%s", n, env)
	}
	if !strings.Contains(env, "# roots a job's workspace must lie in\nDEEPSEEK_ALLOWED_ROOTS="+root+"\nAFTER=stays last\n") {
		t.Fatalf("not edited in place:\n%s", env)
	}
}

// `logs` prints the daemon's JSON lines readably, as --foreground shows them;
// --json prints them as they are. Controls stay escaped either way.
func TestLogsReadableByDefault(t *testing.T) {
	te := newTestEnv(t)
	if err := os.MkdirAll(te.state, 0o700); err != nil {
		t.Fatal(err)
	}
	jsonLine := `{"level":"warn","job":"job-1","tool":"say \u001b[31mhi","time":"2026-12-02T03:00:00Z","message":"approval timed out"}`
	if err := os.WriteFile(filepath.Join(te.state, "bridge.log"), []byte("plain text line\n"+jsonLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := te.must("logs")
	if strings.Contains(out, `{"level"`) || !strings.Contains(out, "WRN approval timed out job=job-1") || !strings.Contains(out, "plain text line\n") {
		t.Errorf("logs is not readable:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `[31mhi`) {
		t.Errorf("a control reached the terminal:\n%q", out)
	}
	if raw := te.must("logs", "--json"); !strings.Contains(raw, jsonLine+"\n") {
		t.Errorf("logs --json:\n%s", raw)
	}
}

// A request's header names its job as waiting for approval: the snapshot on
// disk may still say running (it is written a moment later), but a job with
// a pending request is waiting by definition.
func TestPendingRequestShowsTheJobWaiting(t *testing.T) {
	te := newTestEnv(t)
	now := time.Now()
	job := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0123456789abcdef0123456789abcdef", Status: jobs.StatusRunning, Workspace: "/srv/ws", Task: "fix the build", CreatedAt: now}
	dir := te.writeJobs(job)
	r := approvals.PendingRequest{ID: "req-1", JobID: job.ID, Tool: "Bash", Input: map[string]any{"command": "make"}, Reason: "not allow-listed", Created: now, Expires: now.Add(time.Minute)}
	var b bytes.Buffer
	describeRequest(&b, dir, r, now, 4000)
	if !strings.Contains(b.String(), "job:     0123456789abcdef0123456789abcdef (waiting for approval, workspace /srv/ws)") || strings.Contains(b.String(), "running") {
		t.Fatalf("header:\n%s", b.String())
	}
	job.Status = jobs.StatusCancelled
	te.writeJobs(job)
	b.Reset()
	describeRequest(&b, dir, r, now, 4000)
	if !strings.Contains(b.String(), "(cancelled, workspace /srv/ws)") {
		t.Fatalf("an ended job:\n%s", b.String())
	}
}

// After rotate, the owner is told that URL registrations are now stale and
// given the commands that print them anew — which do carry the new secret.
func TestRotateRemindsToRegisterAgain(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	out := te.must("rotate")
	for _, want := range []string{"hosts registered with the old URL", "  bridgectl register claude --url --show\n", "  bridgectl register codex --url --show\n", "  bridgectl register cursor --url --show\n", "command form (`bridge stdio`) hold no secret"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(te.envFile)
	if err != nil {
		t.Fatal(err)
	}
	var secret string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MCP_PATH_SECRET="); ok {
			secret = v
		}
	}
	if secret == "" || secret == testSecret {
		t.Fatalf("no new secret in .env:\n%s", b)
	}
	if reg := te.must("register", "claude", "--url", "--show"); !strings.Contains(reg, "/mcp/"+secret) {
		t.Fatalf("the printed command does not register the new URL:\n%s", reg)
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The approval commands against a real queue: a goroutine calling
// Queue.Submit stands in for the approval child, and each test asserts the
// Decision that child got.

const (
	jobA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	jobB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

type submitted struct {
	d   approvals.Decision
	err error
}

// approvalWorld is a test env plus its state dir and a workspace for the rules.
type approvalWorld struct {
	*testEnv
	dir statedir.Dir
	ws  string
}

func newApprovalWorld(t *testing.T, extra ...string) *approvalWorld {
	t.Helper()
	te := newTestEnv(t, extra...)
	dir, err := statedir.Open(te.state)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(te.dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	return &approvalWorld{testEnv: te, dir: dir, ws: ws}
}

// submit classifies req with the real rules (it must need a human), queues it
// the way the approval child does, and returns the queued request and the
// channel that receives the child's Decision. The goroutine ends with the test.
func (w *approvalWorld) submit(t *testing.T, jobID string, req rules.Request, timeout time.Duration) (approvals.PendingRequest, <-chan submitted) {
	t.Helper()
	v := rules.Classify(req, rules.Policy{Workspace: w.ws, Allow: []string{"ls", "cat", "echo", "git"}, Protected: []string{w.dir.Root, w.envFile}})
	if v.Decision != rules.Ask {
		t.Fatalf("the rules say %s for %+v, want ask (%s)", v.Decision, req, v.Reason)
	}
	before := w.requestIDs(t)
	ch := make(chan submitted, 1)
	done := make(chan struct{})
	q := approvals.NewQueue(w.dir, zerolog.Nop())
	go func() {
		defer close(done)
		d, err := q.Submit(t.Context(), jobID, req, v, timeout)
		ch <- submitted{d, err}
	}()
	t.Cleanup(func() { <-done }) // t.Context is cancelled first, so Submit returns
	var pr approvals.PendingRequest
	waitUntil(t, "the request is queued", func() bool {
		for id := range w.requestIDs(t) {
			if !before[id] {
				if err := statedir.ReadJSON(filepath.Join(w.dir.Approvals(), id+".request.json"), &pr); err == nil {
					return true
				}
			}
		}
		return false
	})
	return pr, ch
}

// requestIDs lists every request file, decided and expired ones included.
func (w *approvalWorld) requestIDs(t *testing.T) map[string]bool {
	ents, err := os.ReadDir(w.dir.Approvals())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".request.json"); ok && !strings.HasPrefix(id, ".") {
			ids[id] = true
		}
	}
	return ids
}

// waitUntil polls cond (a condition, not a fixed sleep) for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(20*time.Second, cond) {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// decision waits for the stand-in approval child's answer.
func decision(t *testing.T, ch <-chan submitted) approvals.Decision {
	t.Helper()
	select {
	case s := <-ch:
		if s.err != nil {
			t.Fatalf("Submit: %v", s.err)
		}
		return s.d
	case <-time.After(20 * time.Second):
		t.Fatal("the approval child got no decision")
	}
	return approvals.Decision{}
}

// noDecision asserts the child is still waiting.
func noDecision(t *testing.T, ch <-chan submitted) {
	t.Helper()
	select {
	case s := <-ch:
		t.Fatalf("the request was decided, but must still wait: %+v %v", s.d, s.err)
	default:
	}
}

func bash(cmd string) rules.Request {
	return rules.Request{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "a test command"}}
}

func TestPendingApproveDeny(t *testing.T) {
	w := newApprovalWorld(t)
	if out := w.must("pending"); out != "no pending approval requests\n" {
		t.Fatalf("pending on an empty queue: %q", out)
	}
	if out := w.must("pending", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("pending --json on an empty queue: %q", out)
	}

	r1, ch1 := w.submit(t, jobA, bash("ls; rm -rf build"), time.Minute)
	r2, ch2 := w.submit(t, jobB, rules.Request{Tool: "Read", Input: map[string]any{"file_path": "/etc/hosts"}}, time.Minute)
	r3, ch3 := w.submit(t, jobA, rules.Request{Tool: "WebFetch", Input: map[string]any{"url": "https://example.com/x", "prompt": "summarise"}}, time.Minute)

	out, errs, code := w.run("pending")
	if code != 0 {
		t.Fatalf("pending: exit %d %s", code, errs)
	}
	for _, want := range []string{
		"request: " + r1.ID, "job:     " + jobA, "tool:    Bash", "command: ls; rm -rf build", "why:     " + r1.Reason,
		"request: " + r2.ID, "job:     " + jobB, "tool:    Read", "path:    /etc/hosts", "why:     " + r2.Reason,
		"request: " + r3.ID, "tool:    WebFetch", "url:     https://example.com/x", "prompt:  summarise", "why:     " + r3.Reason,
		"also:    {\"description\":\"a test command\"}",
		"expires: in ", "then denied automatically",
		"bridgectl approve " + r1.ID, "bridgectl deny " + r2.ID,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pending lacks %q:\n%s", want, out)
		}
	}
	if i1, i2 := strings.Index(out, r1.ID), strings.Index(out, r2.ID); i1 > i2 {
		t.Errorf("pending is not oldest first:\n%s", out)
	}
	var listed []approvals.PendingRequest
	if err := json.Unmarshal([]byte(w.must("pending", "--json")), &listed); err != nil || len(listed) != 3 || listed[0].ID != r1.ID || listed[1].Input["file_path"] != "/etc/hosts" {
		t.Fatalf("pending --json: %v %+v", err, listed)
	}

	// approve by full id, with a note for the audit log.
	out = w.must("approve", r1.ID, "--reason", "fine this once")
	if !strings.Contains(out, "approved "+r1.ID+": job "+jobA+", Bash: ls; rm -rf build") {
		t.Fatalf("approve: %q", out)
	}
	d := decision(t, ch1)
	if !d.Approved || d.Kind != approvals.KindHuman || d.Reason != "fine this once" || !strings.Contains(d.By, "bridgectl approve") {
		t.Fatalf("approved decision = %+v", d)
	}
	noDecision(t, ch2)

	// deny by a unique prefix, with a reason that reaches the model.
	out = w.must("deny", r2.ID[:10], "--reason", "stay inside the workspace")
	if !strings.Contains(out, "denied "+r2.ID) || !strings.Contains(out, "the model is told: stay inside the workspace") {
		t.Fatalf("deny: %q", out)
	}
	d = decision(t, ch2)
	if d.Approved || d.Kind != approvals.KindHuman || d.Reason != "stay inside the workspace" || !strings.Contains(d.By, "bridgectl deny") {
		t.Fatalf("denied decision = %+v", d)
	}
	if m := d.Message(); !strings.Contains(m, "Denied by the owner: stay inside the workspace") || !strings.Contains(m, "Do not try to work around") {
		t.Fatalf("the model's message: %q", m)
	}

	// deny without a reason still denies.
	w.must("deny", r3.ID)
	if d := decision(t, ch3); d.Approved || d.Kind != approvals.KindHuman {
		t.Fatalf("deny without reason = %+v", d)
	}

	unknown := strings.Repeat("f", 32)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"already approved", []string{"approve", r1.ID}, 1, "already decided"},
		{"already denied", []string{"deny", r2.ID}, 1, "cannot be changed"},
		{"deny after approve", []string{"deny", r1.ID, "--reason", "changed my mind"}, 1, "was approved by bridgectl approve"},
		{"unknown id", []string{"approve", unknown}, 1, "no approval request \"" + unknown + "\" is waiting"},
		{"unknown id names pending", []string{"deny", unknown}, 1, "`bridgectl pending` lists the open ones"},
		{"not an id", []string{"approve", "../../etc/passwd"}, 2, "is not an approval request id: give the 32 hex characters `bridgectl pending` shows"},
		{"prefix of nothing", []string{"approve", "0123456789"}, 1, "`bridgectl pending`"},
		{"no id", []string{"approve"}, 2, "approve needs one request ID"},
		{"two ids", []string{"deny", r1.ID, r2.ID}, 2, "deny needs one request ID"},
		{"watch with id", []string{"approve", "--watch", r1.ID}, 2, "takes no ID"},
		{"pending with args", []string{"pending", "x"}, 2, "takes no arguments"},
		{"bad flag", []string{"deny", "--bogus"}, 2, "bridgectl deny --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := w.run(tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Fatalf("bridgectl %v: exit %d (want %d)\nstdout: %s\nstderr: %s", tt.args, code, tt.code, out, errs)
			}
		})
	}
	if out := w.must("pending"); out != "no pending approval requests\n" {
		t.Fatalf("pending after answers: %q", out)
	}
}

func TestApprovePrefixAmbiguous(t *testing.T) {
	w := newApprovalWorld(t)
	// Ids are random; find two that share a prefix by queueing until two do,
	// is slow, so check resolveID directly with real-looking requests.
	reqs := []approvals.PendingRequest{{ID: "abcdef0011111111111111111111111a"}, {ID: "abcdef0022222222222222222222222b"}}
	if _, err := resolveID("abcdef00", reqs); err == nil || !strings.Contains(err.Error(), "2 pending requests start with") {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	if r, err := resolveID("abcdef001", reqs); err != nil || r.ID != reqs[0].ID {
		t.Fatalf("unique prefix: %v %+v", err, r)
	}
	if r, err := resolveID("abcdef0", reqs); !errors.As(err, new(usageError)) || r.ID != "" {
		t.Fatalf("a prefix under 8 characters must not match, as a usage error: %v %+v", err, r)
	}
	// And through the command: a 7-character prefix of a real request is a
	// usage error (exit 2), as for `bridgectl jobs`.
	r, ch := w.submit(t, jobA, bash("make install"), time.Minute)
	if _, errs, code := w.run("approve", r.ID[:7]); code != 2 || !strings.Contains(errs, "8 or more") || !strings.Contains(errs, "bridgectl pending") {
		t.Fatalf("short prefix: exit %d %q", code, errs)
	}
	noDecision(t, ch)
}

func TestApproveExpired(t *testing.T) {
	w := newApprovalWorld(t)
	r, ch := w.submit(t, jobA, bash("curl example.com"), 50*time.Millisecond)
	d := decision(t, ch)
	if d.Approved || d.Kind != approvals.KindTimeout || !strings.Contains(d.Message(), "no answer") {
		t.Fatalf("timeout decision = %+v", d)
	}
	_, errs, code := w.run("approve", r.ID)
	if code != 1 || !strings.Contains(errs, "expired") || !strings.Contains(errs, "denied automatically") {
		t.Fatalf("approve expired: exit %d %q", code, errs)
	}
	if out := w.must("pending"); !strings.Contains(out, "no pending") {
		t.Fatalf("an expired request is not pending: %q", out)
	}
	out := w.must("audit")
	if !strings.Contains(out, "timeout") || !strings.Contains(out, "req "+short(r.ID)) {
		t.Fatalf("audit lacks the timeout:\n%s", out)
	}
	if strings.Contains(out, "human        req") {
		t.Fatalf("the refused approve must not be in the audit log as a decision:\n%s", out)
	}
}

func TestAudit(t *testing.T) {
	w := newApprovalWorld(t)
	if out := w.must("audit"); !strings.Contains(out, "the audit log is empty") {
		t.Fatalf("audit on no log: %q", out)
	}
	r1, ch1 := w.submit(t, jobA, bash("git push origin main"), time.Minute)
	r2, ch2 := w.submit(t, jobB, bash("npm install left-pad"), time.Minute)
	w.must("approve", r1.ID, "--reason", "release day")
	w.must("deny", r2.ID, "--reason", "no new dependencies")
	decision(t, ch1)
	decision(t, ch2)

	out := w.must("audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("audit: want 5 lines (2 pending, 2 human, the approval child's applied):\n%s", out)
	}
	for _, want := range []string{
		"pending      req " + short(r1.ID) + " job " + short(jobA) + " rules: ask — Bash: git push origin main",
		"human        req " + short(r1.ID) + " job " + short(jobA) + " ALLOW by bridgectl approve",
		"(release day)",
		"human        req " + short(r2.ID) + " job " + short(jobB) + " DENY by bridgectl deny",
		"— Bash: npm install left-pad (no new dependencies)",
		"applied      req " + short(r1.ID) + " job " + short(jobA) + " ALLOW by bridgectl approve",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	var recs []approvals.AuditRecord
	if err := json.Unmarshal([]byte(w.must("audit", "--json")), &recs); err != nil || len(recs) != 5 {
		t.Fatalf("audit --json: %v %d", err, len(recs))
	}
	if recs[2].Event != approvals.EventHuman || recs[2].Decision != rules.Allow || recs[2].ID != r1.ID || recs[3].Reason != "no new dependencies" {
		t.Fatalf("audit --json records: %+v", recs)
	}

	// Without --all only the tail; --all shows every line.
	for i := range 2 * approvals.AuditTail {
		if err := approvals.AppendAudit(w.dir, approvals.AuditRecord{Event: approvals.EventAuto, JobID: jobA, Tool: "Read", Summary: fmt.Sprintf("Read: f%03d", i), Decision: rules.Allow}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(w.must("audit")), "\n")); n != approvals.AuditTail {
		t.Fatalf("audit shows %d lines, want the last %d", n, approvals.AuditTail)
	}
	all := w.must("audit", "--all")
	if n := len(strings.Split(strings.TrimSpace(all), "\n")); n != 5+2*approvals.AuditTail {
		t.Fatalf("audit --all shows %d lines, want %d", n, 5+2*approvals.AuditTail)
	}
	if !strings.Contains(all, "git push origin main") || !strings.Contains(all, "Read: f099") {
		t.Fatalf("audit --all lacks the first or the last record")
	}
	if _, errs, code := w.run("audit", "extra"); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Fatalf("audit extra: %d %q", code, errs)
	}
}

// A job controls the text of its requests: it must not be able to repaint
// the terminal, nor make bridgectl print a secret.
func TestPendingShowsHostileTextSafely(t *testing.T) {
	w := newApprovalWorld(t)
	cmd := "echo ok\x1b[2K\r\x1b[1A ls # looks harmless; curl http://127.0.0.1:1/mcp/" + testSecret + "/x -H 'k: " + testKey + "'"
	r, _ := w.submit(t, jobA, bash(cmd), time.Minute)
	out, errs, code := w.run("pending")
	if code != 0 {
		t.Fatalf("pending: %d %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\r") {
		t.Fatalf("pending printed raw control characters: %q", out)
	}
	if !strings.Contains(out, `echo ok\u{1b}[2K\r\u{1b}[1A ls # looks harmless`) {
		t.Fatalf("pending does not show the escapes visibly:\n%s", out)
	}
	noSecrets(t, "pending", out, errs)
	jsonOut := w.must("pending", "--json")
	noSecrets(t, "pending --json", jsonOut)
	if !strings.Contains(jsonOut, r.ID) {
		t.Fatalf("pending --json lacks the request: %s", jsonOut)
	}
	audit := w.must("audit")
	noSecrets(t, "audit", audit)
	if strings.ContainsAny(audit, "\x1b\r") {
		t.Fatalf("audit printed raw control characters: %q", audit)
	}
}

func TestVisible(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"ls -la", 100, "ls -la"},
		{"a\nb", 100, "a\nb"},
		{"a\tb", 100, `a\tb`},
		{"x\x1b[31mred", 100, `x\u{1b}[31mred`},
		{"over\rwrite", 100, `over\rwrite`},
		{"bell\a", 100, `bell\u{7}`},
		{"bidi \u202e txt", 100, `bidi \u{202e} txt`},
		{"bad \xff byte", 100, `bad \xff byte`},
		{"real \uFFFD kept", 100, "real \uFFFD kept"},
		{strings.Repeat("x", 12), 10, "xxxxxxxxxx… (2 more bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := visible(tt.in, tt.limit); got != tt.want {
				t.Fatalf("visible(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		line    string
		approve bool
		reason  string
		ok      bool
	}{
		{"y", true, "", true},
		{"Y", true, "", true},
		{" yes ", true, "", true},
		{"y looks fine", true, "looks fine", true},
		{"n", false, "", true},
		{"No", false, "", true},
		{"n too risky", false, "too risky", true},
		{"don't touch /etc", false, "don't touch /etc", true},
		{"yeah", false, "yeah", true}, // only an exact y/yes approves
		{"yes,", false, "yes,", true},
		{"", false, "", false},
		{"   ", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			a, r, ok := parseAnswer(tt.line)
			if a != tt.approve || r != tt.reason || ok != tt.ok {
				t.Fatalf("parseAnswer(%q) = %v %q %v, want %v %q %v", tt.line, a, r, ok, tt.approve, tt.reason, tt.ok)
			}
		})
	}
}

func TestApprovalOnOff(t *testing.T) {
	w := newApprovalWorld(t)
	if out := w.must("approval"); !strings.HasPrefix(out, "human approval is on") {
		t.Fatalf("approval: %q", out)
	}
	out, errs, code := w.run("approval", "off")
	if code != 0 || !strings.Contains(out, "HUMAN APPROVAL IS OFF") || !strings.Contains(out, "daemon's next start, which clears it") ||
		!strings.Contains(out, "OS sandbox still applies") || !strings.Contains(errs, "WARNING: human approval is OFF") {
		t.Fatalf("approval off: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "the daemon is not running, and its next start clears this flag") {
		t.Fatalf("approval off without a daemon must say the flag will not survive its start: %q", errs)
	}
	fi, err := os.Stat(w.dir.ApprovalOffFlag())
	if err != nil || fi.Mode().Perm() != 0o600 || !approvals.ApprovalOff(w.dir) {
		t.Fatalf("flag file: %v %v", err, fi)
	}
	if b, _ := os.ReadFile(w.dir.ApprovalOffFlag()); !bytes.Contains(b, []byte("bridgectl approval off")) {
		t.Fatalf("flag does not say who set it: %s", b)
	}
	if out := w.must("approval"); !strings.Contains(out, "human approval is OFF") || !strings.Contains(out, w.dir.ApprovalOffFlag()) {
		t.Fatalf("approval while off: %q", out)
	}
	if _, errs, _ := w.run("pending"); !strings.Contains(errs, "WARNING: human approval is OFF") {
		t.Fatalf("pending does not warn while approval is off: %q", errs)
	}
	if out := w.must("status"); !strings.Contains(out, "OFF") {
		t.Fatalf("status does not show approval off:\n%s", out)
	}
	if out := w.must("approval", "on"); !strings.Contains(out, "human approval is on again") {
		t.Fatalf("approval on: %q", out)
	}
	if approvals.ApprovalOff(w.dir) {
		t.Fatal("the flag is still there after approval on")
	}
	if out := w.must("approval", "on"); !strings.Contains(out, "was not set") {
		t.Fatalf("approval on twice: %q", out)
	}
	// With the daemon running, the flag applies at once.
	w.must("start")
	pid := strings.TrimSpace(w.readFile("bridge.pid"))
	out, errs, code = w.run("approval", "off")
	if code != 0 || !strings.Contains(out, "The running daemon (pid "+pid+") applies it from the next tool call on") || strings.Contains(errs, "not running") {
		t.Fatalf("approval off with a daemon: exit %d\n%s%s", code, out, errs)
	}
	// The daemon's daemon.json records the mode it booted with; status must
	// not let that hide a flag set since.
	if out := w.must("status"); !strings.Contains(out, "OFF (approval-off flag") {
		t.Fatalf("status with a running daemon hides the approval-off flag:\n%s", out)
	}
	w.must("approval", "on")
	if _, errs, code := w.run("approval", "maybe"); code != 2 || !strings.Contains(errs, "approval [on|off]") {
		t.Fatalf("approval maybe: %d %q", code, errs)
	}

	// BRIDGE_CC_APPROVAL=off is stronger than the flag, and said so.
	w2 := newApprovalWorld(t, "BRIDGE_CC_APPROVAL=off")
	if out := w2.must("approval"); !strings.Contains(out, "OFF (BRIDGE_CC_APPROVAL=off)") {
		t.Fatalf("approval with the env off: %q", out)
	}
	// approval on cannot turn it on: exit 1, and it says what does.
	if _, errs, code := w2.run("approval", "on"); code != 1 || !strings.Contains(errs, "still OFF") || !strings.Contains(errs, "BRIDGE_CC_APPROVAL=off is set in the environment") {
		t.Fatalf("approval on with the env off: %d %q", code, errs)
	}
}

func TestApprovalCommandsHelp(t *testing.T) {
	te := newTestEnv(t)
	for _, c := range []string{"pending", "approve", "deny", "audit", "approval"} {
		out, errs, code := te.run(c, "--help")
		if code != 0 || !strings.HasPrefix(out, "usage: bridgectl "+c) || errs != "" {
			t.Errorf("%s --help: exit %d\n%s%s", c, code, out, errs)
		}
	}
	if out := te.must("approve", "--help"); !strings.Contains(out, "approve ID [--reason R] | approve --watch") {
		t.Fatalf("approve --help lacks its usage:\n%s", out)
	}
	if out := te.must("help"); !strings.Contains(out, "\n  approve ") || !strings.Contains(out, "\n  approval ") {
		t.Fatalf("help lacks the approval commands:\n%s", out)
	}
}

// `approval` reports the running daemon's mode (daemon.json's boot
// mode and the flag), not the config on disk, and says when they differ.
func TestApprovalReportsTheDaemonsMode(t *testing.T) {
	w := newApprovalWorld(t)
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	w.must("start")
	w.dropEnvLine("BRIDGE_CC_APPROVAL=")

	out := w.must("approval")
	for _, want := range []string{"human approval is OFF", "started with BRIDGE_CC_APPROVAL=off", "`bridgectl restart`"} {
		if !strings.Contains(out, want) {
			t.Errorf("approval lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "human approval is on") {
		t.Errorf("approval reports the config on disk, not the daemon:\n%s", out)
	}
	out, errs, code := w.run("approval", "on")
	if code != 1 {
		t.Fatalf("approval on while the daemon booted off: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"not what turns it off", "BRIDGE_CC_APPROVAL=off", "`bridgectl restart`", "still OFF"} {
		if !strings.Contains(errs, want) {
			t.Errorf("approval on lacks %q:\n%s", want, errs)
		}
	}

	// Config back to off, daemon restarted with it: nothing differs, no note.
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	w.must("restart")
	if out := w.must("approval"); strings.Contains(out, "restart") || !strings.Contains(out, "human approval is OFF") {
		t.Errorf("approval with the daemon and the config agreeing:\n%s", out)
	}

	// The other way round: the daemon booted on, the config now says off.
	w.dropEnvLine("BRIDGE_CC_APPROVAL=")
	w.must("restart")
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	out = w.must("approval")
	if !strings.HasPrefix(out, "human approval is on") || !strings.Contains(out, "`bridgectl restart` would turn it OFF") {
		t.Errorf("approval with the config now off:\n%s", out)
	}
	// The flag still turns a daemon that booted on off, and on again.
	w.must("approval", "off")
	if !approvals.ApprovalOff(w.dir) || !strings.Contains(w.must("approval"), "human approval is OFF (approval-off flag") {
		t.Errorf("approval after approval off:\n%s", w.must("approval"))
	}
}

// A prefix of an already decided request says what happened to it,
// as the full id does, not "unknown approval id".
func TestApprovePrefixOfDecidedRequest(t *testing.T) {
	w := newApprovalWorld(t)
	r, ch := w.submit(t, jobA, bash("make install"), time.Minute)
	w.must("approve", r.ID)
	decision(t, ch)
	for _, cmd := range []string{"approve", "deny"} {
		for _, id := range []string{r.ID, r.ID[:8]} {
			_, errs, code := w.run(cmd, id)
			if code != 1 || !strings.Contains(errs, "already decided") || !strings.Contains(errs, "approved by") || strings.Contains(errs, "unknown approval id") {
				t.Errorf("%s %s of a decided request: exit %d %q", cmd, id, code, errs)
			}
		}
	}
	// A prefix nothing has: unknown, and where to look.
	if _, errs, code := w.run("approve", "0123456789"); code != 1 || !strings.Contains(errs, "bridgectl pending") {
		t.Errorf("approve of an unknown prefix: exit %d %q", code, errs)
	}
}

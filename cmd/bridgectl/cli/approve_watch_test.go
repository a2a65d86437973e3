package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// watchRun is `bridgectl approve --watch` running in-process.
type watchRun struct {
	in     *io.PipeWriter
	out    *syncbuf.Buffer
	errb   *syncbuf.Buffer
	cancel context.CancelFunc
	code   chan int
}

func startWatch(t *testing.T, w *approvalWorld) *watchRun {
	t.Helper()
	pr, pw := io.Pipe()
	wr := &watchRun{in: pw, out: &syncbuf.Buffer{}, errb: &syncbuf.Buffer{}, code: make(chan int, 1)}
	e := NewEnv(pr, wr.out, wr.errb, w.environ)
	ctx, cancel := context.WithCancel(t.Context())
	wr.cancel = cancel
	go func() { wr.code <- Main(ctx, e, []string{"approve", "--watch", "--interval", "20ms"}) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		<-wr.code
	})
	waitUntil(t, "the watcher starts", func() bool { return strings.Contains(wr.out.String(), "watching ") })
	return wr
}

func (wr *watchRun) waitOut(t *testing.T, what string) {
	t.Helper()
	if !poll.Until(20*time.Second, func() bool { return strings.Contains(wr.out.String(), what) }) {
		t.Fatalf("the watcher never printed %q; it printed:\n%s\nstderr:\n%s", what, wr.out.String(), wr.errb.String())
	}
}

func (wr *watchRun) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(wr.in, line+"\n"); err != nil {
		t.Fatalf("type %q: %v", line, err)
	}
}

func (wr *watchRun) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case c := <-wr.code:
		wr.code <- c // for the cleanup
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher did not stop")
	}
	return -1
}

func TestApproveWatch(t *testing.T) {
	w := newApprovalWorld(t)
	snap := jobs.Snapshot{Version: 1, ID: jobA, Status: jobs.StatusWaitingApproval, Task: "tidy the build directory",
		Workspace: w.ws, CreatedAt: time.Now().UTC(), MaxSteps: 10}
	if err := statedir.WriteJSON(w.dir.JobFile(jobA), snap); err != nil {
		t.Fatal(err)
	}
	wr := startWatch(t, w)

	// A new request is shown in full, with the bell; "y" approves it.
	r1, ch1 := w.submit(t, jobA, bash("ls; rm -rf build"), time.Minute)
	wr.waitOut(t, "request: "+r1.ID)
	wr.waitOut(t, "approve "+short(r1.ID)+"? ")
	out := wr.out.String()
	for _, want := range []string{"\a=== approval needed ===", "job:     " + jobA + " (waiting for approval, workspace " + w.ws + ") task: tidy the build directory",
		"tool:    Bash", "command: ls; rm -rf build", "why:     " + r1.Reason, "expires: in "} {
		if !strings.Contains(out, want) {
			t.Errorf("the watcher's request lacks %q:\n%s", want, out)
		}
	}
	wr.typeLine(t, "y")
	if d := decision(t, ch1); !d.Approved || d.Kind != approvals.KindHuman || !strings.Contains(d.By, "bridgectl approve --watch") {
		t.Fatalf("y gave %+v", d)
	}
	wr.waitOut(t, "approved "+short(r1.ID))

	// Two at once: one at a time, oldest first, the count of the rest shown.
	r2, ch2 := w.submit(t, jobA, bash("npm install left-pad"), time.Minute)
	r3, ch3 := w.submit(t, jobB, rules.Request{Tool: "Read", Input: map[string]any{"file_path": "/etc/shadow"}}, time.Minute)
	wr.waitOut(t, "request: "+r2.ID)
	wr.waitOut(t, "approve "+short(r2.ID)+"? ")
	if strings.Contains(wr.out.String(), "request: "+r3.ID) {
		t.Fatalf("the second request is shown before the first is answered:\n%s", wr.out.String())
	}
	wr.typeLine(t, "n no new dependencies")
	if d := decision(t, ch2); d.Approved || d.Reason != "no new dependencies" || !strings.Contains(d.Message(), "Denied by the owner: no new dependencies") {
		t.Fatalf("n REASON gave %+v", d)
	}
	wr.waitOut(t, "request: "+r3.ID)
	wr.waitOut(t, "path:    /etc/shadow")
	wr.typeLine(t, "") // an empty line decides nothing
	wr.typeLine(t, "stay out of /etc, please")
	if d := decision(t, ch3); d.Approved || d.Reason != "stay out of /etc, please" {
		t.Fatalf("a free-text answer gave %+v", d)
	}
	wr.waitOut(t, "denied "+short(r3.ID)+": stay out of /etc, please")
	if n := strings.Count(wr.out.String(), "approve "+short(r3.ID)+"? "); n != 2 {
		t.Errorf("the empty line should ask again once: %d prompts", n)
	}

	// Answered elsewhere while shown: the watcher says so and by whom.
	r4, ch4 := w.submit(t, jobA, bash("git push"), time.Minute)
	wr.waitOut(t, "approve "+short(r4.ID)+"? ")
	w.must("deny", r4.ID, "--reason", "from the other terminal")
	if d := decision(t, ch4); d.Approved || !strings.Contains(d.By, "bridgectl deny") {
		t.Fatalf("deny elsewhere gave %+v", d)
	}
	wr.waitOut(t, "request "+short(r4.ID)+" was DENIED elsewhere, by bridgectl deny: from the other terminal")

	// Expiring while shown: the watcher says it was denied, the child got a timeout.
	r5, ch5 := w.submit(t, jobA, bash("curl example.com"), 2*time.Second)
	wr.waitOut(t, "request: "+r5.ID)
	if d := decision(t, ch5); d.Approved || d.Kind != approvals.KindTimeout {
		t.Fatalf("expiry gave %+v", d)
	}
	wr.waitOut(t, "request "+short(r5.ID)+" EXPIRED: no answer in time, so it was denied automatically")

	// A line while nothing is shown is not kept for the next request.
	wr.typeLine(t, "y")
	wr.waitOut(t, "no request is shown")
	r6, ch6 := w.submit(t, jobA, bash("make deploy"), time.Minute)
	wr.waitOut(t, "approve "+short(r6.ID)+"? ")
	noDecision(t, ch6)

	// End of input stops cleanly; the shown request stays pending.
	wr.in.Close()
	if c := wr.exitCode(t); c != 0 {
		t.Fatalf("exit %d after end of input", c)
	}
	wr.waitOut(t, "stopped watching (end of input); 1 request(s) still pending")
	noDecision(t, ch6)
	if out := w.must("pending"); !strings.Contains(out, r6.ID) {
		t.Fatalf("r6 should still be pending:\n%s", out)
	}
	noSecrets(t, "approve --watch", wr.out.String(), wr.errb.String())
}

func TestApproveWatchInterrupt(t *testing.T) {
	w := newApprovalWorld(t)
	wr := startWatch(t, w)
	wr.cancel() // what Ctrl-C does through main's signal context
	if c := wr.exitCode(t); c != 0 {
		t.Fatalf("exit %d after interrupt", c)
	}
	wr.waitOut(t, "stopped watching (interrupted); 0 request(s) still pending")
}

// When little time is left, the watcher rings again and says how much.
func TestApproveWatchLastCall(t *testing.T) {
	w := newApprovalWorld(t)
	wr := startWatch(t, w)
	r, ch := w.submit(t, jobA, bash("make release"), lastCall+1500*time.Millisecond)
	wr.waitOut(t, "approve "+short(r.ID)+"? ")
	wr.waitOut(t, "left for request "+short(r.ID)+" — then it is denied automatically")
	out := wr.out.String()
	i := strings.Index(out, "left for request "+short(r.ID))
	if line := out[strings.LastIndex(out[:i], "\n")+1 : i]; !strings.HasPrefix(line, "\a") || !strings.Contains(line, "s ") {
		t.Fatalf("the last call has no bell or no time: %q", line)
	}
	waitUntil(t, "the prompt is repeated after the last call", func() bool {
		return strings.Count(wr.out.String(), "approve "+short(r.ID)+"? ") == 2
	})
	wr.typeLine(t, "y")
	if d := decision(t, ch); !d.Approved {
		t.Fatalf("y after the last call gave %+v", d)
	}
}

// An answer typed as the shown request changed under the user (the previous
// one ended elsewhere) was meant for the previous one: it is not applied.
func TestApproveWatchStaleAnswer(t *testing.T) {
	w := newApprovalWorld(t)
	pr, pw := io.Pipe()
	out := &syncbuf.Buffer{}
	e := NewEnv(pr, out, io.Discard, w.environ)
	e.cmd = approveCmd
	f := newFlags(e, false)
	if _, err := f.parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := f.load()
	if err != nil {
		t.Fatal(err)
	}
	wt := newWatcher(e, c, 20*time.Millisecond)
	wt.grace = time.Hour // every answer after a switch is "too soon"
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- wt.run(ctx) }()
	t.Cleanup(func() { cancel(); pw.Close(); <-done })
	wr := &watchRun{in: pw, out: out, errb: &syncbuf.Buffer{}}

	r1, ch1 := w.submit(t, jobA, bash("git push"), time.Minute)
	wr.waitOut(t, "approve "+short(r1.ID)+"? ")
	r2, ch2 := w.submit(t, jobA, bash("git push --force"), time.Minute)
	w.must("deny", r1.ID, "--reason", "elsewhere")
	decision(t, ch1)
	wr.waitOut(t, "approve "+short(r2.ID)+"? ")
	wr.typeLine(t, "y")
	wr.waitOut(t, "that answer came just as the request changed, so it was not applied")
	noDecision(t, ch2)
	w.must("deny", r2.ID)
	decision(t, ch2)
}

// builtBridgectl is the real bridgectl binary, built once per test process.
func builtBridgectl(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "./cmd/bridgectl")
}

// ptyWatch is the real bridgectl binary running `approve --watch` on a
// pseudo-terminal, as in a second terminal window.
type ptyWatch struct {
	cmd    *exec.Cmd
	tty    *os.File
	out    *syncbuf.Buffer
	copied chan struct{}
}

func startPtyWatch(t *testing.T, w *approvalWorld) *ptyWatch {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals on Windows")
	}
	cmd := exec.Command(builtBridgectl(t), "approve", "--watch", "--interval", "50ms")
	cmd.Env = append(append([]string(nil), w.environ...), "TERM=xterm", "USER=tester")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("start on a pty: %v", err)
	}
	pw := &ptyWatch{cmd: cmd, tty: tty, out: &syncbuf.Buffer{}, copied: make(chan struct{})}
	go func() {
		defer close(pw.copied)
		io.Copy(pw.out, tty) // ends with EIO once the process and its terminal are gone
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		tty.Close()
		<-pw.copied
	})
	pw.waitOut(t, "watching ")
	return pw
}

func (pw *ptyWatch) waitOut(t *testing.T, what string) {
	t.Helper()
	if !poll.Until(30*time.Second, func() bool { return strings.Contains(pw.out.String(), what) }) {
		t.Fatalf("bridgectl on the pty never printed %q; it printed:\n%q", what, pw.out.String())
	}
}

// keys types on the terminal, as a person would.
func (pw *ptyWatch) keys(t *testing.T, s string) {
	t.Helper()
	if _, err := pw.tty.WriteString(s); err != nil {
		t.Fatalf("type %q: %v", s, err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (pw *ptyWatch) wait(t *testing.T) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- pw.cmd.Wait() }()
	select {
	case <-exited:
		return pw.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		pw.cmd.Process.Kill()
		<-exited
		t.Fatalf("bridgectl did not exit; it printed:\n%q", pw.out.String())
	}
	return -1
}

// `bridgectl approve --watch` driven from a second terminal: the real binary
// runs on a pty; requests come from Submit, as the approval child makes them.
func TestApproveWatchOnTerminal(t *testing.T) {
	w := newApprovalWorld(t)
	pw := startPtyWatch(t, w)

	r1, ch1 := w.submit(t, jobA, bash("ls && rm -rf build"), time.Minute)
	pw.waitOut(t, "request: "+r1.ID)
	pw.waitOut(t, "approve "+short(r1.ID)+"? ")
	out := pw.out.String()
	if !strings.Contains(out, "\a=== approval needed ===") {
		t.Fatalf("no bell with the request:\n%q", out)
	}
	for _, want := range []string{"job:     " + jobA, "tool:    Bash", "command: ls && rm -rf build", "why:     " + r1.Reason, "expires: in "} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out)
		}
	}
	pw.keys(t, "y\r") // Enter on a terminal is CR; the line discipline makes it a newline
	if d := decision(t, ch1); !d.Approved || d.Kind != approvals.KindHuman || !strings.Contains(d.By, "tester@") {
		t.Fatalf("y on the terminal gave %+v", d)
	}
	pw.waitOut(t, "approved "+short(r1.ID))

	r2, ch2 := w.submit(t, jobB, rules.Request{Tool: "WebFetch", Input: map[string]any{"url": "https://example.com/"}}, time.Minute)
	pw.waitOut(t, "approve "+short(r2.ID)+"? ")
	if n := strings.Count(pw.out.String(), "\a=== approval needed"); n != 2 {
		t.Fatalf("the bell rang %d times for 2 requests", n)
	}
	pw.keys(t, "n no network for this job\r")
	d := decision(t, ch2)
	if d.Approved || d.Reason != "no network for this job" || !strings.Contains(d.Message(), "Denied by the owner: no network for this job") {
		t.Fatalf("n REASON on the terminal gave %+v", d)
	}
	pw.waitOut(t, "denied "+short(r2.ID)+": no network for this job")

	// Ctrl-C stops it cleanly: exit 0, a last line, the process gone.
	r3, ch3 := w.submit(t, jobA, bash("make deploy"), time.Minute)
	pw.waitOut(t, "approve "+short(r3.ID)+"? ")
	pw.keys(t, "\x03")
	if code := pw.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-C:\n%q", code, pw.out.String())
	}
	<-pw.copied // the copy ends by itself once the terminal has no process left
	if !strings.Contains(pw.out.String(), "stopped watching (interrupted); 1 request(s) still pending") {
		t.Fatalf("no clean stop after Ctrl-C:\n%q", pw.out.String())
	}
	noDecision(t, ch3)
	noSecrets(t, "approve --watch on a terminal", pw.out.String())

	// Ctrl-D (end of input) stops it too.
	pw2 := startPtyWatch(t, w)
	pw2.waitOut(t, "approve "+short(r3.ID)+"? ")
	pw2.keys(t, "\x04")
	if code := pw2.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
	pw2.waitOut(t, "stopped watching (end of input)")
	noDecision(t, ch3)
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("r", 3*maxAnswer)
	in := "y\n\n" + long + "\nn after the long one\r\nlast without newline"
	lines := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(lines)
		readLines(strings.NewReader(in), lines, done)
	}()
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	want := []string{"y", "", long[:maxAnswer], "n after the long one", "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %.40q, want %.40q", i, got[i], want[i])
		}
	}
}

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A harness that answers the interrupt (as Claude Code does: a result, then
// an exit once its input ends) is never signalled: Stop writes the control
// request and the result line arrives.
func TestStopInterruptsFirst(t *testing.T) {
	body := "echo '" + initLine + "'\n" +
		"while IFS= read -r line; do\n" +
		"  case \"$line\" in *'\"subtype\":\"interrupt\"'*) printf '%s\\n' \"$line\" > interrupt.txt; echo '" + strings.Replace(resultLine, `"success"`, `"error_during_execution"`, 1) + "';; esac\n" +
		"done\nexit 0"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}, InterruptGrace: time.Minute}
	spec := testSpec(t, "job-interrupt-first")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-r.Events(); ev.Kind != KindInit {
		t.Fatalf("first event %v", ev.Kind)
	}
	r.Stop()
	evs, exit := collect(t, r, 20*time.Second)
	if len(evs) != 1 || evs[0].Kind != KindResult || evs[0].Result.Subtype != "error_during_execution" {
		t.Errorf("events after the stop = %+v, want the interrupted turn's result", evs)
	}
	if !exit.Stopped || exit.Signal != "" || exit.Code != 0 {
		t.Errorf("exit = %+v, want stopped without a signal", exit)
	}
	b, _ := os.ReadFile(filepath.Join(spec.Workspace, "interrupt.txt"))
	if !strings.Contains(string(b), `"type":"control_request"`) {
		t.Errorf("interrupt line = %q", b)
	}
	assertTreeGone(t, spec.JobID)
}

// A harness that ignores the interrupt is signalled once the interrupt
// grace has passed.
func TestStopSignalsAfterTheInterruptGrace(t *testing.T) {
	c := &ClaudeCode{Bin: fakeClaude(t, "echo '"+initLine+"'\nsleep 300"), Environ: []string{"PATH=" + os.Getenv("PATH")},
		InterruptGrace: 200 * time.Millisecond, StopGrace: 300 * time.Millisecond}
	spec := testSpec(t, "job-interrupt-ignored")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-r.Events()
	r.Stop()
	_, exit := collect(t, r, 20*time.Second)
	if !exit.Stopped || exit.Signal == "" {
		t.Errorf("exit = %+v, want stopped by a signal", exit)
	}
	assertTreeGone(t, spec.JobID)
}

// Input stays open until the result of the last message sent: a message
// sent before the first result gets its own turn; after the last result
// Send says the input is closed.
func TestSendKeepsInputOpenUntilTheLastTurn(t *testing.T) {
	script := "echo '" + initLine + "'\n" +
		// the task was read by fakeClaude; answer it only after the follow-up arrived
		"IFS= read -r line\nprintf '%s\\n' \"$line\" > messages.txt\n" +
		"echo '" + resultLine + "'\necho '" + resultLine + "'\n" +
		"while IFS= read -r more; do :; done\nexit 0"
	c := &ClaudeCode{Bin: fakeClaude(t, script), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-send")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-r.Events()
	m := r.(Messenger)
	if err := m.Send("and then this"); err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 20*time.Second)
	results := 0
	for _, ev := range evs {
		if ev.Kind == KindResult {
			results++
		}
	}
	if results != 2 || exit.Stopped || exit.Code != 0 {
		t.Errorf("%d results, exit %+v: the run should end on its own after the second", results, exit)
	}
	if b, _ := os.ReadFile(filepath.Join(spec.Workspace, "messages.txt")); !strings.Contains(string(b), `"content":"and then this"`) {
		t.Errorf("the message on stdin = %q", b)
	}
	if err := m.Send("too late"); err != ErrInputClosed {
		t.Errorf("send after the last turn: %v", err)
	}
}

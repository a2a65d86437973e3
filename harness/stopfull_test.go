package harness

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A harness that stops reading its input (Claude Code stopped by a
// Bash command of its own agent, `kill -STOP $PPID`, or merely busy) while a
// large message fills the pipe: Stop must still end the run, and return at
// once (the registry calls Stop under its lock). The interrupt is written by
// a goroutine of its own; the interrupt grace's signals end the process.
func TestStopEndsARunWhoseInputIsFull(t *testing.T) {
	c := &ClaudeCode{Bin: fakeClaude(t, "echo '"+initLine+"'\nsleep 300"), Environ: []string{"PATH=" + os.Getenv("PATH")},
		InterruptGrace: 200 * time.Millisecond, StopGrace: 300 * time.Millisecond}
	spec := testSpec(t, "job-review-full-pipe")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-r.Events()
	sent := make(chan error, 1)
	go func() { sent <- r.(Messenger).Send(strings.Repeat("x", 200<<10)) }() // < maxTaskBytes (256 KiB), > the 64 KiB pipe
	rr := r.(*run)
	for rr.writeMu.TryLock() { // until the message's write holds the pipe
		rr.writeMu.Unlock()
		runtime.Gosched()
	}
	stopped := make(chan struct{})
	go func() { r.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		syscall.Kill(-r.PID(), syscall.SIGKILL) // leave no process behind
		t.Fatal("Stop did not return within 15 s: it waits on the full input pipe (in the registry: under r.mu)")
	}
	_, exit := collect(t, r, 20*time.Second)
	if !exit.Stopped {
		t.Errorf("exit = %+v", exit)
	}
	<-sent
	assertTreeGone(t, spec.JobID)
}

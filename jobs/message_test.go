package jobs

import (
	"errors"
	"strings"
	"testing"
)

// A message needs a mode and text, and reaches only a running job: an ended
// one is refused pointing to continue, an unknown one as unknown.
func TestMessageRefusals(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("one")
	e.succeed(e.nextRun(), s.ID)
	if _, err := e.r.Message(s.ID, "more", MessageFollowUp); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "deepseek_agent_continue") {
		t.Errorf("ended job: %v", err)
	}
	if _, err := e.r.Message(s.ID, "more", "shout"); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "steer or follow_up") {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := e.r.Message(s.ID, "  ", MessageSteer); !errors.Is(err, ErrBadInput) {
		t.Errorf("empty message: %v", err)
	}
	if _, err := e.r.Message(strings.Repeat("0", 32), "more", MessageSteer); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
}

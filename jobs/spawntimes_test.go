package jobs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// diskCheckHarness reads the job's snapshot from disk at the moment the
// registry spawns its harness, then starts the fake.
type diskCheckHarness struct {
	*fakeHarness
	dir  statedir.Dir
	seen chan string // the status on disk, or the error reading it
}

func (h *diskCheckHarness) Start(ctx context.Context, spec harness.Spec) (harness.Run, error) {
	s, err := Load(h.dir, spec.JobID)
	if err != nil {
		h.seen <- "not on disk: " + err.Error()
	} else {
		h.seen <- string(s.Status)
	}
	return h.fakeHarness.Start(ctx, spec)
}

// TestHarnessSpawnsAfterTheRecordAndLogsItsStages: the runner gets the
// job's token and harness files while Start's record of the job goes to
// disk, but no harness is spawned before that record is there — for a job
// started at once and for one that waited in the queue — and every spawn is
// logged with where its time went.
func TestHarnessSpawnsAfterTheRecordAndLogsItsStages(t *testing.T) {
	var log syncbuf.Buffer
	seen := make(chan string, 4)
	e := newEnv(t, func(o *Options) {
		l := zerolog.New(&log)
		o.Logger = &l
		o.MaxConcurrent = 1
		o.Harness = &diskCheckHarness{fakeHarness: o.Harness.(*fakeHarness), dir: o.Dir, seen: seen}
	})
	first := e.start("first")
	second := e.start("second (queued)")
	if second.Status != StatusQueued {
		t.Fatalf("second job is %s, want queued", second.Status)
	}
	for _, id := range []string{first.ID, second.ID} {
		run := e.nextRun()
		if got := <-seen; got != string(StatusRunning) {
			t.Fatalf("job %s: at its spawn the disk said %q, want running", id, got)
		}
		e.succeed(run, id)
	}

	lines := map[string]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if msg, _ := m["message"].(string); strings.HasPrefix(msg, SpawnedMessage) {
			lines[m["job"].(string)] = m
		}
	}
	for _, id := range []string{first.ID, second.ID} {
		m, ok := lines[id]
		if !ok {
			t.Fatalf("no \"harness spawned\" line for job %s:\n%s", id, log.String())
		}
		for _, f := range []string{"admission", "record", "token", "prepare", "record_wait", "spawn", "accepted_to_spawned"} {
			if v, ok := m[f].(float64); !ok || v < 0 {
				t.Errorf("job %s: stage %s = %v, want a duration in ms", id, f, m[f])
			}
		}
	}
}

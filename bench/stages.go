package bench

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// SpawnStages is where one job's start went, from the bridge's own log:
// the registry's "job started" line (jobs.SpawnedMessage) and the guard's "harness files
// written" line of the same job.
type SpawnStages struct {
	Admission, Record, Token, Prepare, Spawn time.Duration // the registry's stages (record runs beside token and prepare)
	RecordWait                               time.Duration // what the spawn still waited for the record after prepare
	SecretWalk, RunsLater, ApprovalConfig    time.Duration // inside Prepare, side by side
	StartRecord                              time.Duration // inside Prepare, after the secret walk: the change record's manifest and copies
	AcceptedToSpawned                        time.Duration // Registry.Start called → harness spawned
	Spawned                                  time.Time     // when the harness was spawned (wall clock)
	Sent, Running                            time.Time     // deepseek_agent_start sent; the stand-in running (the bench's own clocks)
	haveJobs, haveGuard                      bool
}

// complete: both lines were seen.
func (s SpawnStages) complete() bool { return s.haveJobs && s.haveGuard }

// stageLog collects SpawnStages by job id from the bridge's log lines.
type stageLog struct {
	mu     sync.Mutex
	byJob  map[string]SpawnStages
	change chan struct{} // closed and replaced on every line taken
}

func newStageLog() *stageLog {
	return &stageLog{byJob: map[string]SpawnStages{}, change: make(chan struct{})}
}

// take reads one log line; lines other than the two above are ignored.
// zerolog writes durations as float milliseconds.
func (l *stageLog) take(line []byte) {
	var rec struct {
		Message, Job                             string
		Admission, Record, Token, Prepare, Spawn float64
		AcceptedToSpawned                        float64 `json:"accepted_to_spawned"`
		RecordWait                               float64 `json:"record_wait"`
		SpawnedUnixNS                            int64   `json:"spawned_unix_ns"`
		SecretWalk                               float64 `json:"secret_walk"`
		RunsLaterScan                            float64 `json:"runs_later_scan"`
		ApprovalConfig                           float64 `json:"config_files"`
		StartRecord                              float64 `json:"start_record"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Job == "" {
		return
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.byJob[rec.Job]
	switch {
	case strings.HasPrefix(rec.Message, jobs.SpawnedMessage):
		s.Admission, s.Record, s.Token, s.Prepare, s.Spawn = ms(rec.Admission), ms(rec.Record), ms(rec.Token), ms(rec.Prepare), ms(rec.Spawn)
		s.AcceptedToSpawned, s.RecordWait, s.haveJobs = ms(rec.AcceptedToSpawned), ms(rec.RecordWait), true
		s.Spawned = time.Unix(0, rec.SpawnedUnixNS)
	case len(rec.Message) > 21 && rec.Message[:21] == "harness files written":
		s.SecretWalk, s.RunsLater, s.ApprovalConfig, s.haveGuard = ms(rec.SecretWalk), ms(rec.RunsLaterScan), ms(rec.ApprovalConfig), true
		s.StartRecord = ms(rec.StartRecord)
	default:
		return
	}
	l.byJob[rec.Job] = s
	close(l.change)
	l.change = make(chan struct{})
}

// get returns the stages of each job in ids, in order, waiting up to wait
// for their log lines to arrive; a job whose lines never came is incomplete.
func (l *stageLog) get(ids []string, wait time.Duration) []SpawnStages {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		out, n := make([]SpawnStages, len(ids)), 0
		for i, id := range ids {
			if out[i] = l.byJob[id]; out[i].complete() {
				n++
			}
		}
		change := l.change
		l.mu.Unlock()
		if n == len(ids) {
			return out
		}
		select {
		case <-change:
		case <-deadline.C:
			return out
		}
	}
}

// timedJob is one job the bench started: its id, when deepseek_agent_start
// was sent and when the stand-in ran.
type timedJob struct {
	id            string
	sent, running time.Time
}

// stagesOf joins the bridge's account of each job with the bench's own
// times, leaving out the jobs whose log lines never came.
func (l *stageLog) stagesOf(jobs []timedJob, wait time.Duration) []SpawnStages {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	var out []SpawnStages
	for i, s := range l.get(ids, wait) {
		if s.complete() {
			s.Sent, s.Running = jobs[i].sent, jobs[i].running
			out = append(out, s)
		}
	}
	return out
}

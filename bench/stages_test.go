package bench

import (
	"testing"
	"time"
)

// TestStageLogJoinsTheTwoLines: a job's stages come from the registry's
// "job started" line and the guard's "harness files written" line; a job
// with only one of them is left out, and other lines are ignored.
func TestStageLogJoinsTheTwoLines(t *testing.T) {
	l := newStageLog()
	for _, line := range []string{
		`{"level":"info","component":"jobs","job":"a1","spawned_unix_ns":1700000000000000000,"admission":0.12,"record":5.5,"token":0.04,"prepare":2.5,"record_wait":1.25,"spawn":3,"accepted_to_spawned":10.5,"message":"job started: its harness is running (pid 7), 10.5ms after it was accepted"}`,
		`{"level":"info","component":"guard","job":"a1","secret_walk":0.2,"start_record":0.7,"runs_later_scan":0.5,"config_files":0.9,"prepare":2.4,"message":"harness files written (the walks beside the config files and the jail)"}`,
		`{"level":"info","component":"guard","job":"b2","secret_walk":1,"message":"harness files written (the walks beside the config files and the jail)"}`,
		`{"level":"info","job":"a1","message":"job accepted"}`,
		`not json`,
	} {
		l.take([]byte(line))
	}
	sent := time.Unix(0, 1700000000000000000).Add(-20 * time.Millisecond)
	got := l.stagesOf([]timedJob{{id: "a1", sent: sent, running: sent.Add(40 * time.Millisecond)}, {id: "b2"}}, 10*time.Millisecond)
	if len(got) != 1 {
		t.Fatalf("%d jobs with stages, want 1 (b2 has no registry line)", len(got))
	}
	s := got[0]
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	want := SpawnStages{
		Admission: ms(0.12), Record: ms(5.5), Token: ms(0.04), Prepare: ms(2.5), RecordWait: ms(1.25), Spawn: ms(3),
		AcceptedToSpawned: ms(10.5), SecretWalk: ms(0.2), RunsLater: ms(0.5), ApprovalConfig: ms(0.9), StartRecord: ms(0.7),
	}
	if s.Admission != want.Admission || s.Record != want.Record || s.Token != want.Token || s.Prepare != want.Prepare ||
		s.RecordWait != want.RecordWait || s.Spawn != want.Spawn || s.AcceptedToSpawned != want.AcceptedToSpawned ||
		s.SecretWalk != want.SecretWalk || s.RunsLater != want.RunsLater || s.ApprovalConfig != want.ApprovalConfig ||
		s.StartRecord != want.StartRecord {
		t.Fatalf("stages %+v, want %+v", s, want)
	}
	if d := s.Spawned.Sub(s.Sent); d != 20*time.Millisecond {
		t.Errorf("sent → spawned %s, want 20ms", d)
	}
	if d := s.Running.Sub(s.Spawned); d != 20*time.Millisecond {
		t.Errorf("spawned → running %s, want 20ms", d)
	}
}

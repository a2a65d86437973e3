package jobs

import (
	"fmt"
	"time"
)

// spawnTimes is where the time went between a job's Start and its harness
// running. It is logged once the harness is spawned (SpawnedMessage), so an
// owner — and `make bench`, which reads the line — can tell a slow disk from a
// big workspace from a slow fork. The guard logs its own stages inside
// prepare ("harness files written").
type spawnTimes struct {
	accepted   time.Time     // Start was called
	admission  time.Duration // the request and workspace checks
	record     time.Duration // the job's first snapshot, on disk (fsync), while token and prepare run
	token      time.Duration // the model gateway's token for the job
	prepare    time.Duration // the guard's walks and the harness files
	recordWait time.Duration // how long the spawn still waited for the record
	spawn      time.Duration // fork and exec of the harness
}

// SpawnedMessage begins the line logged when a job's harness starts.
const SpawnedMessage = "job started: its harness is running"

// logSpawn logs that j's harness runs as pid, with j's spawnTimes;
// accepted → spawned includes any wait in the queue.
func (r *Registry) logSpawn(j *job, pid int) {
	r.mu.Lock() // Start sets record under it, and a queued job may already run
	st := j.spawnTimes
	r.mu.Unlock()
	// spawned_unix_ns lets a reader on the same machine (make bench) split
	// the wall time around the spawn: request → accepted, and spawned → the
	// harness's own first instruction (the jail's set-up, exec, start-up).
	took := time.Since(st.accepted)
	r.log.Info().Str("job", j.id).Int("pid", pid).Int64("spawned_unix_ns", time.Now().UnixNano()).
		Dur("admission", st.admission).Dur("record", st.record).Dur("token", st.token).
		Dur("prepare", st.prepare).Dur("record_wait", st.recordWait).Dur("spawn", st.spawn).Dur("accepted_to_spawned", took).
		Msg(SpawnedMessage + fmt.Sprintf(" (pid %d), %s after it was accepted", pid, took.Round(100*time.Microsecond)))
}

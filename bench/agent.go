package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// agentPayload is the part of the agent tools' structuredContent the bench reads.
type agentPayload struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"`
	Nonce  string `json:"nonce"`
	Error  string `json:"error"`
}

func agentCall(ctx context.Context, c *Client, tool string, args map[string]any) (agentPayload, error) {
	var p agentPayload
	res, err := c.CallTool(ctx, tool, args)
	if err != nil {
		return p, err
	}
	if res.IsError {
		return p, fmt.Errorf("%s answered an error: %.300s", tool, res.Text)
	}
	if err := json.Unmarshal(res.Structured, &p); err != nil {
		return p, fmt.Errorf("%s: structuredContent: %w", tool, err)
	}
	return p, nil
}

func readStart(dir, id string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(dir, "standin-"+id+".start"))
	if err != nil {
		return time.Time{}, fmt.Errorf("the stand-in harness left no start time for job %s (did the bridge run it? BRIDGE_CLAUDE_BIN): %w", id, err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// spawn times deepseek_agent_start → stand-in running, and the same for a
// bare exec of the stand-in (the floor: fork, exec and Go start-up).
func (r *runner) spawn(ctx context.Context) error {
	step(r.o, "agent start → harness spawn: %d jobs, then %d bare execs of the stand-in", r.o.SpawnSamples, r.o.SpawnSamples)
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, 1, tr)
	if err != nil {
		return err
	}
	lat, done, jobs, err := r.timeJobs(ctx, cs[0], r.ws, r.o.SpawnSamples)
	if err != nil {
		return err
	}
	r.rep.Spawn, r.rep.SpawnDone = sorted(lat), sorted(done)
	r.rep.Stages = r.b.stages.stagesOf(jobs, 2*time.Second)
	// The same in a workspace of 5,000 files: the guard walks it at every
	// start, for its secret files and for what runs later.
	big, err := bigWorkspace(filepath.Dir(r.ws), 5000)
	if err != nil {
		return err
	}
	step(r.o, "agent start → harness spawn in a workspace of 5,000 files: %d jobs", r.o.SpawnSamples)
	if lat, _, jobs, err = r.timeJobs(ctx, cs[0], big, r.o.SpawnSamples); err != nil {
		return err
	}
	r.rep.Spawn5000 = sorted(lat)
	r.rep.Stages5000 = r.b.stages.stagesOf(jobs, 2*time.Second)

	if r.rep.SpawnFloor, err = r.execStandin(ctx, "floor", nil); err != nil {
		return err
	}
	// The same inside a bubblewrap of its own, as small as bubblewrap
	// allows for it (the system read-only, the workspace writable, its own
	// PID namespace as a job's jail has): what bubblewrap's start costs by
	// itself, so the table can tell it from the bridge's own.
	if bwrap, err := exec.LookPath("bwrap"); err == nil && !r.rep.SandboxOff {
		jail := []string{bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", r.ws, r.ws,
			"--unshare-pid", "--die-with-parent", "--chdir", r.ws, "--"}
		if r.rep.SpawnBwrapFloor, err = r.execStandin(ctx, "bwrap", jail); err != nil {
			return err
		}
	}
	return nil
}

// execStandin execs the stand-in SpawnSamples times, after prefix (a
// command it runs under), and returns each exec → stand-in running.
func (r *runner) execStandin(ctx context.Context, name string, prefix []string) (Latencies, error) {
	var lat []time.Duration
	task, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "bench: spawn"}})
	argv := append(append([]string(nil), prefix...), r.o.HarnessBin, "-p", "--output-format", "stream-json")
	for i := range r.o.SpawnSamples {
		id := fmt.Sprintf("%s-%d", name, i)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = r.ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "BRIDGE_JOB_ID=" + id}
		cmd.Stdin = strings.NewReader(string(task) + "\n")
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("stand-in (%s): %w: %s", name, err, out)
		}
		t1, err := readStart(r.ws, id)
		if err != nil {
			return nil, err
		}
		lat = append(lat, t1.Sub(t0))
	}
	return sorted(lat), nil
}

// timeJobs starts n stand-in jobs in ws, one after the other,
// and returns each one's deepseek_agent_start → stand-in running and → the
// job seen done (the stand-in ends at once, mostly within the start call's
// sync window; else a long-poll follows), with the jobs.
func (r *runner) timeJobs(ctx context.Context, cs *Client, ws string, n int) (running, done []time.Duration, jobs []timedJob, err error) {
	for range n {
		t0 := time.Now()
		p, err := agentCall(ctx, cs, "deepseek_agent_start", map[string]any{"task": "bench: spawn", "workspace": ws})
		// On a loaded machine the job may outlast the start call's sync
		// window: then it is polled to its end.
		for tries := 0; err == nil && (p.Status == "running" || p.Status == "queued") && tries < 10; tries++ {
			p, err = agentCall(ctx, cs, "deepseek_agent_poll", map[string]any{"job_id": p.JobID, "wait_seconds": 5})
		}
		answered := time.Since(t0)
		if err != nil {
			return nil, nil, nil, err
		}
		if p.Status != "done" || p.Nonce == "" {
			return nil, nil, nil, fmt.Errorf("stand-in job %s in %s ended %s (%s), want done with a nonce", p.JobID, ws, p.Status, p.Error)
		}
		t1, err := readStart(ws, p.JobID)
		if err != nil {
			return nil, nil, nil, err
		}
		running, done = append(running, t1.Sub(t0)), append(done, answered)
		jobs = append(jobs, timedJob{id: p.JobID, sent: t0, running: t1})
		r.rep.JobsStarted++
		if r.finishedJob == "" {
			r.finishedJob = p.JobID
		}
	}
	return running, done, jobs, nil
}

// bigWorkspace makes root/ws5000 with n small source files in 280
// directories, a git repository's hooks and config, and an .npmrc.
func bigWorkspace(root string, n int) (string, error) {
	ws := filepath.Join(root, fmt.Sprintf("ws%d", n))
	files := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\tbare = false\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n", ".npmrc": "fund=false\n"}
	for i := range n {
		files[fmt.Sprintf("pkg%02d/sub%02d/file%04d.go", i%40, i%7, i)] = "package x\n"
	}
	for _, d := range []string{".git/objects", ".git/refs"} {
		files[d+"/.keep"] = ""
	}
	for rel, body := range files {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return ws, nil
}

func sorted(l []time.Duration) Latencies {
	out := append(Latencies(nil), l...)
	slices.Sort(out)
	return out
}

// poll times deepseek_agent_poll on a finished job, one client, serially.
func (r *runner) poll(ctx context.Context) error {
	step(r.o, "agent poll of a finished job: %d polls, one client", r.o.PollSamples)
	if r.finishedJob == "" {
		return errors.New("no finished job to poll")
	}
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, 1, tr)
	if err != nil {
		return err
	}
	args := map[string]any{"job_id": r.finishedJob, "wait_seconds": 0}
	for range 100 { // warm-up
		if _, err := agentCall(ctx, cs[0], "deepseek_agent_poll", args); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, 0, r.o.PollSamples)
	for range r.o.PollSamples {
		t0 := time.Now()
		p, err := agentCall(ctx, cs[0], "deepseek_agent_poll", args)
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if p.Status != "done" {
			return fmt.Errorf("poll of finished job %s: status %s", r.finishedJob, p.Status)
		}
		lat = append(lat, d)
	}
	r.rep.Poll = sorted(lat)
	return nil
}

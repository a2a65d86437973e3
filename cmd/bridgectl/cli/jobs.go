package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var jobsCmd = &Command{
	Name:  "jobs",
	Usage: "jobs [ID] [--trace] [--json]",
	Short: "list agent jobs, or show one (with its live trace)",
	Long: `Reads the job snapshots in <state>/jobs/ (the daemon need not run). Without ID:
one line per job, newest first. With ID: the job's details; --trace adds its
trace (written while the job runs, so a live job shows its progress). --json
prints the snapshot(s) as stored.`,
	Run: runJobs,
}

// jobSnap is the part of a job snapshot (<state>/jobs/<id>.json, docs/STATE.md)
// that bridgectl shows; Raw keeps the whole record for --json.
type jobSnap struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	Task       string          `json:"task"`
	Workspace  string          `json:"workspace"`
	CreatedAt  string          `json:"created_at"`
	FinishedAt string          `json:"finished_at"`
	Steps      int             `json:"steps"`
	CostUSD    float64         `json:"cost_usd"`
	Result     string          `json:"result"`
	Error      string          `json:"error"`
	Trace      json.RawMessage `json:"trace"`
	Raw        json.RawMessage `json:"-"`
}

func (s jobSnap) finished() bool {
	switch s.Status {
	case "done", "error", "cancelled", "interrupted":
		return true
	}
	return false
}

func decodeJob(b []byte) (jobSnap, error) {
	var s jobSnap
	if err := json.Unmarshal(b, &s); err != nil {
		return s, err
	}
	if s.ID == "" {
		var alt struct {
			JobID string `json:"job_id"`
		}
		json.Unmarshal(b, &alt)
		s.ID = alt.JobID
	}
	s.Raw = append(json.RawMessage(nil), b...)
	return s, nil
}

// loadJobs reads every snapshot, newest first. Unreadable files are skipped.
func loadJobs(dir statedir.Dir) ([]jobSnap, error) {
	files, err := filepath.Glob(filepath.Join(dir.Jobs(), "*.json"))
	if err != nil {
		return nil, err
	}
	var out []jobSnap
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s, err := decodeJob(b)
		if err != nil || s.ID == "" {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt > out[j].CreatedAt })
	return out, nil
}

func loadJob(dir statedir.Dir, id string) (jobSnap, error) {
	if id == "" || strings.ContainsAny(id, `/\.`) {
		return jobSnap{}, fmt.Errorf("%q is not a job id (see `bridgectl jobs`)", id)
	}
	b, err := os.ReadFile(dir.JobFile(id))
	if errors.Is(err, os.ErrNotExist) {
		return jobSnap{}, fmt.Errorf("no job %s in %s (finished jobs are swept after BRIDGE_RESULT_TTL_MS): see `bridgectl jobs`", id, dir.Jobs())
	}
	if err != nil {
		return jobSnap{}, err
	}
	s, err := decodeJob(b)
	if err != nil {
		return jobSnap{}, fmt.Errorf("job %s: snapshot is not valid JSON: %w", id, err)
	}
	return s, nil
}

func runJobs(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	trace := f.Bool("trace", false, "show the job's trace (with ID)")
	asJSON := f.Bool("json", false, "print the stored snapshot(s) as JSON")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"jobs takes at most one job ID"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	w := e.Stdout
	if len(pos) == 1 {
		s, err := loadJob(c.dir, pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(s.Raw)))
			return nil
		}
		fmt.Fprintf(w, "job:        %s\nstatus:     %s\nsteps:      %d\n", s.ID, s.Status, s.Steps)
		fmt.Fprintf(w, "workspace:  %s\ncreated:    %s\n", s.Workspace, s.CreatedAt)
		if s.FinishedAt != "" {
			fmt.Fprintf(w, "finished:   %s\n", s.FinishedAt)
		}
		if s.CostUSD > 0 {
			fmt.Fprintf(w, "cost:       $%.4f\n", s.CostUSD)
		}
		fmt.Fprintf(w, "task:       %s\n", truncate(s.Task, 200))
		if s.Result != "" {
			fmt.Fprintf(w, "result:     %s\n", truncate(s.Result, 400))
		}
		if s.Error != "" {
			fmt.Fprintf(w, "error:      %s\n", s.Error)
		}
		if *trace {
			printTrace(w, s.Trace)
		}
		return nil
	}
	if *trace {
		return usageError{"--trace needs a job ID: bridgectl jobs ID --trace"}
	}
	snaps, err := loadJobs(c.dir)
	if err != nil {
		return err
	}
	if *asJSON {
		raws := make([]json.RawMessage, 0, len(snaps))
		for _, s := range snaps {
			raws = append(raws, s.Raw)
		}
		b, _ := json.MarshalIndent(raws, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return nil
	}
	if len(snaps) == 0 {
		fmt.Fprintln(w, "no jobs")
		return nil
	}
	for _, s := range snaps {
		fmt.Fprintf(w, "%s  %-16s %3d steps  %s  %s\n", s.ID, s.Status, s.Steps, s.CreatedAt, truncate(s.Task, 60))
	}
	return nil
}

// printTrace prints a trace: a JSON array of events, one line each.
func printTrace(w interface{ Write([]byte) (int, error) }, raw json.RawMessage) {
	var events []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &events) != nil || len(events) == 0 {
		fmt.Fprintln(w, "trace:      (empty)")
		return
	}
	fmt.Fprintln(w, "trace:")
	for i, ev := range events {
		var m map[string]any
		if json.Unmarshal(ev, &m) != nil {
			fmt.Fprintf(w, "  %3d  %s\n", i+1, truncate(string(ev), 200))
			continue
		}
		var parts []string
		for _, k := range []string{"kind", "type", "tool", "detail", "text", "exit_code", "error"} {
			if v, ok := m[k]; ok && v != nil && fmt.Sprint(v) != "" {
				parts = append(parts, fmt.Sprintf("%v", v))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, string(ev))
		}
		fmt.Fprintf(w, "  %3d  %s\n", i+1, truncate(strings.Join(parts, "  "), 200))
	}
}

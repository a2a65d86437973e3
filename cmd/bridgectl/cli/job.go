package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// exitJobEnded is job kill's exit status for a job that had already ended.
const exitJobEnded = 3

var jobCmd = &Command{
	Name:  "job",
	Usage: "job kill ID",
	Short: "cancel a running agent job (it ends as cancelled)",
	Long: `Calls the daemon's deepseek_agent_cancel tool on the local endpoint, so the
daemon stops the job's harness (its whole process group) and records the job as
cancelled, not error. The daemon must be running. ID is the job id
` + "`bridgectl jobs`" + ` shows, or a unique prefix of 8 or more characters.

exit status:
  0  the job was cancelled
  1  nothing was cancelled: no such job, or the daemon is not running or failed
  2  usage: no ID, or a prefix that more than one job starts with (they are listed)
  3  the job had already ended (its final status is printed); nothing was cancelled`,
	Run: runJob,
}

func runJob(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "kill" {
		return usageError{"usage: bridgectl job kill ID"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	id, err := c.resolveJobID(pos[1])
	if err != nil {
		return err
	}
	w := e.Stdout
	// A job that ended needs no daemon: say how it ended.
	before, loadErr := jobs.Load(c.dir, id)
	if loadErr == nil && before.Status.Final() {
		printEnded(w, before, e.Now())
		return codeError{exitJobEnded, "the job had already ended"}
	}
	if err := c.cfg.CheckSecret(); err != nil {
		return err
	}
	d := c.daemon(ctx)
	if !d.Healthy {
		return fmt.Errorf("the daemon does not answer on %s, so it cannot cancel job %s: `bridgectl start` (a job of a stopped daemon is already interrupted)", d.Addr, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	sess, _, err := connectMCP(ctx, e, localEndpoint(d.Addr, c.cfg.PathSecret))
	if err != nil {
		return fmt.Errorf("connect to the daemon: %w", err)
	}
	defer sess.Close()
	// The owner token (the daemon writes it to the state dir at boot) marks
	// this cancel as the owner's: the job ends cancelled_by_owner. Without
	// it the cancel still works, as the caller's.
	var meta *mcp.Meta
	if tok, err := os.ReadFile(c.dir.OwnerTokenFile()); err == nil {
		meta = &mcp.Meta{AdditionalFields: map[string]any{tools.OwnerMetaKey: strings.TrimSpace(string(tok))}}
	}
	res, err := sess.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "deepseek_agent_cancel", Arguments: map[string]any{"job_id": id}, Meta: meta}})
	err = callError(ctx, "tools/call", err)
	if err != nil {
		return fmt.Errorf("deepseek_agent_cancel: %w", err)
	}
	if res.IsError {
		// The text is written for a model; the owner gets the facts.
		if strings.Contains(resultText(res), jobs.ErrUnknownJob.Error()) {
			return fmt.Errorf("no job %s: the running daemon does not know it (it never existed here or its results expired); `bridgectl jobs` lists the jobs of this state dir", id)
		}
		return fmt.Errorf("the daemon refused to cancel job %s: %s", id, oneLine(resultText(res), 300))
	}
	// The structured part of the answer: the job's status, steps and elapsed time.
	var after struct {
		Status     jobs.Status     `json:"status"`
		StopReason jobs.StopReason `json:"stop_reason"`
		Steps      int             `json:"steps"`
		ElapsedMS  int64           `json:"elapsed_ms"`
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &after) != nil || after.Status == "" {
		return fmt.Errorf("the daemon's answer to cancelling job %s carries no status; `bridgectl jobs %s` shows the job", id, id)
	}
	elapsed := time.Duration(after.ElapsedMS) * time.Millisecond
	was := "running"
	if loadErr == nil {
		was = string(before.Status)
	}
	switch {
	case after.Status == jobs.StatusCancelled:
		fmt.Fprintf(w, "cancelled job %s (%s): it was %s (%s, %s elapsed); its harness and every process it started are stopped, and it has no result\n",
			id, after.StopReason, was, toolCalls(after.Steps), elapsed.Round(time.Second))
		fmt.Fprintf(w, "`bridgectl jobs %s` shows the work it left\n", id)
		return nil
	case after.Status.Final():
		// It ended on its own before the cancel reached it.
		s, err := jobs.Load(c.dir, id)
		if err != nil || !s.Status.Final() {
			s = jobs.Snapshot{ID: id, Status: after.Status, Steps: after.Steps}
		}
		printEnded(w, s, e.Now())
		return codeError{exitJobEnded, "the job had already ended"}
	default:
		return fmt.Errorf("job %s is still %s: the daemon did not confirm the cancel in time; `bridgectl jobs %s` shows it, `bridgectl logs` says why", id, after.Status, id)
	}
}

// printEnded says that a job had already ended and how; nothing was cancelled.
func printEnded(w io.Writer, s jobs.Snapshot, now time.Time) {
	when := ""
	if s.EndedAt != nil {
		when = " at " + s.EndedAt.Local().Format(time.RFC3339)
	}
	why := ""
	if s.Error != "" && !s.Status.Done() {
		why = ": " + oneLine(s.Error, 200)
	}
	counts := toolCalls(s.Steps)
	if !s.CreatedAt.IsZero() {
		counts += fmt.Sprintf(", %s elapsed", s.Elapsed(now).Round(time.Second))
	}
	fmt.Fprintf(w, "job %s had already ended: %s%s (%s)%s\n", s.ID, s.Status, when, counts, why)
	fmt.Fprintf(w, "nothing was cancelled; `bridgectl jobs %s` shows it\n", s.ID)
}

func toolCalls(n int) string {
	if n == 1 {
		return "1 tool call"
	}
	return fmt.Sprintf("%d tool calls", n)
}

// resolveJobID turns what the user typed into a job id: a full id as it is,
// or a prefix of 8 or more characters that exactly one job's snapshot in the
// state dir starts with. Several matches are a usage error that lists them.
func (c *ctl) resolveJobID(arg string) (string, error) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if ids.Valid(arg) {
		return arg, nil
	}
	if !ids.ValidPrefix(arg) {
		return "", usageError{fmt.Sprintf("%q is not a job id: give the 32 hex characters `bridgectl jobs` shows, or a unique prefix of 8 or more", arg)}
	}
	matches := jobIDsWithPrefix(c.dir, arg)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		msg := fmt.Sprintf("no job starts with %s: `bridgectl jobs` lists the jobs of this state dir", arg)
		if note := c.noStateDir(); note != "" {
			msg += " (" + note + ")"
		}
		return "", errors.New(msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs start with %s; give more of the id:", len(matches), arg)
	for _, id := range matches {
		line := id
		if s, err := jobs.Load(c.dir, id); err == nil {
			line = fmt.Sprintf("%s  %-16s %s", id, s.Status, oneLine(s.Task, 60))
		}
		b.WriteString("\n  " + line)
	}
	return "", usageError{b.String()}
}

// jobIDsWithPrefix lists the ids of the job snapshots in dir that start with prefix.
func jobIDsWithPrefix(dir statedir.Dir, prefix string) []string {
	entries, err := os.ReadDir(dir.Jobs())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && ids.Valid(id) && strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}

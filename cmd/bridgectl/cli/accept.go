package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

var acceptCmd = &Command{
	Name:  "accept",
	Usage: "accept [--only A|B|C] [--keep] [--timeout DURATION]",
	Short: "acceptance run: three agent jobs a chat-only model cannot pass, through the running daemon",
	Long: `Runs three agent jobs through the running daemon, as an MCP host would
(deepseek_agent_start, then deepseek_agent_poll), against whatever upstream
the daemon is configured with — real DeepSeek costs a few cents:

  A  a random string that exists only in a file, written back reversed
     (evidence: the bytes of answer.txt on disk)
  B  a failing script (python3 check.py) to run, fix and run again
     (evidence: two or more runs of it in the job's trace, the last exit 0)
  C  a summary of a file that does not exist
     (evidence: the answer says it is missing; nothing was created)

Each task prints PASS or FAIL with its evidence, and its cost; the exit status
is 1 when any task fails. The workspaces are made in a temporary directory
under the first allowed root (DEEPSEEK_ALLOWED_ROOTS) and removed at the end
(--keep leaves them). The tasks need only allow-listed commands; approval is
never turned off: a step that asks a human waits for ` + "`bridgectl approve --watch`" + `.
--timeout bounds each task (default 10m).

When the model endpoint (DEEPSEEK_BASE_URL, BRIDGE_ANTHROPIC_BASE_URL) is a
loopback address — the project's DeepSeek double, a local proxy — accept says
so before and after the run: its results are then no verdict on DeepSeek.`,
	Run: runAccept,
}

// loopbackModel returns the first of the model endpoints (scheme://host)
// that is a loopback address (127.0.0.0/8, ::1, localhost), "" when none is.
// A run against one judges whatever answers there — the project's DeepSeek
// double, a local proxy — and not DeepSeek: the double is chat-only unless a
// test scripts it, so it cannot pass.
func loopbackModel(urls ...string) string {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		h := u.Hostname()
		ip := net.ParseIP(h)
		if strings.EqualFold(h, "localhost") || (ip != nil && ip.IsLoopback()) {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}

// acceptTask is one task of the acceptance run.
type acceptTask struct {
	name  string
	title string
	// prepare writes the task's files into ws and returns its text.
	prepare func(ws string) (task string, err error)
	// judge decides from the final payload and the workspace.
	judge func(ws string, p tools.AgentJobPayload) (pass bool, evidence string)
}

func runAccept(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	only := f.String("only", "", "run only task A, B or C")
	keep := f.Bool("keep", false, "keep the workspaces")
	timeout := f.Duration("timeout", 10*time.Minute, "how long each task may take")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("accept takes no arguments, got %q", pos)}
	}
	witness, err := ids.Hex(16)
	if err != nil {
		return err
	}
	tasks := acceptTasks(e, witness)
	if *only != "" {
		want := strings.ToUpper(*only)
		tasks = slices.DeleteFunc(tasks, func(t acceptTask) bool { return t.name != want })
		if len(tasks) == 0 {
			return usageError{fmt.Sprintf("accept --only %q: want A, B or C", *only)}
		}
	}
	if *timeout <= 0 {
		return usageError{"accept --timeout must be positive"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	if err := c.cfg.CheckSecret(); err != nil {
		return err
	}
	d := c.daemon(ctx)
	if !d.Healthy {
		return errors.New("no running daemon answers: `bridgectl start` first (accept runs its jobs through the daemon, as a host would)")
	}
	roots := c.cfg.AllowedRoots
	if d.Info != nil && d.Info.AllowedRoots != nil {
		roots = d.Info.AllowedRoots
	}
	if len(roots) == 0 {
		return errors.New("the daemon has no allowed roots, so every workspace is refused: `bridgectl allow DIR` first")
	}
	base, err := os.MkdirTemp(roots[0], "bridgectl-accept-")
	if err != nil {
		return fmt.Errorf("make the workspaces under %s: %w", roots[0], err)
	}
	if *keep {
		defer fmt.Fprintf(e.Stdout, "workspaces kept in %s\n", base)
	} else {
		defer os.RemoveAll(base)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, _, err := connectMCP(cctx, e, localEndpoint(d.Addr, c.cfg.PathSecret))
	cancel()
	if err != nil {
		return fmt.Errorf("connect to the daemon: %w (see `bridgectl logs`)", err)
	}
	defer sess.Close()

	fmt.Fprintf(e.Stdout, "acceptance run through http://%s, workspaces in %s\n", d.Addr, base)
	local := loopbackModel(c.cfg.DeepSeekBaseURL, c.cfg.AnthropicBaseURL)
	if local != "" {
		fmt.Fprintf(e.Stdout, "note: the model endpoint %s is a loopback address: a local double or proxy answers there, not DeepSeek, so this run is no verdict on DeepSeek (the project's double is chat-only and cannot pass; DEEPSEEK_BASE_URL names the real API)\n", local)
	}
	failed, total := 0, 0.0
	for _, t := range tasks {
		p, pass, evidence := runAcceptTask(ctx, e, sess, base, t, *timeout)
		total += p.CostUSD
		verdict := "PASS"
		if !pass {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(e.Stdout, "%s %s (%s): %s; cost $%.4f\n", verdict, t.name, t.title, evidence, p.CostUSD)
	}
	fmt.Fprintf(e.Stdout, "%d of %d passed; total cost $%.4f\n", len(tasks)-failed, len(tasks), total)
	if local != "" {
		fmt.Fprintf(e.Stdout, "not a verdict on DeepSeek: the model answered from %s, a loopback address\n", local)
	}
	if failed > 0 {
		return fmt.Errorf("%d %s failed (see the FAIL %s above)", failed, plural(failed, "task", "tasks"), plural(failed, "line", "lines"))
	}
	return nil
}

// runAcceptTask runs one task in its own workspace under base and judges it.
func runAcceptTask(ctx context.Context, e *Env, sess *client.Client, base string, t acceptTask, timeout time.Duration) (tools.AgentJobPayload, bool, string) {
	ws := filepath.Join(base, t.name)
	if err := os.Mkdir(ws, 0o755); err != nil {
		return tools.AgentJobPayload{}, false, err.Error()
	}
	task, err := t.prepare(ws)
	if err != nil {
		return tools.AgentJobPayload{}, false, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fmt.Fprintf(e.Stdout, "     %s: started in %s\n", t.name, ws)
	p, err := agentCall(ctx, sess, "deepseek_agent_start", map[string]any{"task": task, "workspace": ws})
	asked := ""
	for err == nil && !jobs.Status(p.Status).Final() {
		if p.Status == string(jobs.StatusWaitingApproval) && p.Approval != nil && p.Approval.ID != asked {
			asked = p.Approval.ID
			fmt.Fprintf(e.Stdout, "     %s: waits for a human: %s — answer with `bridgectl approve --watch`\n", t.name, oneLine(p.Approval.Summary, 200))
		}
		if p.Status == string(jobs.StatusWaitingApproval) {
			// A poll returns at once while a human is asked: pace them.
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		p, err = agentCall(ctx, sess, "deepseek_agent_poll", map[string]any{"job_id": p.JobID, "wait_seconds": 30})
	}
	if err != nil {
		if p.JobID != "" {
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			agentCall(cctx, sess, "deepseek_agent_cancel", map[string]any{"job_id": p.JobID})
			ccancel()
		}
		return p, false, fmt.Sprintf("job %s: %v", cmp.Or(p.JobID, "not started"), err)
	}
	if !jobs.Status(p.Status).Done() {
		return p, false, fmt.Sprintf("job %s ended %s: %s", p.JobID, p.Status, oneLine(p.Error, 300))
	}
	pass, evidence := t.judge(ws, p)
	return p, pass, evidence
}

// agentCall calls an agent tool and decodes its payload; a tool error is an error.
func agentCall(ctx context.Context, sess *client.Client, tool string, args map[string]any) (tools.AgentJobPayload, error) {
	var p tools.AgentJobPayload
	res, err := callTool(ctx, sess, tool, args)
	if err != nil {
		return p, err
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil {
			return p, fmt.Errorf("%s: undecodable answer: %w", tool, err)
		}
	}
	if res.IsError {
		return p, fmt.Errorf("%s: %s", tool, oneLine(resultText(res), 300))
	}
	return p, nil
}

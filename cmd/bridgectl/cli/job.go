package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var jobCmd = &Command{
	Name:  "job",
	Usage: "job kill ID",
	Short: "cancel a running agent job (it ends as cancelled)",
	Long: `Calls the daemon's deepseek_agent_cancel tool on the local endpoint, so the
daemon stops the job's harness (its whole process group) and records the job as
cancelled, not error. The daemon must be running.`,
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
	id := pos[1]
	c, err := f.load()
	if err != nil {
		return err
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
	sess, err := connectMCP(ctx, e, localEndpoint(d.Addr, c.cfg.PathSecret))
	if err != nil {
		return fmt.Errorf("connect to the daemon: %w", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_cancel", Arguments: map[string]any{"job_id": id}})
	if err != nil {
		return fmt.Errorf("deepseek_agent_cancel: %w", err)
	}
	text := resultText(res)
	if res.IsError {
		return errors.New(text)
	}
	fmt.Fprintln(e.Stdout, text)
	return nil
}

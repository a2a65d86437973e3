package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
)

var approvalCmd = &Command{
	Name:  "approval",
	Usage: "approval [on|off]",
	Short: "turn human approval off for a trusted run (until the daemon's next start), or on again",
	Long: `Without an argument: says whether human approval is on.

approval off writes the approval-off flag into the state dir; a running daemon
applies it from the next tool call on. From then on, the
tool calls the rules would send to a human run without asking anyone — the OS
sandbox (bubblewrap) still applies, and every call is still in the audit log.
The flag lasts until ` + "`bridgectl approval on`" + ` or the daemon's next start: the
daemon clears it at every boot, so a forgotten flag does not outlive the run.
Requests already waiting stay waiting: answer them with approve or deny.

approval on removes the flag. BRIDGE_CC_APPROVAL=off in .env or the environment
also turns approval off, for every run; this command does not change that.`,
	Run: runApproval,
}

func runApproval(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 1 && pos[0] != "on" && pos[0] != "off") {
		return usageError{"usage: bridgectl approval [on|off]"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	w := e.Stdout
	flag := c.dir.ApprovalOffFlag()
	switch {
	case len(pos) == 0:
		if why := approvalOffReason(c); why != "" {
			fmt.Fprintf(w, "human approval is OFF (%s): tool calls outside the rules run without asking anyone\n", why)
		} else {
			fmt.Fprintln(w, "human approval is on: tool calls outside the rules wait for `bridgectl approve` (or `bridgectl approve --watch`)")
		}
		return nil
	case pos[0] == "off":
		if err := c.createDir(); err != nil {
			return err
		}
		if err := approvals.SetApprovalOff(c.dir, approvalWho(e, "bridgectl approval off")); err != nil {
			return fmt.Errorf("write the approval-off flag: %w", err)
		}
		fmt.Fprintln(w, "!!! HUMAN APPROVAL IS OFF !!!")
		fmt.Fprintln(w, "Tool calls outside the rules (commands off the allow-list, paths outside the workspace,")
		fmt.Fprintln(w, "network tools, unknown tools) now run WITHOUT asking anyone. The OS sandbox still applies")
		fmt.Fprintln(w, "and the audit log still records every call.")
		fmt.Fprintf(w, "Flag: %s — it lasts until `bridgectl approval on` or the daemon's next start, which clears it.\n", flag)
		if d := c.daemon(ctx); d.PID == 0 {
			fmt.Fprintln(e.Stderr, "WARNING: the daemon is not running, and its next start clears this flag: run `bridgectl approval off` again after `bridgectl start` if you still want approval off")
		} else {
			fmt.Fprintf(w, "The running daemon (pid %d) applies it from the next tool call on.\n", d.PID)
		}
		if reqs, err := pendingRequests(c.dir); err == nil && len(reqs) > 0 {
			fmt.Fprintf(w, "%d request(s) already waiting still need an answer: `bridgectl pending`\n", len(reqs))
		}
		fmt.Fprintln(e.Stderr, "WARNING: human approval is OFF until `bridgectl approval on` or the daemon's next start")
		return nil
	default: // on
		_, statErr := os.Stat(flag)
		if err := approvals.ClearApprovalOff(c.dir); err != nil {
			return fmt.Errorf("remove the approval-off flag %s: %w (remove it by hand)", flag, err)
		}
		if statErr == nil {
			fmt.Fprintf(w, "human approval is on again: removed %s\n", flag)
		} else {
			fmt.Fprintln(w, "the approval-off flag was not set")
		}
		if !c.cfg.CCApproval {
			fmt.Fprintln(e.Stderr, "WARNING: human approval is still OFF: BRIDGE_CC_APPROVAL=off is set (in .env or the environment); remove it and `bridgectl restart`")
		}
		return nil
	}
}

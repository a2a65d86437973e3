package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var approvalCmd = &Command{
	Name:  "approval",
	Usage: "approval [on|off]",
	Short: "turn human approval off for a trusted run (until the daemon's next start), or on again",
	Long: `Without an argument: says whether human approval is on for the running
daemon — the mode it started with (BRIDGE_CC_APPROVAL, from its daemon.json)
and the approval-off flag — and notes when .env or the environment now say
otherwise, so that a restart would change it. With no daemon running it says
what the next start would use.

approval off writes the approval-off flag into the state dir; a running daemon
applies it from the next tool call on. From then on, the
tool calls the rules would send to a human run without asking anyone — the OS
sandbox (bubblewrap) still applies, and every call is still in the audit log.
The flag lasts until ` + "`bridgectl approval on`" + ` or the daemon's next start: the
daemon clears it at every boot, so a forgotten flag does not outlive the run.
Requests already waiting stay waiting: answer them with approve or deny.

approval on removes the flag. BRIDGE_CC_APPROVAL=off in .env or the environment
also turns approval off, for every run; this command does not change that:
when the running daemon started with it (or, with none running, the config
says it), approval on says so and exits 1 — remove the setting and restart.`,
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
		st := c.approvalState(c.daemonProc())
		if st.off() {
			fmt.Fprintf(w, "human approval is OFF (%s): tool calls outside the rules run without asking anyone\n", st.reasons())
		} else {
			fmt.Fprintln(w, "human approval is on: tool calls outside the rules wait for `bridgectl approve` (or `bridgectl approve --watch`)")
		}
		if note := st.configNote(c); note != "" {
			fmt.Fprintf(w, "note: %s\n", note)
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
		st := c.approvalState(c.daemonProc())
		switch {
		case statErr == nil && !st.off():
			fmt.Fprintf(w, "human approval is on again: removed %s\n", flag)
		case statErr == nil:
			fmt.Fprintf(w, "removed the approval-off flag %s\n", flag)
		default:
			fmt.Fprintln(w, "the approval-off flag was not set")
		}
		src := c.settingSource("BRIDGE_CC_APPROVAL")
		switch {
		case st.PID != 0 && st.BootOff:
			fix := "remove BRIDGE_CC_APPROVAL=off from " + src + ", then `bridgectl restart`"
			if !st.ConfigOff {
				fix = c.envPath + " and the environment no longer say BRIDGE_CC_APPROVAL=off: `bridgectl restart` turns approval on"
			}
			fmt.Fprintf(e.Stderr, "human approval is still OFF: the approval-off flag is not what turns it off — the running daemon (pid %d) started with BRIDGE_CC_APPROVAL=off and keeps that until it restarts; %s\n", st.PID, fix)
			return silentError{"approval still off"}
		case st.PID == 0 && st.ConfigOff:
			fmt.Fprintf(e.Stderr, "human approval is still OFF: the approval-off flag is not what turns it off — BRIDGE_CC_APPROVAL=off is set in %s, so the next start runs without approval too; remove it there, then `bridgectl start`\n", src)
			return silentError{"approval still off"}
		}
		if statErr != nil {
			fmt.Fprintln(w, "human approval is on: tool calls outside the rules wait for `bridgectl approve` (or `bridgectl approve --watch`)")
		}
		if note := st.configNote(c); note != "" {
			fmt.Fprintf(w, "note: %s\n", note)
		}
		return nil
	}
}

// approvalState is where human approval stands: the mode the running daemon
// started with (daemon.json), the approval-off flag, and what the config on
// disk says now — what the next start would use.
type approvalState struct {
	PID       int  // the running daemon that reported its mode (0: none)
	BootOff   bool // it started with BRIDGE_CC_APPROVAL=off
	FlagOff   bool // the approval-off flag is in the state dir
	Flag      string
	ConfigOff bool // BRIDGE_CC_APPROVAL=off in .env or the environment now
}

// approvalState reads the three sources; d is the daemon (no probe needed).
func (c *ctl) approvalState(d daemonctl.Status) approvalState {
	st := approvalState{FlagOff: approvals.ApprovalOff(c.dir), Flag: c.dir.ApprovalOffFlag(), ConfigOff: !c.cfg.CCApproval}
	if d.PID != 0 && d.Info != nil && len(d.Info.Approval) > 0 {
		st.PID = d.PID
		st.BootOff = d.Info.Approval == approvals.ModeOff
	}
	return st
}

// off: tool calls outside the rules run without a human. A running daemon
// uses the mode it started with or the flag; without one, the config and
// the flag say what there is (the next start clears the flag).
func (s approvalState) off() bool {
	if s.PID != 0 {
		return s.BootOff || s.FlagOff
	}
	return s.ConfigOff || s.FlagOff
}

// reasons says why approval is off ("" when it is on).
func (s approvalState) reasons() string {
	var why []string
	if s.FlagOff {
		why = append(why, "approval-off flag "+s.Flag+", cleared at the daemon's next start; `bridgectl approval on` removes it")
	}
	switch {
	case s.PID != 0 && s.BootOff:
		why = append(why, fmt.Sprintf("the running daemon (pid %d) started with BRIDGE_CC_APPROVAL=off", s.PID))
	case s.PID == 0 && s.ConfigOff:
		why = append(why, "BRIDGE_CC_APPROVAL=off")
	}
	return strings.Join(why, "; ")
}

// configNote says when the config on disk differs from the mode the running
// daemon started with, and what a restart would do ("" when they agree).
func (s approvalState) configNote(c *ctl) string {
	if s.PID == 0 || s.BootOff == s.ConfigOff {
		return ""
	}
	if s.BootOff {
		return fmt.Sprintf("the daemon started with BRIDGE_CC_APPROVAL=off, which %s and the environment no longer say; it keeps the mode it started with — `bridgectl restart` would turn approval on", c.envPath)
	}
	return fmt.Sprintf("BRIDGE_CC_APPROVAL=off is now set in %s, but the daemon started with approval on and keeps that — `bridgectl restart` would turn it OFF for every run", c.settingSource("BRIDGE_CC_APPROVAL"))
}

// settingSource names where a setting's value comes from: the environment
// (which wins) or the .env file.
func (c *ctl) settingSource(name string) string {
	if c.overriddenByEnv(name) {
		return "the environment"
	}
	return c.envPath
}

package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// floorLine says where the job policy floor comes from: the running
// daemon's (which read it at its start), else the config's file, checked.
func (c *ctl) floorLine(d daemonctl.Status) string {
	if d.Info != nil && d.Info.PolicyFloor != "" {
		line := d.Info.PolicyFloor + " (reported by the daemon)"
		if d.Info.PolicyFloor != "none" && d.Info.PolicyFloor != c.cfg.PolicyFloorFile {
			line += "; the config now names " + cmp.Or(c.cfg.PolicyFloorFile, "none") + ", used at the next start"
		}
		return line
	}
	if c.cfg.PolicyFloorFile == "" {
		return "none (BRIDGE_POLICY_FLOOR_FILE is not set): each job's policy is the caller's alone"
	}
	if _, err := policy.LoadFloor(c.cfg.PolicyFloorFile); err != nil {
		return "INVALID: " + err.Error() + " — the daemon will not start until it is fixed"
	}
	return c.cfg.PolicyFloorFile + " (BRIDGE_POLICY_FLOOR_FILE)"
}

// doctorFloor checks the job policy floor the daemon would read at start.
func (c *ctl) doctorFloor(r *report) {
	switch {
	case c.cfg.PolicyFloorFile == "":
		r.ok("policy floor: none (BRIDGE_POLICY_FLOOR_FILE is not set)")
	default:
		if _, err := policy.LoadFloor(c.cfg.PolicyFloorFile); err != nil {
			r.fail("policy floor: %v — fix the file or unset BRIDGE_POLICY_FLOOR_FILE; the daemon does not start with it", err)
			return
		}
		r.ok("policy floor: %s", c.cfg.PolicyFloorFile)
	}
	if c.cfg.RequirePolicy {
		r.ok("policy: required for every job (BRIDGE_REQUIRE_POLICY=on)")
	}
}

// printPolicy shows a job's model and thinking, the policy it ran under and
// every tool call its ledger records as not allowed.
func printPolicy(w io.Writer, s jobs.Snapshot) {
	if s.Model != "" {
		fmt.Fprintf(w, "model:      %s, thinking %s\n", s.Model, s.Thinking)
	}
	if p := s.Policy; p != nil {
		var parts []string
		if p.Tools != nil {
			parts = append(parts, "tools "+strings.Join(p.Tools, ","))
		}
		if p.ReadOnly() {
			parts = append(parts, "read-only")
		} else if p.RestrictsWrites() {
			parts = append(parts, "writes "+strings.Join(append(append([]string{}, p.WritePaths...), p.FloorWritePaths...), ","))
		}
		if len(p.DenyPaths) > 0 {
			parts = append(parts, "denies "+strings.Join(p.DenyPaths, ","))
		}
		if len(parts) == 0 {
			parts = append(parts, "no restriction beyond the rules")
		}
		fmt.Fprintf(w, "policy:     %s (floor: %s)\n", visibleLine(strings.Join(parts, "; "), 400), visibleLine(p.Floor, 400))
	}
	for _, e := range s.Ledger {
		if !strings.HasPrefix(e.Verdict, "allowed") {
			fmt.Fprintf(w, "refused:    %-16s %s — %s\n", e.Verdict, oneLine(e.Summary, 100), oneLine(e.Reason, 200))
		}
	}
}

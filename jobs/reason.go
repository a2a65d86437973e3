package jobs

import (
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// failureReason words a harness result that is not a success: what stopped
// the harness, its own codes in brackets (a subtype of "success" and a
// terminal reason of "completed" say nothing and are left out), then its text.
func failureReason(res *harness.Result) string {
	var codes []string
	if res.Subtype != "" && res.Subtype != "success" {
		codes = append(codes, res.Subtype)
	}
	if res.TerminalReason != "" && res.TerminalReason != "completed" {
		codes = append(codes, res.TerminalReason)
	}
	var what string
	switch {
	case slices.Contains(codes, "error_max_turns") || slices.Contains(codes, "max_turns"):
		what = "stopped at its turn limit"
	case slices.Contains(codes, "api_error"):
		what = "stopped on an error from the model API"
	case len(codes) > 0:
		what = "stopped on an error"
	case res.IsError:
		what = "reported an error"
	default:
		return "the agent harness finished with an empty answer"
	}
	why := "the agent harness " + what
	if len(codes) > 0 {
		why += " (" + strings.Join(codes, ", ") + ")"
	}
	if res.Text != "" {
		why += ": " + res.Text
	}
	return why
}

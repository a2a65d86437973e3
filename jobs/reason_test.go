package jobs

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// A result that is not a success is worded plainly: what stopped the
// harness, then its own codes, never "without a successful result (success,
// …)", which reads as a contradiction.
func TestFailureReasonIsPlain(t *testing.T) {
	tests := []struct {
		name      string
		res       harness.Result
		want, not string
	}{
		{"dead upstream", harness.Result{Subtype: "success", IsError: true, TerminalReason: "api_error", Text: "API Error: Connection error."},
			"the agent harness stopped on an error from the model API (api_error): API Error: Connection error.", "success"},
		{"turn limit", harness.Result{Subtype: "error_max_turns", IsError: true, TerminalReason: "max_turns"},
			"the agent harness stopped at its turn limit (error_max_turns, max_turns)", "success"},
		{"error without codes", harness.Result{Subtype: "success", IsError: true, TerminalReason: "completed", Text: "boom"},
			"the agent harness reported an error: boom", "success"},
		{"empty answer", harness.Result{Subtype: "success", TerminalReason: "completed"},
			"the agent harness finished with an empty answer", "("},
		{"other subtype", harness.Result{Subtype: "error_during_execution", IsError: true},
			"the agent harness stopped on an error (error_during_execution)", "success"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureReason(&tt.res)
			if got != tt.want || strings.Contains(got, tt.not) {
				t.Errorf("failureReason = %q, want %q", got, tt.want)
			}
		})
	}
}

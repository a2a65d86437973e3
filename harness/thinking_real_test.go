package harness

import (
	"os"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// What the pinned Claude Code (2.1.328) sends for each way of setting its
// thinking, recorded by the double: --effort reaches the request as
// output_config.effort; CLAUDE_EFFORT in its environment does not (it sends
// high regardless); MAX_THINKING_TOKENS=0 leaves the thinking block out,
// which DeepSeek reads as thinking on (so the model proxy disables it).
func TestRealClaudeCodeThinkingControls(t *testing.T) {
	bin := realClaude(t)
	t.Parallel()
	for _, c := range []struct {
		name           string
		spec           func(*Spec)
		environ        []string
		effort, typ    string
		thinkingAbsent bool
	}{
		{"default", nil, nil, "high", "adaptive", false},
		{"--effort low (thinking low)", func(s *Spec) { s.Thinking = "low" }, nil, "low", "adaptive", false},
		{"CLAUDE_EFFORT=low is not read", nil, []string{"CLAUDE_EFFORT=low"}, "high", "adaptive", false},
		{"thinking off", func(s *Spec) { s.Thinking = ThinkingOff }, nil, "high", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := deepseektest.New()
			t.Cleanup(d.Close)
			spec := realSpec(t, d)
			if c.spec != nil {
				c.spec(&spec)
			}
			d.ScriptAnthropic(deepseektest.Text("ok"))
			cc := &ClaudeCode{Bin: bin, Environ: os.Environ()}
			if c.environ != nil {
				// AllowedEnv keeps CLAUDE_EFFORT out of a job: set it through env(1).
				spec.Wrap = append([]string{"/usr/bin/env"}, c.environ...)
			}
			r, err := cc.Start(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			collect(t, r, 60*time.Second)
			reqs := d.ScriptedAnthropicRequests()
			if len(reqs) != 1 {
				t.Fatalf("%d scripted requests", len(reqs))
			}
			q := reqs[0]
			_, hasThinking := q.JSON["thinking"]
			if q.Effort() != c.effort || q.Thinking() != c.typ || hasThinking == c.thinkingAbsent {
				t.Errorf("request effort %q thinking %q (present %v), want effort %q thinking %q (absent %v)",
					q.Effort(), q.Thinking(), hasThinking, c.effort, c.typ, c.thinkingAbsent)
			}
		})
	}
}

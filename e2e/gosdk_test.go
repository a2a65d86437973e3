package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// toolCall builds tools/call params.
func toolCall(name string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Arguments: args}
}

// textOf joins the text content blocks of a tool result.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes a result's structuredContent into v.
func structured(t testing.TB, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("structuredContent: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
}

// flashStructured is deepseek_flash's structuredContent, as hosts see it.
type flashStructured struct {
	Answer       string     `json:"answer"`
	Model        string     `json:"model"`
	FinishReason string     `json:"finish_reason"`
	Usage        flashUsage `json:"usage"`
	CostUSD      *float64   `json:"cost_usd"`
	DurationMS   *int64     `json:"duration_ms"`
}

type flashUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CacheHitTokens   int64 `json:"cache_hit_tokens"`
	CacheMissTokens  int64 `json:"cache_miss_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

// TestGoSDKClient: the official Go SDK client against a real `bridge serve`:
// initialize, tools/list, deepseek_flash with progress.
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	progress := newProgressLog()
	cs := goSDKClientWith(t, b.URL(), progress.Options())

	t.Run("initialize", func(t *testing.T) {
		ir := cs.InitializeResult()
		if ir == nil || ir.ServerInfo == nil {
			t.Fatal("no initialize result")
		}
		if ir.ServerInfo.Name == "" || ir.ServerInfo.Version == "" {
			t.Errorf("serverInfo = %+v, want a name and a version", ir.ServerInfo)
		}
		if ir.Capabilities == nil || ir.Capabilities.Tools == nil {
			t.Errorf("capabilities = %+v, want tools", ir.Capabilities)
		}
		if ir.ProtocolVersion == "" {
			t.Errorf("no protocol version negotiated")
		}
		t.Logf("server %s %s, protocol %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion)
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var flash *mcp.Tool
		for _, tool := range res.Tools {
			if tool.Name == "deepseek_flash" {
				flash = tool
			}
			if a := tool.Annotations; a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
				t.Errorf("%s: annotations %+v, want all four set explicitly", tool.Name, a)
			}
		}
		if flash == nil {
			t.Fatalf("deepseek_flash not listed; tools: %v", res.Tools)
		}
		if flash.OutputSchema == nil {
			t.Errorf("deepseek_flash has no outputSchema")
		}
		in, _ := json.Marshal(flash.InputSchema)
		// task or messages, exactly one: the tool says so, the schema cannot.
		for _, want := range []string{`"task"`, `"messages"`, `"mode"`, `"files"`, `"response_format"`} {
			if !strings.Contains(string(in), want) {
				t.Errorf("deepseek_flash inputSchema lacks %s: %s", want, in)
			}
		}
	})

	t.Run("deepseek_flash with progress", func(t *testing.T) {
		const answer = "Flash answer from the double: 42."
		const reasoning = "SECRET-REASONING-must-not-reach-the-caller"
		u := deepseektest.Usage{InputTokens: 1500, CacheHitTokens: 1000, OutputTokens: 120, ReasoningTokens: 30}
		// A slow, streamed answer, so the bridge has time to report progress.
		d.Script(deepseektest.Reasoned(reasoning, answer).WithUsage(u).WithKeepAlives(3).WithChunkDelay(150 * time.Millisecond))
		params := toolCall("deepseek_flash", map[string]any{"task": "What is the answer?", "mode": "review", "files": "claim: the answer is 42"})
		params.SetProgressToken("flash-progress-1")
		res, err := cs.CallTool(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		text := textOf(res)
		if res.IsError {
			t.Fatalf("IsError; text: %s", text)
		}
		if !strings.Contains(text, answer) {
			t.Errorf("text %q does not hold the answer", text)
		}
		if strings.Contains(text, reasoning) {
			t.Errorf("text leaks reasoning_content: %q", text)
		}
		var fs flashStructured
		structured(t, res, &fs)
		if fs.Answer != answer {
			t.Errorf("structuredContent.answer = %q, want %q", fs.Answer, answer)
		}
		if b, _ := json.Marshal(res.StructuredContent); strings.Contains(string(b), reasoning) {
			t.Errorf("structuredContent leaks reasoning_content")
		}
		if fs.Model == "" || fs.FinishReason != "stop" {
			t.Errorf("model %q finish_reason %q, want a model and stop", fs.Model, fs.FinishReason)
		}
		wantUsage := flashUsage{
			PromptTokens: 1500, CompletionTokens: 120,
			CacheHitTokens: 1000, CacheMissTokens: 500, ReasoningTokens: 30,
		}
		if fs.Usage != wantUsage {
			t.Errorf("usage = %+v, want %+v", fs.Usage, wantUsage)
		}
		wantCost := deepseek.PriceFor(fs.Model).Cost(1000, 500, 120)
		if fs.CostUSD == nil || math.Abs(*fs.CostUSD-wantCost) > 1e-12 {
			t.Errorf("cost_usd = %v, want %v", fs.CostUSD, wantCost)
		}
		if fs.DurationMS == nil || *fs.DurationMS < 0 {
			t.Errorf("duration_ms = %v, want ≥ 0", fs.DurationMS)
		}

		// The upstream request: one call, the right key, model and mode.
		reqs := d.Requests()
		last := reqs[len(reqs)-1]
		if got := last.Header.Get("Authorization"); got != "Bearer "+d.Key() {
			t.Errorf("upstream Authorization = %q", got)
		}
		if last.Model() != "deepseek-flash" {
			t.Errorf("upstream model = %q, want deepseek-flash", last.Model())
		}
		if !strings.Contains(last.LastUserText(), "What is the answer?") || !strings.Contains(last.LastUserText(), "claim: the answer is 42") {
			t.Errorf("upstream user message lacks the task or the files: %q", last.LastUserText())
		}

		// Every progress notification the server sent arrived, the last one
		// included (mcp-go drops the last one before a handler returns unless
		// the server works around it).
		events, _ := progress.WaitFor("flash-progress-1", 5*time.Second, finalProgressArrived)
		assertProgressComplete(t, events)
	})

	// The upstream bug is a race, so one lucky call proves little: the final
	// notification must arrive on every one of many fast calls.
	t.Run("final progress notification on every call", func(t *testing.T) {
		const calls = 25
		for i := range calls {
			d.Script(deepseektest.Text(fmt.Sprintf("fast answer %d", i)))
			token := fmt.Sprintf("fast-%d", i)
			params := toolCall("deepseek_flash", map[string]any{"task": "quick"})
			params.SetProgressToken(token)
			res, err := cs.CallTool(t.Context(), params)
			if err != nil || res.IsError {
				t.Fatalf("call %d: err %v, result %+v", i, err, res)
			}
			events, ok := progress.WaitFor(token, 5*time.Second, finalProgressArrived)
			if !ok {
				t.Fatalf("call %d: the final progress notification never arrived; got %+v", i, events)
			}
		}
	})
}

// finalProgressArrived reports whether the final notification (progress == total) is among evs.
func finalProgressArrived(evs []mcp.ProgressNotificationParams) bool {
	for _, e := range evs {
		if e.Total > 0 && e.Progress == e.Total {
			return true
		}
	}
	return false
}

// assertProgressComplete checks a call's progress notifications: at least one,
// progress strictly increasing, and the last one reports completion
// (progress == total), which is the notification mcp-go tends to drop.
func assertProgressComplete(t testing.TB, events []mcp.ProgressNotificationParams) {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no progress notification arrived")
	}
	for i := 1; i < len(events); i++ {
		if events[i].Progress <= events[i-1].Progress {
			t.Errorf("progress not increasing at %d: %v then %v", i, events[i-1].Progress, events[i].Progress)
		}
	}
	last := events[len(events)-1]
	if last.Total <= 0 || last.Progress != last.Total {
		t.Errorf("last progress notification = %+v, want progress == total (the final one); all: %+v", last, events)
	}
	t.Logf("%d progress notifications, last %+v", len(events), last)
}

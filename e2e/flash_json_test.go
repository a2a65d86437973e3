package e2e

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// TestFlashReadsAJSONAnswerToAStreamedRequest: an OpenAI-compatible gateway
// in front of DeepSeek may answer the bridge's stream: true request with one
// application/json chat.completion. The bridge binary reads it by its
// content type and answers the host on the first attempt, instead of
// retrying six times and failing with "the answer stream ended before the
// answer was complete".
func TestFlashReadsAJSONAnswerToAStreamedRequest(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	d.Script(deepseektest.Reasoned("SECRET-REASONING", "the gateway's whole answer").WithoutStream())
	b := startBridge(t, doubleEnv(d))
	cs := goSDKClient(t, b.URL())
	res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "answer through a gateway"}))
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	text := textOf(res)
	if res.IsError || !strings.HasPrefix(text, "the gateway's whole answer") || strings.Contains(text, "SECRET-REASONING") {
		t.Fatalf("result (isError %v): %q", res.IsError, text)
	}
	reqs := d.Requests()
	if len(reqs) != 1 || !reqs[0].Stream() {
		t.Fatalf("%d upstream requests, want 1 streamed request (no retry)", len(reqs))
	}
}

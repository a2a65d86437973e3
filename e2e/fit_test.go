package e2e

// Results fit their host (issue 26): a job's payload stays within the
// host's budget, leaving its large parts out with the call that fetches
// them, and deepseek_agent_fetch pages them back byte for byte.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// bigWrite is a turn writing a text file of about 200 KiB into ws.
func bigWrite(ws string) (dt.Turn, string) {
	var b strings.Builder
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "line %05d of the generated report: ü ✓\n", i)
	}
	return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "report.txt"), "content": b.String()})), b.String()
}

// A host the bridge does not know gets the default budget (Codex's 10 KiB
// clip): the payload of a job whose diff is 200 KiB stays under it, names
// the diff as left out, and the paged fetch returns the whole diff the
// bridge kept, byte for byte.
func TestPayloadFitsItsHost(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_RESULT_BUDGET": ""})
	ws := a.workspace(t, nil)
	write, content := bigWrite(ws)
	// The Write's 200 KiB input comes back in the approval child's answer:
	// Claude Code had cut it at MAX_MCP_OUTPUT_TOKENS ("Permission prompt
	// tool returned an invalid result") until the harness raised it.
	var got string
	a.d.ScriptAnthropic(write, dt.Func(func(r dt.Request) dt.Turn {
		got = strings.Join(r.ToolResultTexts(), "|")
		return dt.Text("Wrote report.txt.")
	}))
	cs := goSDKClient(t, a.URL())
	defer func() {
		if t.Failed() {
			t.Logf("the Write's result: %.500s", got)
		}
	}()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_agent_start", Arguments: map[string]any{"task": "Write the report.", "workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	var p tools.AgentJobPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Status != "done" {
		t.Fatalf("start: %v %s\n%s", err, p.Status, text)
	}
	if n := len(raw) + len(text); n > tools.DefaultResultBudget {
		t.Errorf("the result weighs %d bytes, over the default budget %d", n, tools.DefaultResultBudget)
	}
	var fetch string
	for _, o := range p.Omitted {
		if o.Part == "diff" {
			fetch = o.Fetch
		}
	}
	if fetch == "" || p.Diff != "" || !strings.Contains(text, fetch) {
		t.Fatalf("the diff is not named as left out: omitted %+v, diff %d bytes, files written %v, ledger %+v, changes %+v\n%s", p.Omitted, len(p.Diff), p.FilesWritten, p.Ledger, p.Changes, text)
	}
	var joined strings.Builder
	for offset, pages := 0, 0; ; pages++ {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_agent_fetch", Arguments: map[string]any{"job_id": p.JobID, "part": "diff", "offset": offset, "limit": 65536}})
		if err != nil || res.IsError || pages > 20 {
			t.Fatalf("fetch at %d: %v %+v", offset, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var pg tools.FetchOutput
		if err := json.Unmarshal(b, &pg); err != nil {
			t.Fatal(err)
		}
		joined.WriteString(pg.Text)
		if pg.NextOffset == 0 {
			break
		}
		offset = pg.NextOffset
	}
	kept, err := os.ReadFile(filepath.Join(a.dir().ChangesDir(p.JobID), changes.DiffFile))
	if err != nil {
		t.Fatal(err)
	}
	// The same part as an MCP resource, a page at a time.
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "job://" + p.JobID + "/diff?offset=0&limit=65536"})
	if err != nil || len(rr.Contents) != 1 || !strings.HasPrefix(string(kept), rr.Contents[0].Text) || len(rr.Contents[0].Text) < 60000 || rr.Contents[0].Meta["next_offset"] == nil {
		t.Errorf("job://%s/diff as a resource: %v %+v", p.JobID, err, rr)
	}
	if joined.String() != string(kept) || len(kept) < 200<<10 || !strings.Contains(joined.String(), "+"+strings.SplitN(content, "\n", 2)[0]) {
		t.Errorf("the pages joined to %d bytes; the kept diff is %d bytes", joined.Len(), len(kept))
	}
}

// Claude Code as host gets the same job's payload inline — the JSON of
// structuredContent in its model's tool result, under its 50,000
// characters — not saved to a file.
func TestClaudeCodeHostGetsThePayloadInline(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_RESULT_BUDGET": "", "BRIDGE_CC_APPROVAL": "off"})
	ws := a.workspace(t, nil)
	write, _ := bigWrite(ws)
	a.d.ScriptAnthropic(write, dt.Text("Wrote report.txt."))
	run := runClaudeHost(t, a.URL(), "Hand the task to DeepSeek.",
		toolSearch(ccHostServer, "deepseek_agent_start"),
		mcpCall(ccHostServer, "deepseek_agent_start", map[string]any{"task": "Write the report.", "workspace": ws}),
		dt.Text("The bridge answered."),
	)
	var got string
	for _, r := range run.toolResults() {
		if strings.Contains(r, `"job_id"`) {
			got = r
		}
	}
	var p tools.AgentJobPayload
	if err := json.Unmarshal([]byte(got), &p); err != nil {
		t.Fatalf("the host's model got %.300q, not the payload's JSON inline: %v\nhost stdout:\n%.3000s", got, err, run.Stdout)
	}
	if p.Status != "done" || len(got) > 50_000 || len(p.Omitted) == 0 || p.Omitted[0].Fetch == "" {
		t.Errorf("the payload the host's model read: status %s, %d characters, omitted %+v", p.Status, len(got), p.Omitted)
	}
}

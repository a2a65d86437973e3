package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// nodeTimeout bounds one run of the TypeScript client.
const nodeTimeout = 90 * time.Second

// nodeBinaries returns the Node binaries to run the TypeScript client with:
// the machine's node (20 here) and the project's Node 22, whichever exist.
// It fails the test when neither exists or the npm packages are missing:
// `make test` installs them through scripts/install.sh.
func nodeBinaries(t testing.TB) map[string]string {
	t.Helper()
	root := moduleRoot(t)
	if _, err := os.Stat(filepath.Join(root, ".cache/npm/node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed: run scripts/install.sh npm (%v)", err)
	}
	out := map[string]string{}
	if p, err := exec.LookPath("node"); err == nil {
		out["node"] = p
	}
	if p := filepath.Join(root, ".cache/bin/node22"); fileExists(p) {
		out["node22"] = p
	}
	if len(out) == 0 {
		t.Fatal("no node binary: install Node or run scripts/install.sh node22")
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// runNodeClient runs test/node/client.mjs SCENARIO with BRIDGE_URL=url (plus env)
// and returns its stdout; a non-zero exit fails the test with stderr.
func runNodeClient(t testing.TB, node, url, scenario string, env map[string]string) []byte {
	t.Helper()
	root := moduleRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(root, "test/node/client.mjs"), scenario)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "BRIDGE_URL=" + url}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s client.mjs %s: %v\nstderr:\n%s\nstdout:\n%s", filepath.Base(node), scenario, err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// TestTypeScriptSDKClient: the official TypeScript SDK client (under Node 20
// and Node 22) against a real `bridge serve`: connect, tools/list,
// deepseek_flash with an onprogress handler, and a wrong secret refused.
func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel()
	nodes := nodeBinaries(t)
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))

	for name, node := range nodes {
		t.Run(name, func(t *testing.T) {
			answer := "TypeScript client answer via " + name
			d.Script(deepseektest.Reasoned("hidden reasoning", answer).
				WithUsage(deepseektest.Usage{InputTokens: 300, CacheHitTokens: 100, OutputTokens: 50, ReasoningTokens: 5}).
				WithChunkDelay(100 * time.Millisecond))
			out := runNodeClient(t, node, b.URL(), "flash", map[string]string{"TASK": "Say the answer.", "MODE": "code"})
			var got struct {
				SDKVersion      string `json:"sdk_version"`
				NodeVersion     string `json:"node_version"`
				ProtocolVersion string `json:"protocol_version"`
				Server          struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"server"`
				Tools []struct {
					Name            string         `json:"name"`
					Annotations     map[string]any `json:"annotations"`
					HasOutputSchema bool           `json:"has_output_schema"`
				} `json:"tools"`
				Result struct {
					IsError bool `json:"isError"`
					Content []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
					StructuredContent flashStructured `json:"structuredContent"`
				} `json:"result"`
				Progress []struct {
					Progress float64 `json:"progress"`
					Total    float64 `json:"total"`
					Message  string  `json:"message"`
				} `json:"progress"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client output is not JSON: %v\n%s", err, out)
			}
			t.Logf("TS SDK %s on Node %s, protocol %s; server %s %s; %d progress notifications",
				got.SDKVersion, got.NodeVersion, got.ProtocolVersion, got.Server.Name, got.Server.Version, len(got.Progress))
			if got.ProtocolVersion == "" {
				t.Errorf("no protocol version negotiated")
			}
			if got.SDKVersion != "1.32.2" {
				t.Errorf("TypeScript SDK %s, want the pinned 1.32.2", got.SDKVersion)
			}
			if got.Server.Name == "" {
				t.Errorf("no serverInfo")
			}
			found := false
			for _, tool := range got.Tools {
				if tool.Name == "deepseek_flash" {
					found = true
					if !tool.HasOutputSchema {
						t.Errorf("deepseek_flash has no outputSchema")
					}
					for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
						if _, ok := tool.Annotations[k]; !ok {
							t.Errorf("deepseek_flash annotation %s not set", k)
						}
					}
				}
			}
			if !found {
				t.Fatalf("deepseek_flash not listed: %+v", got.Tools)
			}
			if got.Result.IsError {
				t.Fatalf("deepseek_flash IsError: %+v", got.Result.Content)
			}
			var text []string
			for _, c := range got.Result.Content {
				text = append(text, c.Text)
			}
			if joined := strings.Join(text, "\n"); !strings.Contains(joined, answer) || strings.Contains(joined, "hidden reasoning") {
				t.Errorf("text %q: want the answer and no reasoning", joined)
			}
			if got.Result.StructuredContent.Answer != answer {
				t.Errorf("structuredContent.answer = %q, want %q", got.Result.StructuredContent.Answer, answer)
			}
			// The TS client awaits its onprogress handlers in order before
			// resolving the call, so every notification sent is in the list.
			if len(got.Progress) == 0 {
				t.Fatalf("onprogress never called")
			}
			for i := 1; i < len(got.Progress); i++ {
				if got.Progress[i].Progress <= got.Progress[i-1].Progress {
					t.Errorf("progress not increasing: %+v", got.Progress)
				}
			}
			if last := got.Progress[len(got.Progress)-1]; last.Total <= 0 || last.Progress != last.Total {
				t.Errorf("last progress %+v, want progress == total; all %+v", last, got.Progress)
			}
		})
		t.Run(name+" wrong secret", func(t *testing.T) {
			out := runNodeClient(t, node, b.BaseURL()+"/mcp/wrong-secret-0123456789abcdef", "connect-fail", nil)
			var got struct {
				Error string `json:"error"`
				Code  any    `json:"code"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client output is not JSON: %v\n%s", err, out)
			}
			if code, _ := got.Code.(float64); code != 404 {
				t.Errorf("TS SDK connect to a wrong secret: code %v (%s), want 404", got.Code, got.Error)
			}
		})
	}
}

package e2e

import (
	"bytes"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// TestNoSecretInLogsOrState drives a debug-level bridge through the paths
// most likely to log a URL, a header or an upstream error — successes,
// upstream 401/402/500 and a reset, wrong secrets, 405, 413, 429, 403, a tunnel
// Host — then stops it and greps every log file and every file in the state
// dir for the path secret and the API key.
func TestNoSecretInLogsOrState(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, mergeEnv(doubleEnv(d), map[string]string{
		"BRIDGE_LOG_LEVEL":      "debug",
		"RATE_LIMIT_PER_MINUTE": "12",
	}))
	base, url, secret := b.BaseURL(), b.URL(), b.Secret()

	cs := goSDKClient(t, url)
	d.Script(
		deepseektest.Text("fine"),
		deepseektest.Error(401),
		deepseektest.Error(402),
		deepseektest.Error(500), deepseektest.Text("after a 500"),
		deepseektest.Reset(), deepseektest.Text("after a reset"),
	)
	var errorTexts []string
	for i := range 4 {
		res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "call " + string(rune('A'+i))}))
		if err != nil {
			errorTexts = append(errorTexts, err.Error())
			continue
		}
		errorTexts = append(errorTexts, textOf(res))
	}
	for _, txt := range errorTexts {
		if strings.Contains(txt, secret) || strings.Contains(txt, d.Key()) {
			t.Errorf("a tool result shows the secret or the key: %q", txt)
		}
	}

	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		body         []byte
	}{
		{"POST", "/mcp/wrong-secret-0123456789abcdef", nil, []byte(initializeBody)},
		{"POST", "/mcp", nil, []byte(initializeBody)},
		{"GET", "/mcp/" + secret, nil, nil},
		{"POST", "/mcp/" + secret, map[string]string{"Origin": "https://evil.example"}, []byte(initializeBody)},
		{"POST", "/mcp/" + secret, map[string]string{"Host": "abc.trycloudflare.com"}, []byte(initializeBody)},
		{"POST", "/mcp/" + secret + "?token=" + secret, nil, []byte(initializeBody)},
		{"POST", "/mcp/" + secret, nil, bytes.Repeat([]byte("y"), 3<<20)},
	} {
		rawDo(t, c.method, base+c.path, c.body, c.hdr)
	}
	limited := false
	for i := range 20 {
		if rawDo(t, "POST", url, []byte(toolsCallBody(500+i)), nil).status == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Errorf("never rate limited at 12 per minute")
	}

	b.Stop()
	logFile := b.Env()["BRIDGE_LOG_FILE"]
	if st, err := os.Stat(logFile); err != nil || st.Size() == 0 {
		t.Fatalf("the debug log %s is missing or empty (%v): nothing was checked", logFile, err)
	}
	files := b.LogFiles()
	err := filepath.WalkDir(b.StateDir(), func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	assertNotInFiles(t, files, secret, d.Key())
	t.Logf("grepped %d files for the secret and the key", len(files))
}

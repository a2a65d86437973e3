package cli

import (
	"strings"
	"testing"
)

func TestMaskWriterCatchesSplitSecret(t *testing.T) {
	m := &masker{}
	m.add(testSecret)
	var b strings.Builder
	w := &maskWriter{m: m, w: &b}
	half := len(testSecret) / 2
	w.Write([]byte("url: http://x/mcp/" + testSecret[:half]))
	w.Write([]byte(testSecret[half:] + "/tail\nnext "))
	w.Flush()
	if strings.Contains(b.String(), testSecret) || !strings.Contains(b.String(), "/mcp/test…/tail\nnext ") {
		t.Fatalf("masked output %q", b.String())
	}
}

func TestMaskShapes(t *testing.T) {
	m := &masker{}
	tests := []struct{ in, want string }{
		{"GET /mcp/4a59c0ffee0123456789abcdef/x", "GET /mcp/4a59…/x"},
		{`"path":"/mcp/old-secret-from-last-week"}`, `"path":"/mcp/old-…"}`},
		{"/mcp/test… stays", "/mcp/test… stays"},
		{"/mcp/short", "/mcp/short"},
		{"MCP_PATH_SECRET=abcdefabcdefabcdef0123 next", "MCP_PATH_SECRET=abcd… next"},
		{"DEEPSEEK_API_KEY=\"sk-0123456789abcdef0123\"", "DEEPSEEK_API_KEY=\"sk-0…\""},
		{"key sk-0123456789abcdef0123456789abcdef used", "key sk-0… used"},
		// Credentials in a URL's userinfo: scheme, host and path stay.
		{"DEEPSEEK_BASE_URL=https://alice:pw-0123@api.example.com/v1", "DEEPSEEK_BASE_URL=https://…@api.example.com/v1"},
		{"cannot reach http://proxy-user:long-password-0123@127.0.0.1:9/x (refused)", "cannot reach http://prox…@127.0.0.1:9/x (refused)"},
		{`{"url":"https://tok@h.example/"}`, `{"url":"https://…@h.example/"}`},
		{"https://…@h.example stays", "https://…@h.example stays"},
		{"http://h.example/a and bob@example.com", "http://h.example/a and bob@example.com"},
	}
	for _, tt := range tests {
		if got := m.apply(tt.in, false); got != tt.want {
			t.Errorf("mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

package harness

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

// parseFile parses a stream-json transcript recorded from Claude Code 2.1.328
// against a local Anthropic double.
func parseFile(t *testing.T, name string) []Event {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	for sc.Scan() {
		evs = append(evs, ParseLine(sc.Bytes(), time.Unix(0, 0))...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestParseRecordedSuccess(t *testing.T) {
	evs := parseFile(t, "testdata/success.jsonl")
	var uses []*ToolUse
	var results []*ToolResult
	var res *Result
	var inits int
	for _, ev := range evs {
		switch ev.Kind {
		case KindInit:
			inits++
			if ev.SessionID == "" || ev.Model != "deepseek-flash" {
				t.Errorf("init = %+v", ev)
			}
		case KindToolUse:
			uses = append(uses, ev.ToolUse)
		case KindToolResult:
			results = append(results, ev.ToolResult)
		case KindResult:
			res = ev.Result
		}
	}
	if inits != 1 {
		t.Fatalf("init events = %d, want 1", inits)
	}
	want := []struct{ name, detail, path, command string }{
		{"Bash", "echo ok", "", "echo ok"},
		{"Write", "/tmp/h4exp/ws/out.txt", "/tmp/h4exp/ws/out.txt", ""},
		{"Edit", "/tmp/h4exp/ws/out.txt", "/tmp/h4exp/ws/out.txt", ""},
		{"Read", "/tmp/h4exp/ws/out.txt", "", ""},
	}
	if len(uses) != len(want) {
		t.Fatalf("tool uses = %d, want %d", len(uses), len(want))
	}
	for i, w := range want {
		u := uses[i]
		if u.Name != w.name || u.Detail != w.detail || u.Path != w.path || u.Command != w.command {
			t.Errorf("use %d = %+v, want %+v", i, *u, w)
		}
	}
	if len(results) != 4 {
		t.Fatalf("tool results = %d, want 4", len(results))
	}
	if results[0].IsError || results[0].ExitCode == nil || *results[0].ExitCode != 0 {
		t.Errorf("bash result = %+v, want exit 0", *results[0])
	}
	if results[1].ExitCode != nil {
		t.Errorf("write result has exit code %d", *results[1].ExitCode)
	}
	if !res.Succeeded() || res.Text != "all done" || res.NumTurns != 5 {
		t.Fatalf("result = %+v", res)
	}
	if res.Usage.InputTokens != 500 || res.Usage.OutputTokens != 100 || res.Usage.CacheReadTokens != 250 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

func TestParseRecordedFailureAndDenials(t *testing.T) {
	evs := parseFile(t, "testdata/denied.jsonl")
	var results []*ToolResult
	var res *Result
	var texts []string
	for _, ev := range evs {
		switch ev.Kind {
		case KindToolResult:
			results = append(results, ev.ToolResult)
		case KindResult:
			res = ev.Result
		case KindText:
			texts = append(texts, ev.Text)
		}
	}
	if len(results) != 3 {
		t.Fatalf("results = %d", len(results))
	}
	if r := results[0]; !r.IsError || r.Denied || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("failing bash = %+v, want exit 3", *r)
	}
	for _, r := range results[1:] {
		if !r.IsError || !r.Denied || r.ExitCode != nil {
			t.Errorf("denied = %+v", *r)
		}
	}
	if len(res.PermissionDenials) != 2 || res.PermissionDenials[0].ToolName != "Write" {
		t.Errorf("denials = %+v", res.PermissionDenials)
	}
	if len(texts) != 1 || texts[0] != "I could not do it" {
		t.Errorf("texts = %q", texts)
	}
}

func TestParseLineShapes(t *testing.T) {
	tests := []struct {
		name string
		line string
		want func(t *testing.T, evs []Event)
	}{
		{"not json", `garbage`, func(t *testing.T, evs []Event) {
			if len(evs) != 0 {
				t.Errorf("got %d events", len(evs))
			}
		}},
		{"error result is not success", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"x"}`, func(t *testing.T, evs []Event) {
			if len(evs) != 1 || evs[0].Result.Succeeded() {
				t.Errorf("got %+v", evs)
			}
		}},
		{"empty success is not success", `{"type":"result","subtype":"success","is_error":false,"result":""}`, func(t *testing.T, evs []Event) {
			if len(evs) != 1 || evs[0].Result.Succeeded() {
				t.Errorf("got %+v", evs)
			}
		}},
		{"long command is clipped and flattened", `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"echo a\n` + strings.Repeat("x", 500) + `"}}]}}`, func(t *testing.T, evs []Event) {
			if len(evs) != 1 || len(evs[0].ToolUse.Detail) > maxDetail+len("…") || strings.Contains(evs[0].ToolUse.Detail, "\n") {
				t.Errorf("got %+v", evs[0].ToolUse)
			}
		}},
		{"thinking tokens", `{"type":"result","subtype":"success","result":"r","usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"thinking_tokens":7}}}`, func(t *testing.T, evs []Event) {
			if evs[0].Result.Usage.ThinkingTokens != 7 {
				t.Errorf("usage = %+v", evs[0].Result.Usage)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.want(t, ParseLine([]byte(tt.line), time.Now())) })
	}
}

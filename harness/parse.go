package harness

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds on what one event carries, so a chatty harness cannot grow the
// registry's memory or the snapshot without limit.
const (
	maxDetail     = 200
	maxResultText = 300
	maxNote       = 2000
)

// line is the union of the stream-json objects Claude Code prints.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Message   json.RawMessage `json:"message"`
	// Parent is set on the messages of a sub-agent; its tool calls count as steps too.
	Parent *string `json:"parent_tool_use_id"`

	// result line
	IsError           bool            `json:"is_error"`
	Result            string          `json:"result"`
	NumTurns          int             `json:"num_turns"`
	Usage             *apiUsage       `json:"usage"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	PermissionDenials []Denial        `json:"permission_denials"`
	TerminalReason    string          `json:"terminal_reason"`
	ToolUseResult     json.RawMessage `json:"tool_use_result"`
	ToolResultMeta    []struct {
		ID               string `json:"id"`
		NonExecutionKind string `json:"non_execution_kind"`
	} `json:"tool_result_meta"`
}

type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

func (u *apiUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{
		InputTokens:         u.InputTokens,
		OutputTokens:        u.OutputTokens,
		CacheReadTokens:     u.CacheReadInputTokens,
		CacheCreationTokens: u.CacheCreationInputTokens,
	}
	if u.OutputTokensDetails != nil {
		out.ThinkingTokens = u.OutputTokensDetails.ThinkingTokens
	}
	return out
}

type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *apiUsage       `json:"usage"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

var exitCodeRE = regexp.MustCompile(`^(?:Error: )?Exit code (\d+)`)

// ParseLine turns one stream-json line into events. Lines that are not JSON
// or carry nothing the registry uses give no events.
func ParseLine(b []byte, now time.Time) []Event {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			return []Event{{Kind: KindInit, Time: now, SessionID: l.SessionID, Model: l.Model}}
		}
	case "assistant":
		return parseAssistant(l, now)
	case "user":
		return parseUser(l, now)
	case "result":
		r := &Result{
			Subtype:           l.Subtype,
			IsError:           l.IsError,
			Text:              l.Result,
			NumTurns:          l.NumTurns,
			Usage:             l.Usage.usage(),
			TotalCostUSD:      l.TotalCostUSD,
			PermissionDenials: l.PermissionDenials,
			SessionID:         l.SessionID,
			TerminalReason:    l.TerminalReason,
		}
		return []Event{{Kind: KindResult, Time: now, SessionID: l.SessionID, Result: r}}
	}
	return nil
}

func parseAssistant(l line, now time.Time) []Event {
	var m message
	if json.Unmarshal(l.Message, &m) != nil {
		return nil
	}
	var blocks []block
	if json.Unmarshal(m.Content, &blocks) != nil {
		return nil
	}
	var evs []Event
	if m.Usage != nil && m.ID != "" {
		u := m.Usage.usage()
		evs = append(evs, Event{Kind: KindUsage, Time: now, MessageID: m.ID, Usage: &u})
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if t := strings.TrimSpace(b.Text); t != "" {
				evs = append(evs, Event{Kind: KindText, Time: now, MessageID: m.ID, Text: Clip(t, maxNote)})
			}
		case "tool_use":
			evs = append(evs, Event{Kind: KindToolUse, Time: now, MessageID: m.ID, ToolUse: toolUse(b)})
		}
	}
	return evs
}

func toolUse(b block) *ToolUse {
	var in map[string]any
	_ = json.Unmarshal(b.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	tu := &ToolUse{ID: b.ID, Name: b.Name}
	switch b.Name {
	case "Bash":
		tu.Command = str("command")
		tu.Detail = tu.Command
	case "Write", "Edit", "MultiEdit":
		tu.Path = str("file_path")
		tu.Detail = tu.Path
	case "NotebookEdit":
		tu.Path = str("notebook_path")
		tu.Detail = tu.Path
	case "Read":
		tu.Detail = str("file_path")
	case "Glob", "Grep":
		tu.Detail = str("pattern")
		if p := str("path"); p != "" {
			tu.Detail += " in " + p
		}
	case "WebFetch":
		tu.Detail = str("url")
	case "WebSearch":
		tu.Detail = str("query")
	case "Task", "Agent":
		tu.Detail = str("description")
	default:
		tu.Detail = string(b.Input)
	}
	tu.Detail = Clip(strings.Join(strings.Fields(tu.Detail), " "), maxDetail)
	return tu
}

func parseUser(l line, now time.Time) []Event {
	var m message
	if json.Unmarshal(l.Message, &m) != nil {
		return nil
	}
	var blocks []block
	if json.Unmarshal(m.Content, &blocks) != nil {
		return nil // a plain string: the task echoed back
	}
	denied := map[string]bool{}
	for _, meta := range l.ToolResultMeta {
		if meta.NonExecutionKind != "" {
			denied[meta.ID] = true
		}
	}
	var evs []Event
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		text := resultText(b.Content)
		tr := &ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError, Denied: denied[b.ToolUseID], Text: Clip(text, maxResultText), Tail: OutputTail(text)}
		tr.ExitCode = exitCode(b.IsError, text, l.ToolUseResult)
		if bg := backgroundTask(l.ToolUseResult); bg != "" {
			// Moved to the background (Claude Code's 2-minute limit, or
			// run_in_background): it is still running, with no status yet.
			tr.ExitCode, tr.Background = nil, bg
		}
		evs = append(evs, Event{Kind: KindToolResult, Time: now, ToolResult: tr})
	}
	return evs
}

// exitCode reads a Bash exit status: an error result starts "Exit code N"; a
// successful one carries {"stdout",…,"interrupted":false} in tool_use_result.
func exitCode(isError bool, text string, meta json.RawMessage) *int {
	if m := exitCodeRE.FindStringSubmatch(text); m != nil && isError {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return &n
		}
	}
	if isError || len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var bash struct {
		Stdout      *string `json:"stdout"`
		Interrupted bool    `json:"interrupted"`
	}
	if json.Unmarshal(meta, &bash) == nil && bash.Stdout != nil && !bash.Interrupted {
		zero := 0
		return &zero
	}
	return nil
}

// backgroundTask is the id of the background task a Bash result says the
// command runs as ("" when it ran to its end).
func backgroundTask(meta json.RawMessage) string {
	if len(meta) == 0 || meta[0] != '{' {
		return ""
	}
	var bash struct {
		BackgroundTaskID string `json:"backgroundTaskId"`
	}
	_ = json.Unmarshal(meta, &bash)
	return bash.BackgroundTaskID
}

func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	if json.Unmarshal(raw, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				sb.WriteString(p.Text)
			}
		}
		return sb.String()
	}
	return ""
}

// Clip shortens s to at most n bytes on a rune boundary, marking the cut
// with "…". The harness clips what it reads from Claude Code; the registry
// clips what it keeps.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

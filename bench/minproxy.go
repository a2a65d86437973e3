package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// MinimalProxy is the second floor of the bench: the least a Go program must
// do for a deepseek_flash call made over MCP's HTTP transport. It takes the
// same JSON-RPC POST (initialize and tools/call; anything else is a
// notification, 202), builds the same chat request the bridge sends for the
// task, streams it from upstream, folds the chunks into the answer with
// encoding/json, and writes the result back as one SSE event — with no MCP
// library, no checks, no logging, no progress and no retries. It is built
// only for the bench (bench/minproxy); its CPU per call is what the bridge's
// is compared with. Safe for concurrent use.
type MinimalProxy struct {
	url, key, model, system string
	maxTokens               int
	hc                      *http.Client
}

// NewMinimalProxy forwards to the chat completions endpoint of baseURL with
// key, as the bridge would with model and maxTokens.
func NewMinimalProxy(baseURL, key, model string, maxTokens int, hc *http.Client) (*MinimalProxy, error) {
	system, err := deepseek.SystemPrompt(deepseek.ModeAnalyze)
	if err != nil {
		return nil, err
	}
	return &MinimalProxy{
		url: strings.TrimRight(baseURL, "/") + "/chat/completions", key: key,
		model: model, system: system, maxTokens: maxTokens, hc: hc,
	}, nil
}

// minimalRequest is the part of a JSON-RPC request the proxy reads.
type minimalRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct {
			Task string `json:"task"`
		} `json:"arguments"`
	} `json:"params"`
}

// ServeHTTP answers one JSON-RPC message.
func (p *MinimalProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req minimalRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch req.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		writeRPCResult(w, req.ID, map[string]any{
			"protocolVersion": ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "bench-minproxy", "version": "1"},
		})
	case "tools/call":
		answer, err := p.flash(r, req.Params.Arguments.Task)
		result := map[string]any{"content": []map[string]any{{"type": "text", "text": answer}}}
		if err != nil {
			result = map[string]any{"content": []map[string]any{{"type": "text", "text": err.Error()}}, "isError": true}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: ")
		writeRPCResult(w, req.ID, result)
		io.WriteString(w, "\n")
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// flash sends the chat request for task and reads the streamed answer.
func (p *MinimalProxy) flash(r *http.Request, task string) (string, error) {
	body, err := chatBody(p.model, p.system, p.maxTokens, task)
	if err != nil {
		return "", err
	}
	resp, err := postChat(r.Context(), p.hc, p.url, p.key, body)
	if err != nil {
		return "", err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", &rpcError{Code: resp.StatusCode, Message: "upstream answered " + resp.Status}
	}
	return readChatStream(resp.Body)
}

func writeRPCResult(w io.Writer, id json.RawMessage, result any) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
	w.Write(append(b, '\n'))
}

// chatBody is the chat request of deepseek.Client.Flash for task (mode
// analyze, no files), field for field and in order: the double gets the
// same bytes from the bridge, the minimal proxy and the direct client.
func chatBody(model, system string, maxTokens int, task string) ([]byte, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	return json.Marshal(struct {
		Model         string        `json:"model"`
		Messages      []message     `json:"messages"`
		MaxTokens     int           `json:"max_tokens"`
		Stream        bool          `json:"stream"`
		StreamOptions streamOptions `json:"stream_options"`
	}{
		Model: model,
		Messages: []message{
			{Role: "system", Content: system},
			{Role: "user", Content: deepseek.UserMessage(task, "")},
		},
		MaxTokens: maxTokens, Stream: true, StreamOptions: streamOptions{IncludeUsage: true},
	})
}

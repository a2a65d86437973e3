package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
)

// ProtocolVersion is the MCP revision the load driver speaks.
const ProtocolVersion = "2025-11-25"

// maxMessage bounds one JSON-RPC message or SSE event the driver reads.
const maxMessage = 4 << 20

// Client is one MCP client over Streamable HTTP, as a host is: it
// initializes once, then sends tools/call requests and reads the answer as
// JSON or as an SSE stream (skipping notifications and comments). It is not
// safe for concurrent calls; the load driver gives each simulated client its
// own.
type Client struct {
	url     string
	hc      *http.Client
	session string // Mcp-Session-Id, if the server gave one
	proto   string // negotiated protocol version
	nextID  atomic.Int64
}

// NewClient makes a client of the MCP endpoint url (http://HOST:PORT/mcp/SECRET).
func NewClient(url string, hc *http.Client) *Client {
	return &Client{url: url, hc: hc}
}

// ToolResult is the part of a tools/call result the driver checks.
type ToolResult struct {
	Text       string          // the text blocks, joined
	IsError    bool            // the result's isError
	Structured json.RawMessage // structuredContent
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Initialize runs the MCP handshake: initialize, then notifications/initialized.
func (c *Client) Initialize(ctx context.Context) error {
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bridge-bench", "version": "1"},
	}
	raw, err := c.call(ctx, "initialize", params)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ProtocolVersion == "" {
		return fmt.Errorf("initialize: no protocolVersion in %.200q", raw)
	}
	c.proto = res.ProtocolVersion
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	resp, err := c.post(ctx, body)
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	drain(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return nil
}

// CallTool sends tools/call and waits for its answer. A JSON-RPC error or an
// HTTP status other than 200 is an error; a tool's own error result is not
// (see ToolResult.IsError).
func (c *Client) CallTool(ctx context.Context, name string, args any) (ToolResult, error) {
	raw, err := c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return ToolResult{}, fmt.Errorf("tools/call %s: %w", name, err)
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return ToolResult{}, fmt.Errorf("tools/call %s: result: %w", name, err)
	}
	out := ToolResult{IsError: res.IsError, Structured: res.StructuredContent}
	for _, b := range res.Content {
		if b.Type == "text" {
			out.Text += b.Text
		}
	}
	return out, nil
}

// call sends one request and returns the result of the response with its id.
func (c *Client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	want := strconv.FormatInt(id, 10)
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var msg *rpcMessage
	switch ct {
	case "application/json":
		msg, err = readJSONAnswer(resp.Body, want)
	case "text/event-stream":
		msg, err = readSSEAnswer(resp.Body, want)
	default:
		return nil, fmt.Errorf("unexpected Content-Type %q", resp.Header.Get("Content-Type"))
	}
	if err != nil {
		return nil, err
	}
	if msg.Error != nil {
		return nil, msg.Error
	}
	return msg.Result, nil
}

func (c *Client) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.proto != "" {
		req.Header.Set("MCP-Protocol-Version", c.proto)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	return c.hc.Do(req)
}

func readJSONAnswer(r io.Reader, id string) (*rpcMessage, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxMessage+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMessage {
		return nil, errors.New("answer over the size limit")
	}
	var m rpcMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("answer is not JSON-RPC: %w", err)
	}
	if string(m.ID) != id {
		return nil, fmt.Errorf("answer has id %s, want %s", m.ID, id)
	}
	return &m, nil
}

// readSSEAnswer reads SSE events until the response with id arrives; other
// messages (progress notifications) and comments (keepalives) are skipped.
func readSSEAnswer(r io.Reader, id string) (*rpcMessage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), maxMessage)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0: // end of an event
			if len(data) == 0 {
				continue
			}
			var m rpcMessage
			if err := json.Unmarshal(data, &m); err != nil {
				return nil, fmt.Errorf("SSE event is not JSON-RPC: %w", err)
			}
			data = data[:0]
			if m.Method == "" && string(m.ID) == id {
				return &m, nil
			}
		case line[0] == ':': // comment
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("SSE stream: %w", err)
	}
	if len(data) > 0 { // a last event without its blank line
		var m rpcMessage
		if json.Unmarshal(data, &m) == nil && m.Method == "" && string(m.ID) == id {
			return &m, nil
		}
	}
	return nil, errors.New("SSE stream ended without the answer")
}

// drain reads what is left of a body (bounded) so its connection is reused.
func drain(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, maxMessage))
	rc.Close()
}

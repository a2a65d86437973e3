package mcpsock

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// maxLine bounds one message read from the host. The daemon refuses bodies
// above 2 MB itself (413, answered as a JSON-RPC error); this only keeps a
// runaway line from filling memory.
const maxLine = 8 << 20

// HeaderHostElicits is set to "1" on every message the forwarder sends once
// the host's initialize declared that it answers elicitations: the daemon
// serves each message on its own and keeps no initialize.
const HeaderHostElicits = "X-Bridge-Host-Elicits"

// HeaderHostName carries the name the host's initialize gave in its
// clientInfo (for a host before protocol 2026-07-28, whose calls do not):
// the daemon fits each result to what that host keeps.
const HeaderHostName = "X-Bridge-Host-Name"

// Options are what Forward needs besides the two streams.
type Options struct {
	// Socket is the daemon's unix socket.
	Socket string
	Log    zerolog.Logger
	// Redial is called when the socket refuses a connection (the daemon was
	// stopped or reloaded mid-session); nil error means try once more. nil:
	// the call is answered with the error at once.
	Redial func(ctx context.Context) error
}

// Forward carries one stdio MCP session over the daemon's socket until in
// ends, then waits for the calls still answering; when ctx ends, calls still
// running are dropped (their connections close). Every message the host
// writes is POSTed as it is — the bytes of ids and progress tokens are
// untouched — and every message of the answer (a JSON body, or each event of
// an SSE stream: progress notifications first, then the result) is written
// to out as one line.
//
// notifications/cancelled is not sent on: the daemon keys calls by id alone
// across clients, so it ignores cancels; closing the call's connection is the
// cancel it honours, and the host then gets no answer to the call, as the
// protocol says. Agent jobs started by a call belong to the daemon and
// outlive this session.
func Forward(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	f := &forwarder{o: o, hc: HTTPClient(o.Socket), out: out, inflight: map[string]context.CancelFunc{},
		asked: map[string]string{}, prefix: rand.Text()}
	defer f.hc.CloseIdleConnections()
	callCtx, dropAll := context.WithCancel(ctx)
	defer dropAll()
	readDone := make(chan error, 1)
	go func() { // owner: Forward; ends with in (closed below when ctx ends first)
		readDone <- f.readAll(callCtx, in)
	}()
	var readErr error
	select {
	case readErr = <-readDone:
	case <-ctx.Done():
		// The host asked us to stop (SIGINT, SIGTERM) with its stdin still
		// open: stop reading, drop the calls.
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
	}
	f.mu.Lock()
	f.closing = true // no call starts after this: wg.Wait below may begin
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }() // owner: Forward; joined below
	select {
	case <-done:
	case <-ctx.Done():
		dropAll()
		<-done
	}
	return readErr
}

// readAll dispatches every line of in until it ends (nil at EOF).
func (f *forwarder) readAll(ctx context.Context, in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 && ctx.Err() == nil {
			f.dispatch(ctx, bytes.TrimSpace(line))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

type forwarder struct {
	o  Options
	hc *http.Client

	outMu sync.Mutex
	out   io.Writer

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // calls by their compacted id
	closing  bool                          // Forward is returning: no new calls
	wg       sync.WaitGroup
	// elicits: the host's initialize declared the elicitation capability;
	// host is the name in its clientInfo.
	elicits bool
	host    string
	// Each call goes out under a session id of its own (prefix-n), so that
	// the daemon can route the host's answer to a request it sent during
	// that call (elicitation/create) back to it; asked maps such a
	// request's id to its call's session id until the host answers.
	prefix string
	seq    uint64
	asked  map[string]string
}

// message is what the forwarder reads of a host's message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// session is the Mcp-Session-Id the message goes out under.
	session string
}

func (f *forwarder) dispatch(ctx context.Context, line []byte) {
	if line[0] == '[' { // a batch: the daemon answers it (with an error that explains)
		f.goCall(ctx, line, message{})
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		f.writeError(nil, -32700, "parse error: each line must be one JSON-RPC message")
		return
	}
	switch {
	case m.Method == string(mcp.MethodNotificationCancelled):
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			f.cancel(p.RequestID)
		}
	case m.Method == "":
		// The host answering a request the daemon sent during one of its
		// calls: it goes back under that call's session id.
		f.mu.Lock()
		session, ok := f.asked[idKey(m.ID)]
		delete(f.asked, idKey(m.ID))
		f.mu.Unlock()
		if !ok {
			f.o.Log.Debug().Msg("a response from the host to no request of the daemon's: dropped")
			return
		}
		m.session = session
		f.goCall(ctx, line, m)
	default:
		if m.Method == string(mcp.MethodInitialize) {
			var p struct {
				Capabilities struct {
					Elicitation json.RawMessage `json:"elicitation"`
				} `json:"capabilities"`
				ClientInfo struct {
					Name string `json:"name"`
				} `json:"clientInfo"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				f.mu.Lock()
				f.elicits = len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
				f.host = headerSafe(p.ClientInfo.Name)
				f.mu.Unlock()
			}
		}
		f.goCall(ctx, line, m)
	}
}

func (f *forwarder) goCall(ctx context.Context, body []byte, m message) {
	key := idKey(m.ID)
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		cancel()
		return
	}
	if key != "" && m.Method != "" {
		f.inflight[key] = cancel
	}
	if m.session == "" {
		f.seq++
		m.session = fmt.Sprintf("stdio-%s-%d", f.prefix, f.seq)
	}
	f.wg.Add(1)
	f.mu.Unlock()
	go func() { // owner: forwarder; joined by Forward
		defer f.wg.Done()
		defer func() {
			if key != "" && m.Method != "" {
				f.mu.Lock()
				delete(f.inflight, key)
				f.mu.Unlock()
			}
			cancel()
		}()
		f.call(ctx, body, m)
	}()
}

func (f *forwarder) cancel(id json.RawMessage) {
	f.mu.Lock()
	cancel := f.inflight[idKey(id)]
	f.mu.Unlock()
	if cancel != nil {
		f.o.Log.Debug().Msg("call cancelled by the host: closing its connection")
		cancel()
	}
}

// idKey is an id as compact JSON ("" for none or null).
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if len(id) == 0 || json.Compact(&b, id) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}

// call POSTs one message and writes what comes back.
func (f *forwarder) call(ctx context.Context, body []byte, m message) {
	resp, err := f.post(ctx, body, m)
	if err != nil && f.o.Redial != nil && ctx.Err() == nil && refused(err) {
		f.o.Log.Info().Err(err).Msg("the daemon's socket refused the call; reaching the daemon again")
		if rerr := f.o.Redial(ctx); rerr == nil {
			resp, err = f.post(ctx, body, m)
		} else {
			err = rerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return // cancelled by the host, or the session ends: no answer
		}
		f.o.Log.Warn().Err(err).Str("method", m.Method).Msg("the daemon did not answer")
		f.writeError(m.ID, -32603, fmt.Sprintf("the bridge daemon did not answer (%v): check it with `bridgectl status` and `bridgectl logs`", err))
		return
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		f.relaySSE(ctx, resp.Body, m)
	case strings.HasPrefix(ct, "application/json"):
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxLine))
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			f.writeMessage(b, m)
		}
	case resp.StatusCode == http.StatusAccepted || idKey(m.ID) == "":
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	default: // a plain-text refusal (413, 405, ...): answered as a JSON-RPC error
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		f.writeError(m.ID, -32600, fmt.Sprintf("the bridge answered %d: %s", resp.StatusCode, strings.TrimSpace(string(b))))
	}
}

// post sends body to the daemon. A message that declares protocol
// 2026-07-28 or later in its _meta gets the headers that revision requires
// over HTTP (Mcp-Protocol-Version, Mcp-Method, Mcp-Name); the bridge's tools
// bind no parameter to a header, so there are no Mcp-Param-* headers.
func (f *forwarder) post(ctx context.Context, body []byte, m message) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", m.session)
	f.mu.Lock()
	elicits, host := f.elicits, f.host
	f.mu.Unlock()
	if elicits {
		req.Header.Set(HeaderHostElicits, "1")
	}
	if host != "" {
		req.Header.Set(HeaderHostName, host)
	}
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &p) == nil {
		if v := p.Meta.ProtocolVersion(); mcp.IsModernProtocol(v) {
			req.Header.Set(mcp.HeaderProtocolVersion, v)
			req.Header.Set(mcp.HeaderMethod, m.Method)
			if name, ok := mcp.ExtractHeaderName(mcp.MCPMethod(m.Method), m.Params); ok && mcp.MethodRequiresNameHeader(mcp.MCPMethod(m.Method)) {
				req.Header.Set(mcp.HeaderName, name)
			}
		}
	}
	return f.hc.Do(req)
}

// relaySSE writes each event's data as one message; comments (the daemon's
// keepalives) and other fields are dropped.
func (f *forwarder) relaySSE(ctx context.Context, r io.Reader, m message) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data bytes.Buffer
	for {
		line, err := readLine(br)
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				f.noteRequest(data.Bytes(), m)
				f.writeMessage(data.Bytes(), m)
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		}
		if err != nil {
			if data.Len() > 0 {
				f.writeMessage(data.Bytes(), m)
			}
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				f.o.Log.Warn().Err(err).Str("method", m.Method).Msg("the daemon's answer broke off")
				f.writeError(m.ID, -32603, fmt.Sprintf("the bridge daemon's answer broke off (%v): check it with `bridgectl status`", err))
			}
			return
		}
	}
}

// noteRequest remembers a request the daemon sends the host during call m
// (it has a method and an id), so the host's answer goes back under m's
// session id.
func (f *forwarder) noteRequest(b []byte, m message) {
	var r message
	if json.Unmarshal(b, &r) != nil || r.Method == "" || idKey(r.ID) == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) < maxAsked {
		f.asked[idKey(r.ID)] = m.session
	}
}

// maxAsked bounds the daemon's requests waiting for the host's answer.
const maxAsked = 1024

// writeMessage writes one JSON message as one line; a call the host
// cancelled gets nothing more.
func (f *forwarder) writeMessage(b []byte, m message) {
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		f.o.Log.Warn().Err(err).Str("method", m.Method).Msg("the daemon answered with something that is not JSON; dropped")
		f.writeError(m.ID, -32603, "the bridge daemon answered with something that is not JSON: see `bridgectl logs`")
		return
	}
	line.WriteByte('\n')
	f.outMu.Lock()
	defer f.outMu.Unlock()
	if _, err := f.out.Write(line.Bytes()); err != nil {
		f.o.Log.Debug().Err(err).Msg("write to the host")
	}
}

// writeError answers id with a JSON-RPC error (nothing for a notification,
// except a parse error, which has no id to answer).
func (f *forwarder) writeError(id json.RawMessage, code int, text string) {
	key := idKey(id)
	if key == "" && code != -32700 {
		return
	}
	if key == "" {
		key = "null"
	}
	msg, _ := json.Marshal(text)
	f.writeMessage([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, key, code, msg)), message{})
}

// readLine reads one line of at most maxLine bytes; a longer one is read to
// its end and returned cut (the daemon then refuses it as not JSON or too large).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// headerSafe is a host's name as a header value: printable ASCII, at most
// 64 bytes ("" when it has anything else).
func headerSafe(name string) string {
	if len(name) > 64 {
		return ""
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return name
}

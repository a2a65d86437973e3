package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// Why this file exists: mcp-go v1.2.1 (streamable_http.go, handlePost) hands
// each notification from the session's channel to a forwarder goroutine that
// then takes the response mutex; when the handler returns, the response path
// takes that mutex first, drains the channel, closes `done` and unlocks — and
// the forwarder, still holding the notification it already took off the
// channel, sees `done` closed and drops it (upstream PR #969). The last
// notification before a tool returns is the one most often lost.
//
// The fix sits at the transport boundary, for every tool: during a tools/call
// over HTTP the handler runs with a session whose notification channel
// belongs to a pump of ours. The pump writes each notification as an SSE
// event straight to the response (through sseWriter, which serialises all
// writes) and is drained and joined before the handler returns, so mcp-go's
// forwarder never holds anything. The same writer carries the keepalive
// comments.

// sseWriter wraps the MCP route's ResponseWriter: every write is serialised,
// SSE responses get X-Accel-Buffering: no, and a second WriteHeader (mcp-go
// upgrading a response we already started) is ignored.
type sseWriter struct {
	mu          sync.Mutex
	w           http.ResponseWriter
	wroteHeader bool
	lastWrite   time.Time
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, lastWrite: time.Now()}
}

func (s *sseWriter) Header() http.Header { return s.w.Header() }

func (s *sseWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeHeaderLocked(code)
}

func (s *sseWriter) writeHeaderLocked(code int) {
	if s.wroteHeader {
		return
	}
	s.wroteHeader = true
	if isEventStream(s.w.Header()) {
		s.w.Header().Set("X-Accel-Buffering", "no")
	}
	s.w.WriteHeader(code)
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= 17 && ct[:17] == "text/event-stream"
}

func (s *sseWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeHeaderLocked(http.StatusOK)
	s.lastWrite = time.Now()
	return s.w.Write(p)
}

func (s *sseWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *sseWriter) flushLocked() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sseWriter) Unwrap() http.ResponseWriter { return s.w }

// startSSELocked commits the response as an SSE stream if nothing was written yet.
func (s *sseWriter) startSSELocked() error {
	if s.wroteHeader {
		if !isEventStream(s.w.Header()) {
			return fmt.Errorf("response already started as %q", s.w.Header().Get("Content-Type"))
		}
		return nil
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	s.writeHeaderLocked(http.StatusOK)
	return nil
}

// event writes one JSON-RPC message as an SSE event and flushes it.
func (s *sseWriter) event(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startSSELocked(); err != nil {
		return err
	}
	s.lastWrite = time.Now()
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", data); err != nil {
		return err
	}
	s.flushLocked()
	return nil
}

// comment writes an SSE comment line, which every client ignores but which
// keeps proxies (Cloudflare's 100 s edge timeout) from cutting the stream.
func (s *sseWriter) comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startSSELocked(); err != nil {
		return err
	}
	s.lastWrite = time.Now()
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	s.flushLocked()
	return nil
}

func (s *sseWriter) idle() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.lastWrite)
}

type sseKey struct{}

func withSSEWriter(ctx context.Context, w *sseWriter) context.Context {
	return context.WithValue(ctx, sseKey{}, w)
}

func sseFrom(ctx context.Context) *sseWriter {
	w, _ := ctx.Value(sseKey{}).(*sseWriter)
	return w
}

// callStream is the per-tools/call state shared by the progress reporter
// and the call's loop (keepalive and pump).
type callStream struct {
	token mcp.ProgressToken // nil: the client asked for no progress
	sse   *sseWriter        // nil on stdio

	// sendMu is held from picking a progress value to handing the
	// notification to the session, so the values leave in the order they
	// were picked (the handler and the keepalive both report). The session
	// channel is FIFO with one reader, so that order is the wire order.
	sendMu sync.Mutex

	mu       sync.Mutex
	last     float64 // last progress value sent for token
	sentAny  bool
	lastSent time.Time
}

// nextProgress makes progress strictly increasing, as the spec requires.
func (c *callStream) nextProgress(p float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sentAny && p <= c.last {
		p = c.last + 1
	}
	c.last, c.sentAny, c.lastSent = p, true, time.Now()
	return p
}

// observe records a progress value sent by other code for our token.
func (c *callStream) observe(n mcp.JSONRPCNotification) {
	if n.Method != "notifications/progress" {
		return
	}
	var v float64
	switch p := n.Params.AdditionalFields["progress"].(type) {
	case float64:
		v = p
	case int:
		v = float64(p)
	case int64:
		v = float64(p)
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sentAny || v > c.last {
		c.last, c.sentAny = v, true
	}
	c.lastSent = time.Now()
}

func (c *callStream) idle() time.Duration {
	if c.sse != nil {
		return c.sse.idle()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastSent)
}

type callStreamKey struct{}

var _ tools.Reporter = (*progressReporter)(nil)

// progressReporter sends notifications/progress for one tools/call when the
// client sent _meta.progressToken; without a token Report does nothing. Values
// are made strictly increasing. It is the tools' Reporter (toolMiddleware).
type progressReporter struct {
	ctx context.Context
	cs  *callStream
}

// newProgressReporter works inside toolMiddleware (where the call's stream
// lives) and outside it (a handler called directly, e.g. in a unit test).
func newProgressReporter(ctx context.Context, req mcp.CallToolRequest) *progressReporter {
	cs, _ := ctx.Value(callStreamKey{}).(*callStream)
	if cs == nil {
		cs = &callStream{token: progressToken(req), lastSent: time.Now()}
	}
	return &progressReporter{ctx: ctx, cs: cs}
}

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// Report sends one progress notification; total 0 means unknown.
func (p *progressReporter) Report(progress, total float64, message string) {
	if p == nil || p.cs.token == nil {
		return
	}
	srv := mcpserver.ServerFromContext(p.ctx)
	if srv == nil {
		return
	}
	p.cs.sendMu.Lock()
	defer p.cs.sendMu.Unlock()
	params := map[string]any{"progressToken": p.cs.token, "progress": p.cs.nextProgress(progress)}
	if total > 0 {
		params["total"] = total
	}
	if message != "" {
		params["message"] = message
	}
	// Never blocks: mcp-go drops a notification when the channel is full.
	_ = srv.SendNotificationToClient(p.ctx, "notifications/progress", params)
}

// Done sends the last notification of the call: progress == total, so a
// client that shows a bar can show it full.
func (p *progressReporter) Done(message string) {
	if p == nil || p.cs.token == nil {
		return
	}
	p.cs.mu.Lock()
	final := p.cs.last + 1
	if !p.cs.sentAny {
		final = 1
	}
	p.cs.mu.Unlock()
	p.Report(final, final, message)
}

// toolMiddleware wraps every tool handler: the response becomes SSE, the
// call's notifications go through our pump (HTTP), and bytes keep moving
// while the handler runs. One goroutine per call does both (callLoop): with
// 1,000 long-polls held, each goroutine and its stack is memory the owner
// pays for (docs/PERFORMANCE.md).
func (s *Server) toolMiddleware(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if taskID(ctx) != "" {
			// A task's call: its request was answered with the task, so
			// nothing more goes on that stream (no progress, no keepalive).
			ctx = tools.WithHost(ctx, host(ctx))
			start := time.Now()
			res, err := next(ctx, req)
			s.logCall(req, res, err, time.Since(start))
			return res, err
		}
		sess := mcpserver.ClientSessionFromContext(ctx)
		if up, ok := sess.(mcpserver.SessionWithStreamableHTTPConfig); ok {
			up.UpgradeToSSEWhenReceiveNotification()
		}
		cs := &callStream{token: progressToken(req), sse: sseFrom(ctx), lastSent: time.Now()}
		var pump *notifyPump
		if cs.sse != nil && sess != nil {
			pump = newPump(sess, cs)
			ctx = s.mcp.WithContext(ctx, pump)
		}
		ctx = context.WithValue(ctx, callStreamKey{}, cs)
		if s.hostMayAsk(ctx) {
			ctx = tools.WithHostAsk(ctx)
		}
		ctx = tools.WithHost(ctx, host(ctx))
		ctx = tools.WithReporter(ctx, &progressReporter{ctx: ctx, cs: cs})
		// Deferred, so a panicking handler (recovered by mcp-go further out)
		// leaves no goroutine behind.
		defer s.startCallLoop(ctx, cs, pump)()
		start := time.Now()
		res, err := next(ctx, req)
		s.logCall(req, res, err, time.Since(start))
		return res, err
	}
}

// logCall writes the one line a person reads for each tool call: the tool,
// its job when it names one, how long it took, and an error's first words.
func (s *Server) logCall(req mcp.CallToolRequest, res *mcp.CallToolResult, err error, took time.Duration) {
	took = took.Round(100 * time.Microsecond)
	ev := s.log.Info().Str("tool", req.Params.Name).Dur("took", took)
	if id, ok := req.GetArguments()["job_id"].(string); ok && id != "" {
		ev = ev.Str("job", clipText(id, 64))
	}
	switch {
	case err != nil:
		ev.Str("error", clipText(err.Error(), 200)).Msgf("tool %s failed in %s", req.Params.Name, took)
	case res != nil && res.IsError:
		var text string
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				text = tc.Text
			}
		}
		ev.Bool("is_error", true).Msgf("tool %s answered with an error in %s: %s", req.Params.Name, took, clipText(text, 200))
	default:
		ev.Msgf("tool %s answered in %s", req.Params.Name, took)
	}
}

// clipText is s's first line, cut to at most n bytes (harness.Clip).
func clipText(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return harness.Clip(s, n)
}

// startCallLoop starts the one goroutine a tools/call owns. It writes the
// call's notifications to the response as they come (when pump is set:
// HTTP) and speaks up once the call has been silent for three quarters of
// KeepaliveInterval (quietLimit): a progress notification when the client
// gave a token (it also resets the client's own request timeout), else an
// SSE comment. The returned func writes what the handler sent before
// returning, all of it, and joins the goroutine.
func (s *Server) startCallLoop(ctx context.Context, cs *callStream, pump *notifyPump) func() {
	keepalive := cs.token != nil || cs.sse != nil
	if pump == nil && !keepalive {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // owner: the tools/call; joined by the returned func
		defer close(done)
		var notes <-chan mcp.JSONRPCNotification // nil (never ready) without a pump
		if pump != nil {
			notes = pump.ch
		}
		// The timer is set for the moment the silence reaches quietLimit,
		// counted from the last write, so the longest gap on the wire is
		// quietLimit plus the time to write — under the interval by a
		// quarter of it. A tool that sends its own progress more often than
		// that is never interleaved with.
		var tick <-chan time.Time
		var timer *time.Timer
		if keepalive {
			timer = time.NewTimer(s.quietLimit() - cs.idle())
			defer timer.Stop()
			tick = timer.C
		}
		gone := ctx.Done()
		for {
			select {
			case n := <-notes:
				pump.write(n)
			case <-tick:
				pump.drain() // what is queued goes first: it may end the silence
				timer.Reset(s.keepalive(ctx, cs))
			case <-gone: // the client went away: no more keepalives, but the
				tick, gone = nil, nil // handler's notifications are still written
			case <-stop:
				pump.drain()
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// quietLimit is the silence after which a call speaks up: three quarters of
// KeepaliveInterval (11.25 s of the default 15 s).
func (s *Server) quietLimit() time.Duration {
	return s.o.KeepaliveInterval - s.o.KeepaliveInterval/4
}

// keepalive speaks up when the call has been silent for quietLimit, and
// says how long until the silence could reach it again.
func (s *Server) keepalive(ctx context.Context, cs *callStream) time.Duration {
	quiet := s.quietLimit()
	if idle := cs.idle(); idle < quiet {
		return quiet - idle
	}
	if cs.token != nil {
		// Through the session like any progress, so it is ordered with the
		// handler's own (callStream.sendMu); on HTTP the pump's channel gets
		// it and this same loop writes it next.
		cs.mu.Lock()
		next := cs.last + 1
		cs.mu.Unlock()
		newProgressReporter(ctx, mcp.CallToolRequest{}).Report(next, 0, "still working")
		return quiet
	}
	if err := cs.sse.comment("keepalive"); err != nil {
		s.log.Debug().Err(err).Msg("keepalive comment")
	}
	return quiet
}

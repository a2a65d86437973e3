package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// HeaderHostElicits is mcpsock.HeaderHostElicits (which this package cannot
// import: the forwarder's tests run against this server): the socket's
// forwarder sets it to "1" when its host declared elicitation.
const HeaderHostElicits = "X-Bridge-Host-Elicits"

// HeaderHostName is mcpsock.HeaderHostName: the host's clientInfo name as
// the forwarder saw it.
const HeaderHostName = "X-Bridge-Host-Name"

// mcpRoute is the route pattern; it is also what the access log shows, so
// the secret never reaches a log line through the path.
const mcpRoute = "/mcp/{secret}"

// router: the body limit first (nothing else looks at a request before its
// size is known), then the access log, then routing. Every method is routed
// to the MCP entry so that the secret is checked before the method: a wrong
// secret is a 404 whatever the method, and only the right secret learns that
// POST is the one allowed (405 otherwise).
func (s *Server) router() http.Handler { return s.routes(mcpRoute, s.mcpEntry) }

// routes is /health and the MCP endpoint at route, behind the limits, and
// the owner's routes (the socket's only).
func (s *Server) routes(route string, mcp http.HandlerFunc, owner ...func(chi.Router)) http.Handler {
	r := chi.NewRouter()
	r.Use(s.limitBody, s.accessLog)
	r.Get("/health", s.health)
	r.HandleFunc(route, mcp)
	for _, f := range owner {
		f(r)
	}
	return r
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"status": "ok", "version": s.o.Version})
}

// socketRoute is the MCP route on the daemon's unix socket: no secret, the
// socket file's mode (0600 in a 0700 dir) is the credential.
const socketRoute = "/mcp"

// socketRouter is router for the unix socket: the same limits and MCP
// handling, without the capability path.
func (s *Server) socketRouter() http.Handler {
	return s.routes(socketRoute, func(w http.ResponseWriter, r *http.Request) {
		via := viaSocket{elicits: r.Header.Get(HeaderHostElicits) == "1", host: r.Header.Get(HeaderHostName)}
		s.mcpPost(w, r.WithContext(context.WithValue(r.Context(), viaSocketKey{}, via)))
	}, s.secretRoutes)
}

// viaSocket marks a request that came over the daemon's unix socket (a
// host on `bridge stdio`, the owner's own), with what the forwarder saw of
// the host's initialize: whether it answers elicitations.
type viaSocket struct {
	elicits bool
	host    string
}

// host is what a call knows of its host: the clientInfo of the request's
// own _meta (protocol 2026-07-28 on), or of the initialize the socket's
// forwarder saw.
func host(ctx context.Context) tools.Host {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil {
		return tools.Host{Name: info.ClientInfo.Name}
	}
	sock, _ := ctx.Value(viaSocketKey{}).(viaSocket)
	return tools.Host{Name: sock.host}
}

type viaSocketKey struct{}

// hostMayAsk reports whether a tool call may ask its host's user to decide
// an approval: BRIDGE_HOST_APPROVALS opens the call's transport, and the host
// answers elicitations (declared in the request's own capabilities from
// protocol 2026-07-28, or in its initialize as the socket's forwarder saw
// it; over stateless HTTP an older host's initialize is not kept, so it is
// not asked).
func (s *Server) hostMayAsk(ctx context.Context) bool {
	sock, onSocket := ctx.Value(viaSocketKey{}).(viaSocket)
	switch s.o.Config.HostApprovals {
	case config.HostApprovalsOff:
		return false
	case config.HostApprovalsAll:
	default: // config.HostApprovalsSocket
		if !onSocket {
			return false
		}
	}
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	return onSocket && sock.elicits
}

func (s *Server) mcpEntry(w http.ResponseWriter, r *http.Request) {
	if !s.secretOK(chi.URLParam(r, "secret")) {
		// Byte for byte what chi answers for a path that does not exist.
		http.NotFound(w, r)
		return
	}
	s.mcpPost(w, r)
}

// mcpPost is everything the MCP endpoint does once the caller is admitted
// (the right path secret over TCP, the socket's file mode over unix).
func (s *Server) mcpPost(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed: this endpoint takes POST (stateless Streamable HTTP)", http.StatusMethodNotAllowed)
		return
	}
	if !originAllowed(r, s.o.Config.AllowedOrigins) {
		origin := r.Header.Get("Origin")
		s.log.Warn().Str("origin", origin).Msg("refused a request with a foreign Origin; if it is your host's, add it to BRIDGE_ALLOWED_ORIGINS (comma separated) and restart: BRIDGE_ALLOWED_ORIGINS=" + logValue(origin))
		http.Error(w, "forbidden: requests from a browser page on another site are refused", http.StatusForbidden)
		return
	}
	body := bodyFrom(r.Context())
	if nestedDeeper(body, MaxJSONDepth) {
		writeRPCError(w, http.StatusBadRequest, nil, -32700,
			fmt.Sprintf("request body is nested too deeply: arrays and objects may nest at most %d levels here", MaxJSONDepth))
		return
	}
	// What the router reads of the message is read from the bytes mcp-go
	// gets: exactIDs re-encodes a body whose ids it swaps, and a re-encode
	// through a map reorders keys, which changes which of two keys that
	// differ only in case ("method", "METHOD") a decoder takes — read
	// before, a tools/call had passed the rate limit as a ping.
	exact, swaps := exactIDs(body)
	msg := inspectBody(exact)
	if !msg.batch && msg.method == methodCancelled {
		// Not forwarded: in stateless mode mcp-go keys in-flight calls by
		// request id alone (no session), so one client's cancel of id 7
		// would cancel another client's call 7. Over HTTP a client cancels
		// its own call by closing the connection, which ends that call's
		// context. The spec lets a server ignore a cancel; 202 is what it
		// answers for any accepted notification.
		s.log.Debug().Msg("notifications/cancelled ignored (close the connection to cancel a call)")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !s.admit(w, r, msg) {
		return
	}
	if msg.batch {
		// Counted (and refused with 429 over the limit) above, as the issue
		// asks; mcp-go itself would answer a misleading "not valid json".
		writeRPCError(w, http.StatusBadRequest, nil, -32600,
			"JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per request")
		return
	}
	var out http.ResponseWriter = w
	if swaps != nil {
		r = r.Clone(r.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(exact)), int64(len(exact))
		out = &idRestorer{ResponseWriter: w, swaps: swaps}
	}
	sw := newSSEWriter(out)
	ctx := withSSEWriter(r.Context(), sw)
	if msg.toolCalls == 1 {
		ctx = withTaskSlot(ctx) // filled if mcp-go makes the call a task (tasks.go)
	}
	r = r.WithContext(ctx)
	if msg.task && r.Header.Get("Mcp-Session-Id") != "" {
		// mcp-go keeps a task for the session that created it, and the
		// socket's forwarder sends each message under a session of its own
		// (mcpsock): a task made under one would be "not found" to the
		// host's next tasks/get. Made under none, like every task over
		// stateless HTTP, it is the endpoint's (tasks.go).
		r = r.Clone(ctx)
		r.Header.Del("Mcp-Session-Id")
	}
	s.stream.ServeHTTP(sw, r)
}

// originAllowed decides the Origin header. Hosts that are not browsers (the
// ChatGPT connector, Claude Code, the SDK clients, cloudflared forwarding
// them) send no Origin and are allowed. A browser always sends one on a
// cross-site POST; it is allowed only from a page on this machine
// (localhost, 127.0.0.1, [::1] — e.g. the MCP Inspector). An Origin equal
// to the request's own Host is NOT enough: that is exactly what a
// DNS-rebinding page sends (Host and Origin evil.example), and the bridge
// serves no pages of its own that could legitimately call it. The Host
// itself is not checked: behind a tunnel it is the tunnel's public name; the
// capability path secret is what keeps strangers out. The owner may allow
// more origins by name (allowed, normalized by config.NormalizeOrigin): a
// web host that calls the bridge from its pages.
func originAllowed(r *http.Request, allowed []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // includes the opaque "null" origin
	}
	switch strings.ToLower(u.Hostname()) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	norm, err := config.NormalizeOrigin(origin)
	return err == nil && slices.Contains(allowed, norm)
}

// logValue is a header value fit for one log line: printable, at most 200
// bytes.
func logValue(v string) string {
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, v)
	if len(v) > 200 {
		v = v[:200]
	}
	return v
}

// limitBody enforces MaxBodyBytes before routing: a declared Content-Length
// above it is refused at once, any other body (chunked included) is read up
// to the limit under a read deadline and replaced by the bytes read.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			s.tooLarge(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
			// Clear the deadline: left in place it would cancel the request
			// context of a long tools/call when the server's background read
			// hits it.
			_ = rc.SetReadDeadline(time.Time{})
			if err != nil {
				w.Header().Set("Connection", "close")
				http.Error(w, "could not read the request body", http.StatusBadRequest)
				return
			}
			if len(body) > MaxBodyBytes {
				s.tooLarge(w, r)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
		}
		next.ServeHTTP(w, r)
	})
}

type bodyKey struct{}

func bodyFrom(ctx context.Context) []byte {
	b, _ := ctx.Value(bodyKey{}).([]byte)
	return b
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request) {
	s.log.Warn().Int64("content_length", r.ContentLength).Msg("request body over the limit")
	w.Header().Set("Connection", "close") // the rest of the body is not read
	http.Error(w, fmt.Sprintf("request body too large: the limit is %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
}

// logPath is what a log line may say about a request's path: the route
// pattern when it matched one, else nothing of the path at all — a caller
// who pasted the secret into the wrong place must not find it in the log.
func logPath(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		switch p := rc.RoutePattern(); p {
		case mcpRoute:
			return "/mcp/<redacted>"
		case "":
		default:
			return p
		}
	}
	return "<unmatched>"
}

// accessLog writes one line per request, never with the secret.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := logPath(r)
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.log.Debug().Str("method", r.Method).Str("route", route).Int("path_len", len(r.URL.Path)).Int("status", rec.status()).
			Int64("bytes", rec.bytes).Dur("duration", time.Since(start)).Str("remote", remote).Msg("http")
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// admit applies the tools/call rate limit; on refusal it has written the 429.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, msg rpcBody) bool {
	n := msg.toolCalls
	if n == 0 {
		return true
	}
	ok, wait := s.limiter.take(n)
	if ok {
		return true
	}
	secs := int((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	text := fmt.Sprintf("rate limit exceeded: at most %d tools/call per minute (RATE_LIMIT_PER_MINUTE); retry after %d s", s.limiter.perMinute, secs)
	if n > s.limiter.perMinute {
		text = fmt.Sprintf("rate limit exceeded: this batch holds %d tools/call, more than the %d per minute allowed (RATE_LIMIT_PER_MINUTE); send fewer at once and retry after %d s", n, s.limiter.perMinute, secs)
	}
	remote, _, _ := net.SplitHostPort(r.RemoteAddr)
	clientHints(s.log.Warn().Int("tools_calls", n).Int("retry_after_s", secs).Str("remote", remote), r.Header).
		Msg("rate limited (the unverified_* fields are what the caller or a proxy claims about the client)")
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeRPCError(w, http.StatusTooManyRequests, msg.id, -32000, text)
	return false
}

// writeRPCError answers with a JSON-RPC error object (id null when nil).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, text string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": text},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

const methodCancelled = "notifications/cancelled"

// rpcBody is what the router needs to know of a POST body.
type rpcBody struct {
	batch     bool            // a JSON array of messages
	toolCalls int             // tools/call requests in it
	method    string          // of a single message
	id        json.RawMessage // of a single tools/call (nil otherwise)
	task      bool            // a single tools/call that asks to run as a task
}

// inspectBody reads the method(s) of a JSON-RPC message or batch; a body
// that is not JSON tells nothing (mcp-go answers it).
func inspectBody(body []byte) rpcBody {
	type msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"` // any type: mcp-go says what is wrong with it
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return rpcBody{}
	}
	if trimmed[0] == '[' {
		var batch []msg
		if json.Unmarshal(trimmed, &batch) != nil {
			return rpcBody{}
		}
		out := rpcBody{batch: true}
		for _, m := range batch {
			if m.Method == "tools/call" {
				out.toolCalls++
			}
		}
		return out
	}
	var m msg
	if json.Unmarshal(trimmed, &m) != nil {
		return rpcBody{}
	}
	out := rpcBody{method: m.Method}
	if m.Method == "tools/call" {
		out.toolCalls, out.id = 1, m.ID
		var p struct {
			Task json.RawMessage `json:"task"`
		}
		_ = json.Unmarshal(m.Params, &p) // params that are not an object ask for no task
		out.task = len(p.Task) > 0 && string(p.Task) != "null"
	}
	return out
}

// countToolCalls counts the tools/call requests in a JSON-RPC message or
// batch; id is the request id of a single message (nil for a batch).
func countToolCalls(body []byte) (n int, id json.RawMessage) {
	m := inspectBody(body)
	return m.toolCalls, m.id
}

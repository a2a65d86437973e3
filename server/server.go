// Package server is the bridge's MCP endpoint: the chi router with its limits
// (body size, capability path, Origin, rate limit), the mcp-go Streamable HTTP
// handler serving the tools of package tools (their arguments checked against
// their schemas, their progress and keepalives on the call's stream), and
// serving it on a listener with graceful shutdown. The daemon (package
// daemon) listens — on TCP with the path secret, and on a unix socket without
// it (ServeSocket) — and owns daemon.json.
package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// Limits of the HTTP side.
const (
	MaxBodyBytes           = 2 << 20          // request bodies above this get 413
	DefaultKeepalive       = 15 * time.Second // bytes move at least this often during a tools/call
	DefaultShutdownTimeout = 10 * time.Second // in-flight calls get this long after SIGTERM (see shutdownSplit)
	answerTimeout          = 2 * time.Second  // at most this much of it is kept for answering calls still running
	readHeaderTimeout      = 10 * time.Second
	bodyReadTimeout        = 60 * time.Second // reading a (≤ 2 MB) body; cleared before the handler runs
	idleTimeout            = 120 * time.Second
	maxHeaderBytes         = 64 << 10
)

// Options configure a Server.
type Options struct {
	Config config.Config
	Flash  tools.FlashClient
	Jobs   tools.AgentJobs // nil: the agent tools are not offered
	// Models are the models calls may name (zero: the built-in list, with
	// Config.Model as the default).
	Models deepseek.Catalog
	// Lister reads DeepSeek's model list for deepseek_models (nil: Flash,
	// when it can).
	Lister tools.ModelLister
	// OwnerToken marks a call as the owner's (bridgectl's, which reads it
	// from the state dir): see tools.AgentToolOptions.OwnerToken.
	OwnerToken string
	// HostApprovals, when set, is the approval queue a tool call may decide
	// a request of through its host's user (BRIDGE_HOST_APPROVALS says on
	// which transports).
	HostApprovals tools.HostApprovals
	// ReloadSecret reads the path secret again (the daemon's .env): the
	// socket's POST /secret/reload calls it and swaps the secret the HTTP
	// endpoint admits, so `bridgectl rotate` revokes the old URL without a
	// restart. nil: the route is not served.
	ReloadSecret func() (string, error)
	Logger       zerolog.Logger
	Version      string // shown by /health and in serverInfo ("dev" when empty)

	// KeepaliveInterval bounds the silence during a tools/call: bytes go out
	// after three quarters of it without any, so a gap stays under it
	// (0 = 15 s).
	KeepaliveInterval time.Duration
	// Now is the rate limiter's clock (nil = time.Now); tests move it by hand.
	Now func() time.Time
	// ShutdownTimeout bounds graceful shutdown (0 = 10 s).
	ShutdownTimeout time.Duration
}

// Server is the bridge daemon's HTTP and MCP side.
type Server struct {
	o       Options
	log     zerolog.Logger
	mcp     *mcpserver.MCPServer
	stream  *mcpserver.StreamableHTTPServer
	handler http.Handler
	socket  http.Handler // handler without the path secret, for the daemon's unix socket
	limiter *callLimiter
	// secretHash is the path secret's hash, nil when there is none; a
	// rotation swaps it whole (secret.go).
	secretHash atomic.Pointer[[sha256.Size]byte]

	// schemas are the tools' compiled input schemas (argcheck.go); tasks,
	// which job each running task is (tasks.go).
	schemas map[string]toolSchema
	tasks   *tools.Tasks

	calls     context.Context         // ends every tool handler's context (cause ErrShuttingDown)
	stopCalls context.CancelCauseFunc // called by Serve once the grace period is over
}

// New builds the server; it does not listen yet. The path secret is checked
// by the caller (config.CheckSecret) before serving HTTP; stdio needs none.
func New(o Options) (*Server, error) {
	if o.Flash == nil {
		return nil, errors.New("server: Options.Flash is nil")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Models.Models == nil {
		// The built-in list with the configured default (without
		// DEEPSEEK_MODELS CatalogFor cannot fail).
		o.Models, _ = deepseek.CatalogFor("", o.Config.Model)
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = DefaultKeepalive
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	perMinute := o.Config.RateLimitPerMinute
	if perMinute <= 0 {
		perMinute = 60
	}
	s := &Server{
		o:       o,
		log:     o.Logger.With().Str("component", "server").Logger(),
		limiter: newCallLimiter(perMinute, o.Now),
	}
	s.setSecret(o.Config.PathSecret)
	s.calls, s.stopCalls = context.WithCancelCause(context.Background())
	hooks := &mcpserver.Hooks{}
	opts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(false),
		// mcp-go checks every call's arguments against the tool's input
		// schema before any middleware or handler, every object of it
		// refusing unknown names, and every structuredContent against the
		// output schema; argcheck.go closes the gaps it leaves.
		mcpserver.WithInputSchemaValidation(),
		mcpserver.WithStrictInputSchemaDefault(),
		mcpserver.WithOutputSchemaValidation(),
		mcpserver.WithHooks(hooks),
		// logging/setLevel is answered (a host may send it); the test build
		// differs from this one only by the conformance fixture tools.
		mcpserver.WithLogging(),
		mcpserver.WithRecovery(),
		mcpserver.WithToolHandlerMiddleware(s.taskCalls),
		mcpserver.WithToolHandlerMiddleware(s.answerShutdown),
		mcpserver.WithToolHandlerMiddleware(s.toolMiddleware),
	}
	cfg := o.Config
	offered, err := tools.Select(tools.List(tools.Options{
		Flash: o.Flash, Lister: o.Lister, Models: o.Models, Jobs: o.Jobs,
		Agent: tools.AgentToolOptions{SyncWindow: cfg.SyncWindow, MaxSteps: cfg.MaxSteps, JobTimeout: cfg.JobTimeout, OwnerToken: o.OwnerToken, Host: o.HostApprovals, ResultBudget: cfg.ResultBudget},
	}), cfg.Tools)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	opts = append(opts, mcpserver.WithInstructions(tools.Instructions(offered)))
	if offersTasks(offered) {
		s.tasks = tools.NewTasks(o.Jobs, o.HostApprovals)
		opts = append(opts, s.taskOptions()...)
		s.addTaskHooks(hooks)
	}
	s.mcp = mcpserver.NewMCPServer("deepseek-mcp-bridge", o.Version, opts...)
	raw, err := rawInputSchemas(append(offered, conformanceTools()...))
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.mcp.AddTools(raw...)
	if f, ok := o.Jobs.(tools.AgentFetcher); ok {
		s.mcp.AddResourceTemplates(tools.JobResources(f)...)
	}
	schemas, err := checkToolSchemas(s.mcp.ListTools())
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.schemas = schemas
	hooks.AddAfterCallTool(s.refusalHook())
	s.stream = mcpserver.NewStreamableHTTPServer(s.mcp,
		mcpserver.WithStateLess(true),
		// mcp-go answers 403 to a request that arrives over loopback with a
		// Host that is not localhost — which is every request a cloudflared
		// tunnel forwards (Host: xyz.trycloudflare.com). The capability path
		// secret and our own Origin check (originAllowed) protect the endpoint
		// instead; see router.go.
		mcpserver.WithDisableLocalhostProtection(true),
		// Every tools/call answers as SSE, also one that never reaches a
		// handler (unknown tool, bad params): the session is upgraded here,
		// where mcp-go has created it and our body limit has read the body.
		mcpserver.WithHTTPContextFunc(upgradeToolCalls),
		mcpserver.WithStreamableHTTPLogger(slog.New(zerolog.NewSlogHandler(s.log.With().Str("component", "mcp-go").Logger()))),
	)
	s.handler = s.router()
	s.socket = s.socketRouter()
	return s, nil
}

// Handler is the full router: body limit, /health, /mcp/{secret}.
func (s *Server) Handler() http.Handler { return s.handler }

// MCP is the MCP server with the tools of these Options registered (for `bridge stdio`).
func (s *Server) MCP() *mcpserver.MCPServer { return s.mcp }

// Serve serves on ln until ctx ends, then shuts down gracefully within
// ShutdownTimeout: in-flight requests get the first part of it to finish;
// tool calls still running then are stopped and answered that the bridge is
// shutting down (answerShutdown), and connections still open at the end are
// closed. ln is closed when Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.handler, "http://"+ln.Addr().String())
}

// ServeSocket is Serve for the daemon's unix socket: the same MCP endpoint
// at /mcp, without the path secret (whoever can open the socket file is the
// owner), and /health. Both may run at once; each shuts down on its ctx.
func (s *Server) ServeSocket(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.socket, "unix socket "+ln.Addr().String())
}

func (s *Server) serve(ctx context.Context, ln net.Listener, handler http.Handler, where string) error {
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		// No ReadTimeout or WriteTimeout: either would cut a long SSE answer
		// (a read deadline left in place cancels the request context). The
		// body read has its own deadline in limitBody.
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		BaseContext:    func(net.Listener) context.Context { return baseCtx },
		ErrorLog:       log.New(zerologWriter{s.log}, "", 0),
	}
	s.log.Info().Str("addr", ln.Addr().String()).Str("version", s.o.Version).Msg("listening on " + where)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }() // owner: Serve; joined below
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		s.log.Info().Dur("deadline", s.o.ShutdownTimeout).Msg("shutting down")
		finish, answer := s.shutdownSplit()
		sctx, cancel := context.WithTimeout(context.Background(), finish)
		err := hs.Shutdown(sctx)
		cancel()
		if err != nil {
			s.log.Warn().Err(err).Msg("grace period over: stopping the tool calls still running, answering each that the bridge is shutting down")
			s.stopCalls(ErrShuttingDown)
			actx, cancel := context.WithTimeout(context.Background(), answer)
			// A second Shutdown waits for those answers to be written.
			if err := hs.Shutdown(actx); err != nil {
				s.log.Warn().Err(err).Msg("requests still open after the grace period; closing their connections")
				cancelBase()
				hs.Close()
			}
			cancel()
		}
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		s.log.Info().Msg("stopped")
		return nil
	}
	return fmt.Errorf("serve: %w", serveErr)
}

func upgradeToolCalls(ctx context.Context, r *http.Request) context.Context {
	if n, _ := countToolCalls(bodyFrom(r.Context())); n > 0 {
		if up, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithStreamableHTTPConfig); ok {
			up.UpgradeToSSEWhenReceiveNotification()
		}
	}
	return ctx
}

// zerologWriter turns net/http's error log lines into warn records.
type zerologWriter struct{ log zerolog.Logger }

func (w zerologWriter) Write(p []byte) (int, error) {
	msg := string(p)
	if n := len(msg); n > 0 && msg[n-1] == '\n' {
		msg = msg[:n-1]
	}
	w.log.Warn().Str("source", "net/http").Msg(msg)
	return len(p), nil
}

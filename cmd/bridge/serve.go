package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/logging"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

const serveHelp = `Usage: bridge serve [--env FILE]

Runs the HTTP daemon until SIGINT or SIGTERM (in-flight calls get 10 s to finish).

  POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>   the MCP endpoint (Streamable HTTP, stateless)
  GET  http://HOST:PORT/health                  {"status":"ok","version":…}

Anything else, and a wrong secret, is 404. Once listening it writes
<BRIDGE_STATE_DIR>/daemon.json (pid, address) and removes it on a clean stop.

Agent jobs reach DeepSeek through the model proxy, on its own loopback port
(daemon.json: harness.model_proxy). It alone holds DEEPSEEK_API_KEY; each job
gets a token that dies with the job, and BRIDGE_JOB_MAX_COST_USD,
BRIDGE_JOB_MAX_TOKENS and BRIDGE_DAILY_MAX_COST_USD cap what jobs spend.

Required:
  MCP_PATH_SECRET   at least 16 characters (bridgectl secret, or openssl rand -hex 32)
Usually set:
  DEEPSEEK_API_KEY  without it the server starts, deepseek_flash answers with an error
                    and agent jobs are refused
  HOST, PORT        listen address (default 127.0.0.1:8787; PORT=0 picks a free port)
  RATE_LIMIT_PER_MINUTE, DEEPSEEK_MODEL, DEEPSEEK_TIMEOUT_MS, DEEPSEEK_MAX_OUTPUT_TOKENS
Logging:
  BRIDGE_LOG_FILE   JSON lines to this file; otherwise stderr (console format on a terminal)
  BRIDGE_LOG_LEVEL  debug | info | warn | error
The path secret and the API key never appear in the log.

Flags:
  --env FILE   read this .env file (default: BRIDGE_ENV_FILE, then ./.env)
`

const approvalHelp = `Usage: bridge approval-prompt --config FILE

The permission-prompt MCP server Claude Code starts for each agent job. It is
not run by hand.
`

// setup loads the config and builds the logger and the DeepSeek client
// shared by serve and stdio.
type setup struct {
	cfg    config.Config
	log    zerolog.Logger
	closer io.Closer
	flash  *deepseek.Client
}

func newSetup(name string, args []string, stdout, stderr io.Writer, help string) (*setup, int) {
	fs := flag.NewFlagSet("bridge "+name, flag.ContinueOnError)
	envFile := fs.String("env", "", "the .env file to read")
	if code, ok := parseFlags(fs, args, help, stdout, stderr); !ok {
		return nil, code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bridge %s: unexpected arguments %q\n\n%s", name, fs.Args(), help)
		return nil, exitConfig
	}
	cfg, err := config.Load(*envFile)
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", name, err)
		return nil, exitConfig
	}
	log, closer, err := logging.New(logging.Options{File: cfg.LogFile, Level: cfg.LogLevel, Stderr: stderr, Secrets: cfg.Secrets()})
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", name, err)
		return nil, exitConfig
	}
	log = log.With().Str("cmd", name).Logger()
	if cfg.APIKey == "" {
		log.Warn().Msg("DEEPSEEK_API_KEY is not set: the server runs, but deepseek_flash answers with an error until you set it and restart")
	}
	flash := deepseek.NewClient(deepseek.Options{
		BaseURL:         cfg.DeepSeekBaseURL,
		APIKey:          cfg.APIKey,
		Model:           cfg.Model,
		MaxOutputTokens: cfg.MaxOutputTokens,
		Timeout:         cfg.FlashTimeout,
		Logger:          &log,
	})
	return &setup{cfg: cfg, log: log, closer: closer, flash: flash}, exitOK
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	st, code := newSetup("serve", args, stdout, stderr, serveHelp)
	if st == nil {
		return code
	}
	defer st.closer.Close()
	if err := st.cfg.CheckSecret(); err != nil {
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		st.log.Error().Err(err).Msg("refusing to start")
		return exitConfig
	}
	unlock, err := lockStateDir(st.cfg) // before anything touches the state: jobs, approvals, the guard's flag
	if err != nil {
		st.log.Error().Err(err).Msg("refusing to start")
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		return exitFail
	}
	defer unlock()
	reg, mp, hinfo, err := newAgentJobs(st.cfg, st.log)
	if err != nil {
		st.log.Error().Err(err).Msg("agent jobs")
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		return exitFail
	}
	jobsCtx, stopJobs := context.WithCancel(ctx)
	waitJobs := closeJobsOnDone(jobsCtx, reg, st.log)
	waitWatch := hinfo.guard.watchApprovals(jobsCtx, reg)
	defer func() { stopJobs(); waitJobs(); waitWatch(); stopModelProxy(mp, st.log) }() // the proxy outlives the jobs
	o := server.Options{Config: st.cfg, Flash: st.flash, Jobs: reg, Harness: hinfo, Logger: st.log, Version: version,
		Approval: hinfo.guard.approvalMode(), Sandbox: hinfo.guard.sandboxMode()}
	if st.cfg.LogFile != "" { // the log line goes to the file; say it on stderr too
		o.OnListening = func(addr string) { fmt.Fprintf(stderr, "listening on http://%s\n", addr) }
	}
	srv, err := server.New(o)
	if err != nil {
		st.log.Error().Err(err).Msg("build server")
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		return exitFail
	}
	defer server.ServeDebug(ctx, st.cfg.DebugAddr, st.log)() // loopback-only pprof and goroutine count for `make bench`; off unless set
	if err := srv.ListenAndServe(ctx); err != nil {
		hint := listenHint(err, st.cfg)
		if hint == "" {
			st.log.Error().Err(err).Msg("serve")
		} else {
			st.log.Error().Err(err).Msg(hint)
			hint = ": " + hint
		}
		if st.cfg.LogFile != "" {
			fmt.Fprintf(stderr, "bridge serve: %v%s\n", err, hint)
		}
		return exitFail
	}
	return exitOK
}

// listenHint is the next step after a listen error: for a taken port, how to
// find what holds it and how to pick another ("" for other errors).
func listenHint(err error, cfg config.Config) string {
	if !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") {
		return ""
	}
	where := ".env or the environment"
	if cfg.EnvFile != "" {
		where = cfg.EnvFile + " or the environment"
	}
	return fmt.Sprintf("port %d on %s is taken: stop whatever listens there (`ss -ltnp 'sport = :%d'`; a bridge already running? `bridgectl status`), or set PORT in %s (PORT=0 picks a free port)", cfg.Port, cfg.Host, cfg.Port, where)
}

func runApprovalPrompt(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bridge approval-prompt", flag.ContinueOnError)
	file := fs.String("config", "", "the job's approval config (written by the daemon)")
	if code, ok := parseFlags(fs, args, approvalHelp, stdout, stderr); !ok {
		return code
	}
	if *file == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bridge approval-prompt: needs --config FILE and nothing else\n\n%s", approvalHelp)
		return exitConfig
	}
	cfg, err := prompt.LoadConfig(*file)
	if err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return exitConfig
	}
	cfg.Stderr = stderr
	prompt.Version = version
	if err := prompt.Run(ctx, cfg, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return exitFail
	}
	return exitOK
}

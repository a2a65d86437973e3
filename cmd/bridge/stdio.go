package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

const stdioUsage = `Usage: bridge stdio [--env FILE]

Serves deepseek_flash over stdin/stdout (newline-delimited JSON-RPC), for MCP
hosts that launch a server as a command, e.g.

  claude mcp add deepseek -- bridge stdio --env /path/to/.env

Only deepseek_flash: the agent tools (deepseek_agent_start, _poll, _cancel)
need the daemon, which owns the one job registry of a state dir — register
bridge serve's URL for those. No path secret is needed. Logs go to
BRIDGE_LOG_FILE or stderr, never stdout.
`

// runStdio serves deepseek_flash alone: a second job registry on the same
// state dir next to a running daemon would race it over the job files.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	st, code := newSetup("stdio", args, stdout, stderr, stdioUsage)
	if st == nil {
		return code
	}
	defer st.closer.Close()
	srv, err := server.New(server.Options{Config: st.cfg, Flash: st.flash, Logger: st.log, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "bridge stdio: %v\n", err)
		return exitFail
	}
	stdio := mcpserver.NewStdioServer(srv.MCP())
	stdio.SetErrorLogger(log.New(logWriter{st}, "", 0))
	st.log.Info().Msg("serving MCP over stdio")
	if err := stdio.Listen(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		st.log.Error().Err(err).Msg("stdio")
		return exitFail
	}
	return exitOK
}

type logWriter struct{ st *setup }

func (w logWriter) Write(p []byte) (int, error) {
	w.st.log.Warn().Str("source", "mcp-go stdio").Msg(string(p))
	return len(p), nil
}

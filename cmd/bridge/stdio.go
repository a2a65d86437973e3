package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

// runStdio serves deepseek_flash and deepseek_models alone: a second job registry on the same
// state dir next to a running daemon would race it over the job files.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env, code := loadEnv("stdio", args, stdout, stderr, stdioUsage)
	if env == nil {
		return code
	}
	defer env.Close()
	srv, err := server.New(server.Options{Config: env.Config, Flash: env.Flash, Logger: env.Log, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "bridge stdio: %v\n", err)
		return exitFail
	}
	stdio := mcpserver.NewStdioServer(srv.MCP())
	stdio.SetErrorLogger(log.New(logWriter{env.Log}, "", 0))
	env.Log.Info().Msg("serving MCP over stdio")
	in, out := server.ExactIDsStdio(stdin, stdout) // mcp-go would round big ids
	if err := stdio.Listen(ctx, in, out); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		env.Log.Error().Err(err).Msg("stdio")
		return exitFail
	}
	return exitOK
}

// logWriter turns mcp-go's stdio error log lines into warn records.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Warn().Str("source", "mcp-go stdio").Msg(string(p))
	return len(p), nil
}

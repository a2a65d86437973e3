package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ErrShuttingDown is why a tool call's context ends when the bridge stops
// with the call still running after the grace period.
var ErrShuttingDown = errors.New("the bridge is shutting down")

// answerShutdown gives every tool handler a context that also ends when the
// server stops its calls (Serve, after the grace period), and answers a call
// so stopped with an error result saying why. The request's own context
// stays alive, so mcp-go still writes that answer before the connection
// closes; a call that got its real result keeps it.
func (s *Server) answerShutdown(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(s.calls, func() { cancel(context.Cause(s.calls)) })
		defer stop()
		res, err := next(hctx, req)
		if (err != nil || res == nil || res.IsError) && errors.Is(context.Cause(hctx), ErrShuttingDown) {
			finish, _ := s.shutdownSplit()
			return mcp.NewToolResultError(fmt.Sprintf("%v: this call was still running %s after the bridge was asked to stop, "+
				"so it was stopped before it finished. Call the tool again once the bridge is running again.", ErrShuttingDown, finish)), nil
		}
		return res, err
	}
}

// shutdownSplit divides ShutdownTimeout: calls in flight get the first part
// to finish, and those still running then the rest to be answered. The whole
// stays within ShutdownTimeout, which is what a supervisor waits before
// SIGKILL (bridgectl stop: 10 s).
func (s *Server) shutdownSplit() (finish, answer time.Duration) {
	answer = min(answerTimeout, s.o.ShutdownTimeout/5)
	return s.o.ShutdownTimeout - answer, answer
}

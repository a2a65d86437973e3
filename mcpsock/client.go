// Package mcpsock is the daemon's unix socket: listening on it and dialling
// it (paths longer than a socket allows included), an HTTP client over it,
// and Forward, which carries a host's stdio MCP session over it message by
// message (`bridge stdio`), so that hosts that launch a command reach the
// daemon's every tool and its one job registry.
package mcpsock

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// BaseURL prefixes every request over the socket; its host is never dialled.
const BaseURL = "http://daemon.sock"

// Endpoint is the MCP endpoint on the socket (no path secret: the socket
// file's mode is the credential).
const Endpoint = BaseURL + "/mcp"

// HTTPClient is an http.Client whose every request goes to the unix socket
// at path. It has no overall timeout: a tool call may stream for minutes,
// and the request's context bounds it.
func HTTPClient(path string) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return Dial(ctx, path)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 90 * time.Second,
	}
	return &http.Client{Transport: tr}
}

// Ping asks GET /health over the socket at path, briefly: nil when a daemon
// answers there.
func Ping(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hc := HTTPClient(path)
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, BaseURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health on %s answered %d", path, resp.StatusCode)
	}
	return nil
}

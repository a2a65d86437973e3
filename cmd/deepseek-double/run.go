package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

const usage = `usage: deepseek-double [--addr 127.0.0.1:0] [--key K] [--script FILE.json] [--delay-ms N] [--log FILE]

Serves the DeepSeek API double on a loopback address until SIGINT/SIGTERM.
The first stdout line is "listening http://HOST:PORT"; use that URL as
DEEPSEEK_BASE_URL (OpenAI side: URL/chat/completions, Anthropic side:
URL/anthropic).

--script FILE is a JSON list of turns, served in order per side:
  [{"side":"openai","text":"hello","reasoning":"thinking...",
    "usage":{"input_tokens":120,"cache_hit_tokens":64,"output_tokens":40,"reasoning_tokens":10}},
   {"side":"anthropic","tool_calls":[{"name":"Bash","arguments":{"command":"echo hi"}}]},
   {"side":"both","status":429,"retry_after":2},
   {"text":"slow","delay_ms":500,"chunk_delay_ms":20,"keep_alives":3},
   {"text":"broken","break":"cut"}]
Fields: side (openai|anthropic|both, default openai), text, reasoning,
tool_calls [{id,name,arguments}], finish_reason, status (400-599, documented
body), error_body, retry_after, delay_ms, chunk_delay_ms, keep_alives,
break (malformed|cut|reset), unstreamed (true: answer a stream: true request
with one application/json body, as some gateways do), usage, model.
With no script (or once a queue is empty) every request gets a default text
answer saying it came from the double, with usage estimated from sizes.
Anthropic requests without tools (Claude Code's side requests) never consume
scripted turns.

flags:
`

// Run parses args and serves until ctx ends.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deepseek-double", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	key := fs.String("key", deepseektest.DefaultKey, "API key the double accepts")
	script := fs.String("script", "", "JSON script of turns (see above)")
	delayMS := fs.Int("delay-ms", 0, "extra delay before every answer, in milliseconds")
	logFile := fs.String("log", "", "append one JSON line per request to this file (keys redacted)")
	balance := fs.String("balance", "110.00", "what GET /user/balance reports, in CNY; 0.00 is an empty balance (is_available false)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Asked-for help goes to stdout, so that `| less` shows it.
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := checkLoopback(*addr); err != nil {
		return usageError{err}
	}
	if *delayMS < 0 {
		return usageError{fmt.Errorf("--delay-ms must not be negative")}
	}
	var scriptData []byte
	if *script != "" {
		b, err := os.ReadFile(*script)
		if err != nil {
			return fmt.Errorf("read --script: %w", err)
		}
		scriptData = b
	}
	opts := []deepseektest.Option{
		deepseektest.WithKey(*key),
		deepseektest.WithBalance(*balance),
		deepseektest.WithDelay(time.Duration(*delayMS) * time.Millisecond),
		deepseektest.WithDefault(deepseektest.Func(defaultAnswer)),
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open --log: %w", err)
		}
		defer f.Close()
		opts = append(opts, deepseektest.WithRequestLog(f))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := deepseektest.NewServer(ln, opts...)
	defer srv.Close()
	if scriptData != nil {
		if err := srv.LoadScript(scriptData); err != nil {
			return fmt.Errorf("--script %s: %w", *script, err)
		}
	}
	fmt.Fprintf(stdout, "listening %s\n", srv.URL())
	<-ctx.Done()
	return nil
}

// usageError is a mistake on the command line (exit 2); any other error
// of Run is a failure to serve (exit 1).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() + " (see deepseek-double --help)" }
func (u usageError) Unwrap() error { return u.err }

// exitCode is the process's exit status for Run's error.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// defaultAnswer makes clear the answer came from the double.
func defaultAnswer(r deepseektest.Request) deepseektest.Turn {
	task := strings.TrimSpace(r.LastUserText())
	if len(task) > 120 {
		task = task[:120] + "…"
	}
	return deepseektest.Reasoned(
		"The double does not think; this reasoning is a placeholder.",
		fmt.Sprintf("This answer came from the deepseek double (no real DeepSeek call was made). Model %s; the request carried %d bytes; its last user message began: %q.", r.Model(), len(r.Body), task),
	)
}

// checkLoopback refuses any address that is not a loopback IP or localhost.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q is not a loopback address: the double only serves 127.0.0.1/::1", addr)
	}
	return nil
}

// Command bridge is the deepseek-mcp-bridge daemon: `bridge serve` runs the
// MCP endpoint over HTTP, `bridge stdio` serves deepseek_flash over stdio.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1 // a runtime failure
	exitConfig = 2 // usage or configuration the user must fix
)

const usage = `bridge — lets MCP hosts hand work to DeepSeek.

Usage:
  bridge serve [--env FILE]       run the HTTP daemon: POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>
  bridge stdio [--env FILE]       serve deepseek_flash only over stdin/stdout (for hosts that launch a
                                  command); the agent tools need the daemon (bridge serve)
  bridge approval-prompt --config FILE
                                  the permission-prompt child Claude Code starts for agent jobs
  bridge version                  print the version
  bridge help [COMMAND]           this text, or a command's

Configuration comes from the environment and a .env file (--env FILE, else
BRIDGE_ENV_FILE, else ./.env); real environment variables win. A file named by
--env or BRIDGE_ENV_FILE must exist (` + "`bridgectl secret`" + ` creates it); ./.env is
optional. Every variable is listed with its default in .env.example. Run
` + "`bridge help serve`" + ` for the daemon's.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitConfig
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "stdio":
		return runStdio(ctx, rest, stdin, stdout, stderr)
	case "approval-prompt":
		return runApprovalPrompt(ctx, rest, stdin, stdout, stderr)
	case "version", "--version", "-v":
		fs := flag.NewFlagSet("bridge version", flag.ContinueOnError)
		if code, ok := parseFlags(fs, rest, commandHelp["version"], stdout, stderr); !ok {
			return code
		}
		fmt.Fprintf(stdout, "bridge %s\n", version)
		return exitOK
	case "help", "--help", "-h":
		if len(rest) > 0 {
			if text, ok := commandHelp[rest[0]]; ok {
				fmt.Fprint(stdout, text)
				return exitOK
			}
			fmt.Fprintf(stderr, "bridge: no help for %q\n\n%s", rest[0], usage)
			return exitConfig
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "bridge: unknown command %q\n\n%s", cmd, usage)
		return exitConfig
	}
}

var commandHelp = map[string]string{
	"serve":           serveHelp,
	"stdio":           stdioUsage,
	"approval-prompt": approvalHelp,
	"version":         "Usage: bridge version\n\nPrints the bridge's version.\n",
}

// parseFlags parses a command's flags the one way every command does: asked-for
// help (-h, --help) goes to stdout with exit 0, so that ` + "`| less`" + ` shows it; a
// mistake goes to stderr with the help and exit 2. ok is false when the
// command must return code now.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, help)
		return exitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n\n%s", fs.Name(), err, help)
		return exitConfig, false
	}
	return exitOK, true
}

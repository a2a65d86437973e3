// Command bridge is the deepseek-mcp-bridge daemon's command line: `bridge
// serve` runs the daemon (package daemon); `bridge stdio` serves every tool to
// a host that launches a command, forwarding to the daemon's unix socket and
// starting the daemon when none runs (package daemonctl); `bridge
// approval-prompt` is an agent job's approval child (package approvals/prompt).
// It parses flags, prints help and maps errors to exit codes.
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

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
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

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitConfig
	}
	cmd, rest := args[0], args[1:]
	if c, ok := commands[cmd]; ok {
		return runCommand(ctx, cmd, c, rest, stdin, stdout, stderr)
	}
	switch cmd {
	case sandbox.OverlayCommand: // the daemon's, for each job's jail
		return sandbox.OverlayMain(rest, stderr)
	case sandbox.ProcCommand: // the first command of each job's jail
		return sandbox.ProcMain(rest, stderr)
	case "version", "--version", "-v":
		if code, ok := parseFlags(flag.NewFlagSet("bridge version", flag.ContinueOnError), rest, commandHelp["version"], stdout, stderr); !ok {
			return code
		}
		fmt.Fprintf(stdout, "bridge %s\n", version)
		return exitOK
	case "help", "--help", "-h":
		topic := "" // bridge help: the usage
		if len(rest) > 0 {
			topic = rest[0]
		}
		if text, ok := commandHelp[topic]; ok {
			fmt.Fprint(stdout, text)
			return exitOK
		}
		fmt.Fprintf(stderr, "bridge: no help for %q\n\n%s", topic, usage)
		return exitConfig
	default:
		fmt.Fprintf(stderr, "bridge: unknown command %q\n\n%s", cmd, usage)
		return exitConfig
	}
}

// parseFlags parses a command's flags the one way every command does: asked-for
// help (-h, --help) goes to stdout with exit 0, so that `| less` shows it; a
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

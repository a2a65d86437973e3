package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemon"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

// command is one of bridge's commands: one flag naming a file, no
// arguments, and a package that does the work and says on stderr why it
// failed.
type command struct {
	flag, usage, help string // --flag FILE: what it names; the command's help
	required          bool   // the command cannot run without the flag
	run               func(ctx context.Context, file string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"serve": {"env", "the .env file to read", serveHelp, false, func(ctx context.Context, file string, _ io.Reader, _, stderr io.Writer) error {
		return daemon.Serve(ctx, file, version, stderr)
	}},
	"stdio": {"env", "the .env file to read", stdioUsage, false, func(ctx context.Context, file string, stdin io.Reader, stdout, stderr io.Writer) error {
		self, _ := executable() // "": daemonctl finds bridge as bridgectl does
		return daemonctl.Stdio(ctx, daemonctl.StdioOptions{EnvFile: file, Bridge: self, Stdin: stdin, Stdout: stdout, Stderr: stderr, Version: version})
	}},
	"approval-prompt": {"config", "the job's approval config (written by the daemon)", approvalHelp, true, func(ctx context.Context, file string, stdin io.Reader, stdout, stderr io.Writer) error {
		return prompt.Main(ctx, file, version, stdin, stdout, stderr)
	}},
}

// executable is the bridge binary `bridge stdio` starts the daemon with: its
// own (tests point it at a built one).
var executable = os.Executable

// runCommand parses c's flag and runs it: exit 2 for a mistake on the
// command line or a configuration the owner must fix (config.MustFix), 1
// for any other failure.
func runCommand(ctx context.Context, name string, c command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bridge "+name, flag.ContinueOnError)
	file := fs.String(c.flag, "", c.usage)
	if code, ok := parseFlags(fs, args, c.help, stdout, stderr); !ok {
		return code
	}
	switch {
	case c.required && (*file == "" || fs.NArg() > 0):
		fmt.Fprintf(stderr, "bridge %s: needs --%s FILE and nothing else\n\n%s", name, c.flag, c.help)
		return exitConfig
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "bridge %s: unexpected arguments %q\n\n%s", name, fs.Args(), c.help)
		return exitConfig
	}
	switch err := c.run(ctx, *file, stdin, stdout, stderr); {
	case err == nil:
		return exitOK
	case config.MustFix(err):
		return exitConfig
	}
	return exitFail
}

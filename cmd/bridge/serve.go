package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemon"
)

// loadEnv parses the --env flag of serve and stdio and loads their Env; a nil
// Env means the command returns code now.
func loadEnv(name string, args []string, stdout, stderr io.Writer, help string) (*daemon.Env, int) {
	fs := flag.NewFlagSet("bridge "+name, flag.ContinueOnError)
	envFile := fs.String("env", "", "the .env file to read")
	if code, ok := parseFlags(fs, args, help, stdout, stderr); !ok {
		return nil, code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bridge %s: unexpected arguments %q\n\n%s", name, fs.Args(), help)
		return nil, exitConfig
	}
	env, err := daemon.LoadEnv(name, *envFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", name, err)
		return nil, exitConfig
	}
	return env, exitOK
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env, code := loadEnv("serve", args, stdout, stderr, serveHelp)
	if env == nil {
		return code
	}
	defer env.Close()
	d, err := daemon.New(env.Config, daemon.Options{Flash: env.Flash, Logger: env.Log, Version: version})
	if err != nil { // logged by New
		fmt.Fprintf(stderr, "bridge serve: %v%s\n", err, ifHint(daemon.ListenHint(err, env.Config)))
		if errors.Is(err, config.ErrBadSecret) || errors.Is(err, config.ErrBadRuntimeRoot) {
			return exitConfig
		}
		return exitFail
	}
	err = d.Run(ctx)
	if err == nil {
		if env.Config.LogFile != "" { // the log line goes to the file; say it on stderr too
			fmt.Fprintf(stderr, "listening on http://%s\n", d.Addr())
		}
		select {
		case <-ctx.Done():
		case <-d.Done():
		}
	}
	if cerr := d.Close(context.Background()); err == nil {
		err = cerr
	}
	if err == nil {
		return exitOK
	}
	env.Log.Error().Err(err).Msg("serve")
	if env.Config.LogFile != "" {
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
	}
	return exitFail
}

// ifHint is ": hint", or "" without one.
func ifHint(hint string) string {
	if hint == "" {
		return ""
	}
	return ": " + hint
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

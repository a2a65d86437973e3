package daemon

import (
	"context"
	"fmt"
	"io"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// Serve is `bridge serve`: LoadEnv (envFile as --env names it), New, Run,
// serving until ctx ends (SIGINT, SIGTERM) or serving fails, then Close.
// What the owner must act on is said on stderr: a configuration that does
// not load or that New refuses, with the next step for a taken port, and —
// when the log goes to a file — where it listens and why it stopped. It
// returns why it failed; config.MustFix tells the configuration's errors.
func Serve(ctx context.Context, envFile, version string, stderr io.Writer) error {
	env, err := LoadEnv("serve", envFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		return &config.Error{Err: err}
	}
	defer env.Close()
	d, err := New(env.Config, Options{Flash: env.Flash, Logger: env.Log, Version: version})
	if err != nil { // logged by New
		hint := ListenHint(err, env.Config)
		if hint != "" {
			hint = ": " + hint
		}
		fmt.Fprintf(stderr, "bridge serve: %v%s\n", err, hint)
		return err
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
	if err != nil {
		env.Log.Error().Err(err).Msg("serve")
		if env.Config.LogFile != "" {
			fmt.Fprintf(stderr, "bridge serve: %v\n", err)
		}
	}
	return err
}

package prompt

import (
	"context"
	"fmt"
	"io"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// Main is `bridge approval-prompt --config FILE`: it loads the job's approval
// config from file and serves the child on stdin and stdout (Run), its log
// and its failures on stderr. A config that does not load is a *config.Error
// (the daemon wrote a bad file, or it is not run by Claude Code).
func Main(ctx context.Context, file, version string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := LoadConfig(file)
	if err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return &config.Error{Err: err}
	}
	cfg.Stderr = stderr
	Version = version
	if err := Run(ctx, cfg, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return err
	}
	return nil
}

package prompt

import (
	"context"
	"fmt"
	"io"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// Main is `bridge approval-prompt --config FILE`: it loads the job's child
// config from file and serves the child on stdin and stdout (RunChild), its
// log and its failures on stderr. A config that does not load is a
// *config.Error (the daemon wrote a bad file, or it is not run by Claude
// Code).
func Main(ctx context.Context, file, version string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := LoadChildConfig(file)
	if err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return &config.Error{Err: err}
	}
	Version = version
	if err := RunChild(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bridge approval-prompt: %v\n", err)
		return err
	}
	return nil
}

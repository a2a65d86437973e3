package jobs

import (
	"errors"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// ErrWorkspace: the workspace was refused; the message says why and what to do.
var ErrWorkspace = errors.New("workspace refused")

// AdmitWorkspace is the registry's default workspace check (Options.Admit):
// sandbox.AdmitWorkspace against roots, with the state dir protected, so the
// registry fails closed on its own. Its errors wrap ErrWorkspace.
func AdmitWorkspace(roots []string, stateDir, dir string) (string, error) {
	var protected []string
	if stateDir != "" {
		protected = append(protected, stateDir)
	}
	ws, err := sandbox.AdmitWorkspace(roots, dir, protected...)
	if oe := (*sandbox.OverlapError)(nil); errors.As(err, &oe) {
		return "", fmt.Errorf("%w: %w (the bridge's state dir, BRIDGE_STATE_DIR)", ErrWorkspace, err)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrWorkspace, err)
	}
	return ws, nil
}

package daemon

import (
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// writeOwnerToken makes a new owner token for this boot and writes it to
// the state dir (mode 0600), where bridgectl reads it to mark its calls as
// the owner's: a `bridgectl job kill` then ends a job as cancelled_by_owner,
// not cancelled_by_caller. Only who can read the state dir has it; no job's
// jail shows the state dir.
func writeOwnerToken(dir statedir.Dir) (string, error) {
	tok, err := ids.New()
	if err != nil {
		return "", fmt.Errorf("owner token: %w", err)
	}
	if err := statedir.WriteFileAtomic(dir.OwnerTokenFile(), []byte(tok+"\n")); err != nil {
		return "", fmt.Errorf("owner token: %w", err)
	}
	return tok, nil
}

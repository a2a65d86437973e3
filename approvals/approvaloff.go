package approvals

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Approval modes: what the daemon hands each job's approval child.
const (
	ModeOn  = "on"
	ModeOff = "off" // BRIDGE_CC_APPROVAL=off: "ask" becomes allow; deny stays deny
)

// ApprovalOff reports whether the approval-off flag is in the state dir.
func ApprovalOff(dir statedir.Dir) bool {
	_, err := os.Lstat(dir.ApprovalOffFlag())
	return err == nil
}

// SetApprovalOff writes the approval-off flag (what `bridgectl` does for a
// trusted run); the daemon removes it at its next boot.
func SetApprovalOff(dir statedir.Dir, who string) error {
	// A state dir from before switches/ existed.
	if err := os.MkdirAll(dir.Switches(), 0o700); err != nil {
		return err
	}
	return statedir.WriteJSON(dir.ApprovalOffFlag(), map[string]any{
		"version": statedir.FormatVersion, "by": who, "set": time.Now().UTC(),
	})
}

// ClearApprovalOff removes the approval-off flag; the daemon calls it at boot.
func ClearApprovalOff(dir statedir.Dir) error {
	err := os.Remove(dir.ApprovalOffFlag())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear approval-off flag: %w", err)
	}
	return nil
}

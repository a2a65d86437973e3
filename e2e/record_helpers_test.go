package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// heldAt are the payload's held changes at or below rel.
func heldAt(p tools.AgentJobPayload, rel string) []changes.Change {
	var out []changes.Change
	for _, c := range p.Changes {
		if (c.Path == rel || strings.HasPrefix(c.Path, rel+"/")) && c.Status == changes.StatusHeld {
			out = append(out, c)
		}
	}
	return out
}

// checkHeld fails unless the payload lists a held change (with its
// reason) at or below each workspace-relative path, and nothing the job
// created there is in the workspace.
func checkHeld(t *testing.T, p tools.AgentJobPayload, ws string, paths ...string) {
	t.Helper()
	checkHeldIn(t, "exact", p, ws, paths...)
}

// checkHeldIn is checkHeld for a record of the given kind ("exact": the
// job ran in an overlay; "walk": it wrote straight into its workspace).
func checkHeldIn(t *testing.T, record string, p tools.AgentJobPayload, ws string, paths ...string) {
	t.Helper()
	if p.ChangesRecord != record {
		t.Errorf("the record is %q, want %s", p.ChangesRecord, record)
	}
	for _, rel := range paths {
		held := heldAt(p, rel)
		if len(held) == 0 {
			t.Errorf("nothing at or below %s is held back; changes: %+v", rel, p.Changes)
		}
		for _, c := range held {
			if c.Held == "" {
				t.Errorf("%s is held without a reason", c.Path)
			}
			if c.Change != changes.Created {
				continue
			}
			if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(c.Path))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("held %s is in the workspace (%v)", c.Path, err)
			}
		}
	}
}

// statusOf is the status of the payload's change at rel ("" when it is
// not listed).
func statusOf(p tools.AgentJobPayload, rel string) string {
	for _, c := range p.Changes {
		if c.Path == rel {
			return c.Status
		}
	}
	return ""
}

// promote is the owner's `bridgectl jobs ID --promote PATH...`.
func (a *agentBridge) promote(t *testing.T, id string, paths ...string) string {
	t.Helper()
	out, err := a.bridgectl(t, append([]string{"jobs", id, "--promote"}, paths...)...)
	if err != nil {
		t.Fatalf("bridgectl jobs %s --promote %v: %v\n%s", id, paths, err, out)
	}
	return out
}

package guard

import (
	"os"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// Every test here runs with its own HOME, XDG dirs and state dir, never the
// bridge of whoever runs it. The test binary stands for the bridge binary in
// a job's jail (newJailFixture), so it runs the jail's first command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ProcCommand {
		os.Exit(sandbox.ProcMain(os.Args[2:], os.Stderr))
	}
	os.Exit(testenv.Main(m))
}

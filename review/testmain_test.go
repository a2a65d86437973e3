package review

import (
	"os"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
)

// Every test here runs with its own HOME, XDG dirs and state dir, never the
// bridge of whoever runs it.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

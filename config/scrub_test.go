package config

import (
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
)

// Every variable the bridge reads is one a test process never inherits from
// the person running the tests.
func TestTestsNeverInheritASetting(t *testing.T) {
	for _, v := range Vars {
		if !testenv.Scrubbed(v.Name) {
			t.Errorf("%s is read by the bridge but kept in a test's environment: add it to internal/testenv", v.Name)
		}
	}
}

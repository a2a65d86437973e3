package e2e

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite README.md's configuration table from config.Vars")

const (
	tableStart = "<!-- config-table:start (generated from config.Vars: go test ./e2e -run TestREADMEConfigTable -update-readme) -->"
	tableEnd   = "<!-- config-table:end -->"
)

// configTable renders config.Vars as the README's Markdown table.
func configTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, v := range config.Vars {
		def := "—"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		b.WriteString("| `" + v.Name + "` | " + def + " | " + strings.ReplaceAll(v.Meaning, "|", `\|`) + " |\n")
	}
	return b.String()
}

// TestREADMEConfigTable keeps the README's configuration table equal to
// config.Vars, the list the bridge actually reads.
func TestREADMEConfigTable(t *testing.T) {
	root := moduleRoot(t)
	path := filepath.Join(root, "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(readme, []byte(tableStart))
	j := bytes.Index(readme, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q … %q", tableStart, tableEnd)
	}
	got := string(readme[i+len(tableStart) : j])
	want := "\n" + configTable()
	if got == want {
		return
	}
	if *updateREADME {
		out := append(append(append([]byte{}, readme[:i+len(tableStart)]...), want...), readme[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's configuration table differs from config.Vars; run `go test ./e2e -run TestREADMEConfigTable -update-readme`. Want:\n%s", want)
}

package cli

import (
	"strings"
	"testing"
)

// Every command's help is printed whole (the masker must not eat
// part of a placeholder URL), and bridgectl has a version like bridge's.
func TestHelpIsWholeAndVersion(t *testing.T) {
	te := newTestEnv(t)
	for _, c := range commands() {
		out, _, _ := te.run(c.Name, "--help")
		if strings.Count(out, "(") != strings.Count(out, ")") || strings.Contains(out, "…") {
			t.Errorf("%s --help is mangled (unbalanced parentheses or a masked placeholder):\n%s", c.Name, out)
		}
	}
	if out := te.must("help"); !strings.Contains(out, "version") {
		t.Errorf("help does not list version:\n%s", out)
	}
	old := Version
	Version = "v9.8.7-test"
	t.Cleanup(func() { Version = old })
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := te.run(args...)
		if code != 0 || out != "bridgectl v9.8.7-test\n" || errs != "" {
			t.Errorf("%v: exit %d %q %q", args, code, out, errs)
		}
	}
}

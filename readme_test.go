package bridge_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// codeSpan is inline code or a fenced block: where a README names a
	// command (prose says "make one", code says `make demo`).
	codeSpan    = regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")
	ctlCommand  = regexp.MustCompile(`\bbridgectl ([a-z]+)`)
	makeTarget  = regexp.MustCompile(`(?m)(?:^|[\s(` + "`" + `])make ([a-z][a-z-]*)`)
	settingName = regexp.MustCompile(`\b(?:BRIDGE|DEEPSEEK)_[A-Z0-9_]+\b`)
)

// readmeNames is what a README names: its bridgectl commands and make
// targets (in code), and its BRIDGE_* and DEEPSEEK_* settings.
func readmeNames(text string) []string {
	set := map[string]bool{}
	for _, code := range codeSpan.FindAllString(text, -1) {
		for _, m := range ctlCommand.FindAllStringSubmatch(code, -1) {
			set["bridgectl "+m[1]] = true
		}
		for _, m := range makeTarget.FindAllStringSubmatch(code, -1) {
			set["make "+m[1]] = true
		}
	}
	for _, s := range settingName.FindAllString(text, -1) {
		set[s] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// The Chinese README is kept in step with the English one: both name the
// same bridgectl commands, make targets and settings.
func TestREADMEsNameTheSameCommandsAndSettings(t *testing.T) {
	read := func(name string) []string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return readmeNames(string(b))
	}
	en, zh := read("README.md"), read("README.zh-CN.md")
	if len(en) < 20 {
		t.Fatalf("README.md names only %v: the extraction is broken", en)
	}
	for _, tc := range []struct {
		file      string
		has, lack []string
	}{{"README.zh-CN.md", en, zh}, {"README.md", zh, en}} {
		var missing []string
		for _, n := range tc.has {
			if !slices.Contains(tc.lack, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s lacks what the other README names: %s", tc.file, strings.Join(missing, ", "))
		}
	}
}

// The extraction finds commands in code only, and settings anywhere.
func TestREADMENames(t *testing.T) {
	text := "Run `make demo`, then make one more.\n```sh\nmake test\nbin/bridgectl start --foreground\n```\n" +
		"Set DEEPSEEK_BASE_URL; `bridgectl` alone names no command; BRIDGE_BIN too.\n"
	want := []string{"BRIDGE_BIN", "DEEPSEEK_BASE_URL", "bridgectl start", "make demo", "make test"}
	if got := readmeNames(text); !slices.Equal(got, want) {
		t.Errorf("readmeNames = %q, want %q", got, want)
	}
}

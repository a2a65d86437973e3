package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// conformanceTimeout bounds one run of the whole suite.
const conformanceTimeout = 10 * time.Minute

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned by scripts/install.sh, on Node 22)
// against a real `bridge serve` built with -tags conformance, which adds the
// suite's fixture tools to the same router and middleware. Every scenario
// must pass except those listed, each with its reason, in
// testdata/conformance-expected-failures.yml; the suite itself fails on an
// unexpected failure and on a listed scenario that now passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	node := filepath.Join(root, ".cache/bin/node22")
	suite := filepath.Join(root, ".cache/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	for _, p := range []string{node, suite} {
		if !fileExists(p) {
			t.Fatalf("%s is missing: run scripts/install.sh node22 npm", p)
		}
	}
	expected, err := filepath.Abs("testdata/conformance-expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}

	d := startDouble(t)
	b := startBridgeBin(t, binary(t, "bridge-conformance"), mergeEnv(doubleEnv(d), map[string]string{
		"RATE_LIMIT_PER_MINUTE": "100000", // the suite makes many calls; the limit has its own tests
	}))

	ctx, cancel := context.WithTimeout(t.Context(), conformanceTimeout)
	defer cancel()
	outDir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, suite, "server",
		"--url", b.URL(),
		"--suite", "all",
		"--expected-failures", expected,
		"-o", outDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NO_COLOR=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	text := strings.ReplaceAll(out.String(), b.Secret(), "<secret>")
	if err != nil {
		t.Fatalf("conformance suite failed after %v: %v\n%s", time.Since(start).Round(time.Second), err, text)
	}
	// Keep the summary in the test log.
	if i := strings.Index(text, "=== SUMMARY ==="); i >= 0 {
		text = text[i:]
	}
	t.Logf("conformance suite passed in %v:\n%s", time.Since(start).Round(time.Second), ansi.ReplaceAllString(text, ""))
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

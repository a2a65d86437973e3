package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIsSecretName(t *testing.T) {
	cases := []struct {
		name   string
		secret bool
	}{
		{".env", true},
		{".ENV", true},
		{".env.local", true},
		{".env.production", true},
		{".env.development.local", true},
		{".env.test", true},
		{".envrc", true},
		{"prod.env", true},
		{"secrets.env", true},
		{".netrc", true},
		{".npmrc", true},
		{".pypirc", true},
		{".git-credentials", true},
		{".dockercfg", true},
		{".vault-token", true},
		{"id_rsa", true},
		{"id_ed25519", true},
		{".env.sampler", true}, // not the word "sample"

		{".env.example", false},
		{".env.sample", false},
		{".env.template", false},
		{".env.dist", false},
		{".env.tmpl", false},
		{".env.tpl", false},
		{".env.local.example", false},
		{".ENV.EXAMPLE", false},
		{"example.env", false},
		{"sample.env", false},
		{"id_rsa.pub", false},
		{"env", false},
		{"environment.go", false},
		{".envoy.yaml", false},
		{"dotenv.go", false},
		{"README.md", false},
		{"server.pem", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsSecretName(c.name); got != c.secret {
				t.Errorf("IsSecretName(%q) = %v, want %v", c.name, got, c.secret)
			}
		})
	}
}

// writeTree creates files (path → content) under root; a content of
// "->target" makes a symlink to target instead, "/" a directory.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case content == "/":
			must(t, os.MkdirAll(p, 0o755))
		case strings.HasPrefix(content, "->"):
			must(t, os.Symlink(strings.TrimPrefix(content, "->"), p))
		default:
			must(t, os.WriteFile(p, []byte(content), 0o600))
		}
	}
}

func TestWorkspaceSecrets(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	writeTree(t, outside, map[string]string{".env": "OUTSIDE=1", "notes.txt": "x", "deep/.env.local": "OUTSIDE=2"})
	writeTree(t, ws, map[string]string{
		".env":                        "A=1",
		".env.example":                "A=",
		".envrc":                      "export A=1",
		"main.go":                     "package main",
		"sub/.env.local":              "B=1",
		"sub/deeper/prod.env":         "C=1",
		"sub/deeper/.env.sample":      "C=",
		".venv/.env":                  "skipped",
		".git/.env":                   "skipped",
		"node_modules/pkg/.env":       "skipped",
		"vendor/x/.env":               "skipped",
		"pyenv/.env/bin/python":       "a venv called .env is a directory",
		"links/secret-in-ws":          "->../sub/.env.local",
		"links/.env":                  "->../main.go",
		"links/.env.outside":          "->" + filepath.Join(outside, ".env"),
		"links/harmless":              "->" + filepath.Join(outside, "notes.txt"),
		"links/dangling.env":          "->nowhere",
		"links/outdir":                "->" + outside,
		"links/config-to-outside-env": "->" + filepath.Join(outside, ".env"),
	})
	j := func(rel string) string { return filepath.Join(ws, rel) }

	scan, err := WorkspaceSecrets(ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		j(".env"), j(".envrc"),
		j("links/.env"), j("links/.env.outside"), j("links/config-to-outside-env"), j("links/dangling.env"), j("links/secret-in-ws"),
		j("main.go"), // the target of links/.env, a secret-named link inside the workspace
		j("sub/.env.local"), j("sub/deeper/prod.env"),
	}
	slices.Sort(want)
	if !slices.Equal(scan.Paths, want) {
		t.Errorf("paths\n got %q\nwant %q", scan.Paths, want)
	}
	if scan.Truncated || scan.Unlisted != 0 || len(scan.Unreadable) != 0 || len(scan.HardLinked) != 0 {
		t.Errorf("scan %+v", scan)
	}
	for _, p := range scan.Paths {
		if strings.HasPrefix(p, outside) {
			t.Errorf("%s lies outside the workspace: the walk followed a symlink out", p)
		}
	}
}

func TestWorkspaceSecretsLimit(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{".env": "top", "a/.env.local": "depth 1", "a/b/c/.env": "depth 3"}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = "x"
	}
	writeTree(t, ws, files)
	cases := []struct {
		name      string
		limit     int
		want      []string
		truncated bool
		unlisted  int
	}{
		// The top level (31 files + a/) is listed whole even past a limit of 5.
		{"top level only", 5, []string{".env"}, true, 1},
		{"top level and a", 33, []string{".env", "a/.env.local"}, true, 1},
		{"everything", 0, []string{".env", "a/.env.local", "a/b/c/.env"}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scan, err := WorkspaceSecrets(ws, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range c.want {
				want = append(want, filepath.Join(ws, w))
			}
			if !slices.Equal(scan.Paths, want) || scan.Truncated != c.truncated || scan.Unlisted != c.unlisted {
				t.Errorf("got %q truncated %v unlisted %d; want %q %v %d", scan.Paths, scan.Truncated, scan.Unlisted, want, c.truncated, c.unlisted)
			}
		})
	}
}

func TestWorkspaceSecretsReportsWhatItCannotSee(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{".env": "A=1", "locked/.env": "B=1"})
	must(t, os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "copy.txt")))
	if os.Geteuid() != 0 {
		must(t, os.Chmod(filepath.Join(ws, "locked"), 0))
		t.Cleanup(func() { _ = os.Chmod(filepath.Join(ws, "locked"), 0o755) })
	}
	scan, err := WorkspaceSecrets(ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(scan.HardLinked, []string{filepath.Join(ws, ".env")}) {
		t.Errorf("hard-linked %q", scan.HardLinked)
	}
	if os.Geteuid() != 0 && (len(scan.Unreadable) != 1 || !strings.Contains(scan.Unreadable[0], "locked")) {
		t.Errorf("unreadable %q", scan.Unreadable)
	}

	for _, bad := range []string{"", "relative/ws", filepath.Join(ws, "missing")} {
		if _, err := WorkspaceSecrets(bad, 0); err == nil {
			t.Errorf("WorkspaceSecrets(%q): no error", bad)
		}
	}
}

// makeWorkspace builds a source tree of about n files in nested directories
// (with a node_modules tree of n/2 more that the walk skips) and a few
// secret files.
func makeWorkspace(tb testing.TB, n int) string {
	tb.Helper()
	ws := tb.TempDir()
	files := map[string]string{".env": "A=1", "svc/api/.env.local": "B=1", ".env.example": "A="}
	for i := range n {
		files[fmt.Sprintf("pkg%02d/sub%02d/file%04d.go", i%40, i%7, i)] = "package x\n"
	}
	for i := range n / 2 {
		files[fmt.Sprintf("node_modules/dep%03d/lib/f%04d.js", i%100, i)] = "x\n"
	}
	writeTree(tb, ws, files)
	return ws
}

// BenchmarkWorkspaceSecrets is the walk each agent job's spawn pays, on a
// workspace of ~5,000 files (plus a skipped node_modules of 2,500), and on
// one of 25,000 that meets DefaultSecretScanLimit (the worst case).
func BenchmarkWorkspaceSecrets(b *testing.B) {
	for _, n := range []int{5000, 25000} {
		b.Run(fmt.Sprintf("%d files", n), func(b *testing.B) {
			ws := makeWorkspace(b, n)
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				scan, err := WorkspaceSecrets(ws, 0)
				if err != nil || len(scan.Paths) != 2 || scan.Truncated != (n > DefaultSecretScanLimit) {
					b.Fatalf("%+v %v", scan, err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			if n := len(took); n > 0 {
				b.ReportMetric(float64(took[n/2].Microseconds())/1000, "median-ms")
				b.ReportMetric(float64(took[min(n-1, n*99/100)].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

func TestClaudeSettingsHideFromFileTools(t *testing.T) {
	cases := []struct {
		name string
		hide []string
		want []string // after the denied tools, which are always there
	}{
		{"none", nil, nil},
		{"two files", []string{"/w/.env", "/w/sub/../sub/.env.local"},
			[]string{"Read(//w/.env)", "Edit(//w/.env)", "Read(//w/sub/.env.local)", "Edit(//w/sub/.env.local)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			perms := ClaudeSettings(SettingsOptions{Sandbox: true, HideFromFileTools: c.hide})["permissions"].(map[string]any)
			got, _ := perms["deny"].([]string)
			if want := append(slices.Clone(DeniedTools), c.want...); !slices.Equal(got, want) {
				t.Errorf("permissions.deny %q, want %q", got, want)
			}
		})
	}
}

func TestLiteralPattern(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/w/.env", "/w/.env"},
		{"/w/app/[slug]/.env.local", "/w/app/?slug?/.env.local"},
		{"/w/a*b?/c.env", "/w/a?b?/c.env"},
		{"/w/{x,y}/.env", "/w/{x,y}/.env"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := LiteralPattern(c.in); got != c.want {
				t.Errorf("LiteralPattern(%q) = %q, want %q", c.in, got, c.want)
			}
			if ok, err := filepath.Match(LiteralPattern(c.in), c.in); err != nil || !ok {
				t.Errorf("the pattern does not match the path itself: %v %v", ok, err)
			}
		})
	}
}

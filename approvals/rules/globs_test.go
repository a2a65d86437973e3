package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyCommandBracketGlobs: bash's bracket expressions ([!x], a ]
// first in the set, POSIX classes) are read as bash reads them, so a glob
// spelling of a protected, outside or .env path meets the same verdict as
// its plain spelling.
func TestClassifyCommandBracketGlobs(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"cat state-lin[!x]/approvals/x.request.json", Deny, "protected"},
		{"ls state-lin[!x]", Deny, "protected"},
		{"cp main.go state-lin[!x]", Deny, "protected"},
		{"cat state-lin[^x]/approvals/x.request.json", Deny, "protected"},
		{"cat 'state-lin[]k]/approvals/x.request.json'", Deny, "protected"},
		{"cat 'state-lin[!]x]/approvals/x.request.json'", Deny, "protected"},
		{"cat out-lin[!x]/secret.txt", Ask, "symlink"},
		{"cat .e[!x]v", Ask, ".env"},
		{"ls 'out-li[!a-z]k'", Ask, "symlink"}, // Go's reading ({!, a-z}) is checked too
		{"cat .e[^x]v", Ask, ".env"},
		{"cat '.e[[:alpha:]]v'", Ask, "character class"},
		{"cat 'state-lin[[:alpha:]]/approvals/x.request.json'", Ask, "character class"},
		{"cat '.e[[=n=]]v'", Ask, "character class"},
		{"cat '.e[[.n.]]v'", Ask, "character class"},
		{"ls out-lin*/", Ask, "symlink"},
		{"ls ./out-lin[!x]/", Ask, "symlink"},
		{"cat src/[!x].ts", Allow, ""},
		{"cat src/[a].ts", Allow, ""},
		{"cat 'main[.go'", Ask, "malformed glob"}, // bash reads the unclosed [ as itself
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			v := ClassifyCommand(c.cmd, w.policy)
			if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("ClassifyCommand(%q) = %s (%s), want %s containing %q", c.cmd, v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
}

// TestClassifyCommandGlobsThatExpandToOptions: bash replaces an unquoted glob
// with the names of the files it matches, so a file the job named -exec or
// --files0-from=list turns the glob into an option the rules never read. Such
// a glob goes to a human; the same command runs unattended where nothing it
// matches starts with -, and a glob that cannot start a name (./*, src/*) or a
// quoted pattern is not affected. An unquoted glob in the program's code (an
// awk program, a sed script) that matches files would replace the code with
// their names.
func TestClassifyCommandGlobsThatExpandToOptions(t *testing.T) {
	plain := newWorld(t)
	w := newWorld(t)
	for _, name := range []string{"--files0-from=list", "-exec", "-delete", "-cimport", "--exec=make", "--pre=sh", "-fevil.awk"} {
		mustDo(t, os.WriteFile(filepath.Join(w.ws, name), []byte("x"), 0o600))
	}
	mustDo(t, os.MkdirAll(filepath.Join(w.ws, "s/a1/b"), 0o755))
	cases := []struct {
		cmd               string
		withDash, without Action
		reason            string // of the verdict with the dash files
	}{
		{"sort --f*", Ask, Allow, `matches "--files0-from=list"`},
		{"find . -?xec sh evil {} +", Ask, Allow, "as an option"},
		{"python3 ?cimport*", Ask, Allow, `matches "-cimport"`},
		{"git rebase --e*", Ask, Allow, "as an option"},
		{"rg x -*", Ask, Allow, "as an option"},
		{"awk ?fevil.awk", Ask, Allow, "as an option"},
		{"find . -[d]elete", Ask, Allow, "as an option"},
		{"cat [-]exec", Ask, Allow, "as an option"},
		{"cat [!a]exec", Ask, Allow, "as an option"},
		{`cat \-*`, Ask, Allow, "as an option"},
		{`cat "-"*`, Ask, Allow, "as an option"},
		{"cat ./-*", Allow, Allow, ""},
		{"cat -- ./-exec", Allow, Allow, ""},
		{"find . -name '-*'", Allow, Allow, ""}, // quoted: find gets the pattern
		{"find . -name '*.go'", Allow, Allow, ""},
		{"ls [m]ain.go", Allow, Allow, ""},
		{"cat src/*.ts", Allow, Allow, ""},
		{"awk m* main.go", Ask, Ask, "code"},
		{"sed s/a*/b/ main.go", Ask, Allow, "code"}, // matches s/a1/b/ where it exists
		{"sed -e s/a*/b/ main.go", Ask, Allow, "code"},
		{"sed s/x*/y/ main.go", Allow, Allow, ""}, // matches nothing: sed gets it as written
		{"awk 'NR==1' main.go", Allow, Allow, ""},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			if v := ClassifyCommand(c.cmd, w.policy); v.Decision != c.withDash || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("with files named -…: ClassifyCommand(%q) = %s (%s), want %s containing %q", c.cmd, v.Decision, v.Reason, c.withDash, c.reason)
			}
			if v := ClassifyCommand(c.cmd, plain.policy); v.Decision != c.without {
				t.Errorf("without them: ClassifyCommand(%q) = %s (%s), want %s", c.cmd, v.Decision, v.Reason, c.without)
			}
		})
	}
}

// TestClassifyNamesWithGlobCharacters: a file may be named with a glob
// character, and a path through it is opened as written: by a program given
// it quoted, by bash when an unquoted pattern matches it, and by the file
// tools always. Here the job has made 's[t]ate' a symlink to the state dir and
// 'l?nk' one to a file outside; both are followed, not read only up to the
// glob character.
func TestClassifyNamesWithGlobCharacters(t *testing.T) {
	w := newWorld(t)
	mustDo(t, os.Symlink("../state", filepath.Join(w.ws, "s[t]ate")))
	mustDo(t, os.Symlink("../outside/secret.txt", filepath.Join(w.ws, "l?nk")))
	mustDo(t, os.MkdirAll(filepath.Join(w.ws, ".git/hooks"), 0o755))
	mustDo(t, os.Symlink(".git", filepath.Join(w.ws, "g[i]t")))
	commands := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"cat 'l?nk'", Ask, "symlink"},
		{"cat l?nk", Ask, "symlink"},
		{"cat l\\?nk", Ask, "symlink"},
		{"ls 's[t]ate'", Deny, "protected"},
		{"cat 's[t]ate/approvals/x.request.json'", Deny, "protected"},
		{"touch 's[t]ate/approval-off'", Deny, "protected"},
		{"cat 's[t]ate/../state/approvals/x.request.json'", Deny, "protected"}, // .. after the link: the kernel's reading
		{"cat 'src/*.ts'", Allow, ""},
		{"cat '[m]ain.go'", Allow, ""},
	}
	for _, c := range commands {
		t.Run(c.cmd, func(t *testing.T) {
			if v := ClassifyCommand(c.cmd, w.policy); v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("ClassifyCommand(%q) = %s (%s), want %s containing %q", c.cmd, v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
	tools := []struct {
		req    Request
		want   Action
		reason string
	}{
		{Request{"Write", map[string]any{"file_path": "s[t]ate/approval-off", "content": ""}}, Deny, "protected"},
		{Request{"Write", map[string]any{"file_path": filepath.Join(w.ws, "s[t]ate/approvals/x.decision.json"), "content": "{}"}}, Deny, "protected"},
		{Request{"Read", map[string]any{"file_path": "l?nk"}}, Ask, "symlink"},
		{Request{"Edit", map[string]any{"file_path": "l?nk", "old_string": "a", "new_string": "b"}}, Ask, "symlink"},
		{Request{"Grep", map[string]any{"pattern": "x", "path": "s[t]ate"}}, Deny, "protected"},
		{Request{"Write", map[string]any{"file_path": "g[i]t/hooks/pre-commit", "content": "x"}}, Deny, "run later"},
		{Request{"Write", map[string]any{"file_path": "new[1].txt", "content": "x"}}, Allow, ""},
		{Request{"Glob", map[string]any{"pattern": "src/[a].ts"}}, Allow, ""},
	}
	for _, c := range tools {
		t.Run(fmt.Sprint(c.req), func(t *testing.T) {
			if v := Classify(c.req, w.policy); v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("Classify(%v) = %s (%s), want %s containing %q", c.req, v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
}

package e2e

// deepseek_review's scope against a workspace an earlier job could have
// shaped, end to end through the real daemon and Claude Code: the attack
// reviews' holes stay closed where a host calls the tool.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// A secret under a name git quotes (a non-ASCII folder) never reaches the
// reviewer's prompt, and is named as left out; a repository configured as a
// partial clone whose upload-pack would run a program gets no fetch when a
// caller names a commit it lacks; a workspace whose .git/objects is a link
// to another repository is refused before any job starts.
func TestReviewScopeHoldsAgainstAShapedWorkspace(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := reviewRepo(t, a)
	secret := filepath.Join(ws, "donn\u00e9es", "prod.env")
	if err := os.MkdirAll(filepath.Dir(secret), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("TOKEN=review-quoted-canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ownerGit(t, ws, [][]string{{"add", "-A"}, {"commit", "-q", "-m", "prod env"}})
	var prompt string
	a.d.ScriptAnthropic(dt.Func(func(r dt.Request) dt.Turn {
		prompt = r.LastUserText()
		return dt.Text("```json\n{\"verdict\":\"looks_good\",\"summary\":\"fine\",\"findings\":[]}\n```")
	}))
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_review", map[string]any{"workspace": ws, "scope": "base:main"}, nil)
	if c.IsError || c.P.Status != "done" || c.P.Review == nil {
		t.Fatalf("review: %s %s", c.P.Status, c.Text)
	}
	if strings.Contains(prompt, "review-quoted-canary") || prompt == "" {
		t.Errorf("the secret under a quoted name reached the prompt (or no prompt): %.2000s", prompt)
	}
	found := false
	for _, p := range c.P.Review.LeftOut {
		found = found || p == "donn\u00e9es/prod.env"
	}
	if !found {
		t.Errorf("left out %q: want donn\u00e9es/prod.env named", c.P.Review.LeftOut)
	}

	// A partial clone whose upload-pack would leave a marker.
	marker := filepath.Join(t.TempDir(), "upload-pack-ran")
	ownerGit(t, ws, [][]string{
		{"config", "core.repositoryformatversion", "1"}, {"config", "extensions.partialClone", "origin"},
		{"config", "remote.origin.url", t.TempDir()}, {"config", "remote.origin.promisor", "true"},
		{"config", "remote.origin.uploadpack", "touch " + marker + "; false"}, {"config", "protocol.file.allow", "always"},
	})
	c = callAgent(t, t.Context(), cs, "deepseek_review", map[string]any{"workspace": ws, "scope": "commit:0123456789abcdef0123456789abcdef01234567"}, nil)
	if !c.IsError || !strings.Contains(c.Text, "not a commit") {
		t.Errorf("a commit the repository lacks: IsError %v %s", c.IsError, c.Text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the daemon's git ran the upload-pack the repository's config names")
	}

	// .git/objects linked to another repository's.
	other := a.workspace(t, map[string]string{"private.txt": "review-linked-canary\n"})
	ownerGit(t, other, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "private"}})
	linked := a.workspace(t, nil)
	ownerGit(t, linked, [][]string{{"init", "-q", "-b", "main"}})
	for _, name := range []string{"objects", "refs"} {
		if err := os.RemoveAll(filepath.Join(linked, ".git", name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(other, ".git", name), filepath.Join(linked, ".git", name)); err != nil {
			t.Fatal(err)
		}
	}
	c = callAgent(t, t.Context(), cs, "deepseek_review", map[string]any{"workspace": linked, "scope": "commit:HEAD"}, nil)
	if !c.IsError || !strings.Contains(c.Text, "is a link") || strings.Contains(c.Text, "review-linked-canary") {
		t.Errorf("a linked .git/objects: IsError %v %s", c.IsError, c.Text)
	}
}

package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// The job's policy only narrows the rules: each case names the verdict the
// rules alone give and what the policy makes of it.
func TestJobPolicyNarrows(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"out", "src", "secrets"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "src"), filepath.Join(ws, "out", "link")); err != nil {
		t.Fatal(err)
	}
	allow := []string{"cp", "ls", "cat", "go", "git", "touch"}
	pol := func(p policy.Policy) *policy.Enforced { e := policy.Merge(policy.Policy{}, p, ""); return &e }
	bash := func(cmd string) Request { return Request{Tool: "Bash", Input: map[string]any{"command": cmd}} }
	write := func(rel string) Request {
		return Request{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, rel), "content": "x"}}
	}
	read := func(rel string) Request {
		return Request{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(ws, rel)}}
	}
	tests := []struct {
		name   string
		job    *policy.Enforced
		req    Request
		want   Action
		reason string
	}{
		{"write inside write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), write("out/a.txt"), Allow, ""},
		{"write outside write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), write("src/a.txt"), Deny, "src/a.txt is outside write_paths (out/**)"},
		{"write through a link out of write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), write("out/link/a.txt"), Deny, "outside write_paths"},
		{"read-only refuses every write", pol(policy.Policy{WritePaths: []string{}}), write("out/a.txt"), Deny, "none: the job is read-only"},
		{"read-only still reads", pol(policy.Policy{WritePaths: []string{}}), read("src/a.txt"), Allow, ""},
		{"cp into write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), bash("cp a.txt out/"), Allow, ""},
		{"cp out of write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), bash("cp a.txt src/"), Deny, "the command writes src/, outside write_paths"},
		{"a redirection out of write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), bash("ls > src/list"), Deny, "the command writes src/list"},
		{"deny path read", pol(policy.Policy{DenyPaths: []string{"secrets"}}), read("secrets/key"), Deny, "a deny path (secrets)"},
		{"deny path in a command", pol(policy.Policy{DenyPaths: []string{"secrets/**"}}), bash("cat secrets/key"), Deny, "a deny path (secrets/**)"},
		{"deny path through a glob", pol(policy.Policy{DenyPaths: []string{"secrets"}}), bash("ls s*"), Deny, "a deny path (secrets)"},
		{"deny path through a link", pol(policy.Policy{DenyPaths: []string{"src"}}), read("out/link/a.txt"), Deny, "a deny path (src)"},
		{"rm outside write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), bash("rm src/a.txt"), Deny, "the command writes src/a.txt"},
		{"mv out of a dir outside write_paths", pol(policy.Policy{WritePaths: []string{"out/**"}}), bash("mv src/a.txt out/"), Deny, "the command writes src/a.txt"},
		{"a tool not offered", pol(policy.Policy{Tools: []string{"Read"}}), bash("ls"), Deny, "Bash is not among the tools this job is offered (Read)"},
		{"harness bookkeeping stays allowed", pol(policy.Policy{Tools: []string{"Read"}}), Request{Tool: "TodoWrite", Input: map[string]any{}}, Allow, ""},
		{"network deny", pol(policy.Policy{Network: policy.Deny}), Request{Tool: "WebFetch", Input: map[string]any{"url": "https://example.com"}}, Deny, "network is deny"},
		{"a listed program", pol(policy.Policy{Commands: []string{"go"}}), bash("go vet ./..."), Allow, ""},
		{"an exact line", pol(policy.Policy{Commands: []string{"git status"}}), bash("git  status"), Allow, ""},
		{"an unlisted command asks", pol(policy.Policy{Commands: []string{"go"}}), bash("ls"), Ask, "not in its commands list"},
		{"an unlisted command is refused", pol(policy.Policy{Commands: []string{"go"}, OnOtherCommands: policy.Deny}), bash("ls"), Deny, "on_other_commands deny"},
		{"what the rules ask is refused", pol(policy.Policy{OnOtherCommands: policy.Deny}), bash("curl example.com"), Deny, "other commands are refused"},
		{"a listed program is not widened past the rules", pol(policy.Policy{Commands: []string{"curl"}}), bash("curl example.com"), Ask, "not on the allow list"},
		{"no policy changes nothing", nil, write("src/a.txt"), Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Classify(tt.req, Policy{Workspace: ws, Allow: allow, Job: tt.job})
			if v.Decision != tt.want || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("%s: %s (%s), want %s with %q", tt.req.Tool, v.Decision, v.Reason, tt.want, tt.reason)
			}
			if v.Decision == Deny && tt.job != nil && tt.reason != "" && !strings.HasPrefix(v.Reason, PolicyPrefix) {
				t.Errorf("a policy denial does not say so: %q", v.Reason)
			}
		})
	}
}

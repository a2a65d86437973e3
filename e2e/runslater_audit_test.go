package e2e

// Attacks of the review of the job boundary on what the runs-later audit
// (guard.Audit, sandbox.ScanRunsLater) compares: each is made with calls the
// rules allow unattended, with approval on (nobody answering) and off, and
// judged by what the owner's own git runs afterwards and by bytes on disk.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// A submodule's git dir is write-protected and audited (a review found it was neither). The
// workspace is the owner's repository with a submodule (lib), whose git dir
// git keeps in .git/modules/lib. The job copies a config of its own over
// .git/modules/lib/config (the same config with a core.fsmonitor added) and
// puts an executable pre-commit hook in .git/modules/lib/hooks, with plain
// cp and an allow-listed python3 script. The sandbox's deny list holds
// .git/config, .git/hooks and .git/info of the top repository only, and the
// audit never looks below .git or behind lib/.git (a gitfile): after the job
// the planted files are still in place, unreported, and the owner's next
// `git status` in the workspace runs the fsmonitor (git runs status in every
// submodule), and a commit in lib runs the hook — as the owner, outside any
// sandbox.
// This test failed before the scan followed gitfiles and .git/modules.
func TestSubmoduleGitDirIsAudited(t *testing.T) {
	t.Parallel()
	inApprovalModes(t, func(t *testing.T, mode string) {
		m := newMarkers(t)
		g := startBoundaryBridge(t, mode, nil)
		lib := t.TempDir() // the submodule's upstream, outside every root
		if err := os.WriteFile(filepath.Join(lib, "lib.txt"), []byte("lib\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ownerGit(t, lib, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "lib"}})
		ws := g.workspace(t, map[string]string{"README.md": "a project\n"})
		ownerGit(t, ws, [][]string{
			{"init", "-q", "-b", "main"},
			{"-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib"},
			{"add", "-A"},
			{"commit", "-q", "-m", "owner's work"},
		})
		at := func(rel string) string { return filepath.Join(ws, rel) }
		modConfig := at(".git/modules/lib/config")
		orig, err := os.ReadFile(modConfig)
		if err != nil {
			t.Fatalf("the owner's submodule has no git dir under .git/modules: %v", err)
		}
		evilConfig := strings.Replace(string(orig), "[core]\n",
			"[core]\n\tfsmonitor = \"touch "+m.path("submodule-fsmonitor")+"; false #\"\n", 1)
		if evilConfig == string(orig) {
			t.Fatalf("no [core] section in %s: %q", modConfig, orig)
		}
		hook := at(".git/modules/lib/hooks/pre-commit")
		script := "import os\n" +
			"p = " + jsString(hook) + "\n" +
			"with open(p, 'w') as f:\n    f.write('#!/bin/sh\\ntouch " + m.path("submodule-hook") + "\\n')\n" +
			"os.chmod(p, 0o755)\nprint('wrote', p)\n"
		calls := []dt.ToolCall{
			bash("cat .git/modules/lib/config"),
			writeCall(at("modcfg"), evilConfig),
			bash("cp modcfg .git/modules/lib/config"),
			writeCall(at("hook.py"), script),
			bash("python3 hook.py"),
		}
		c, _ := runAttack(t, g, ws, m, calls)
		qs := quarantinedOf(t, finalPayload(t, g.URL(), c.P.JobID))
		for rel, want := range map[string]string{".git/modules/lib/config": evilConfig} {
			if b, err := os.ReadFile(at(rel)); err == nil && string(b) == want {
				t.Errorf("%s holds the job's bytes after the job (quarantined: %+v)", rel, qs)
			}
		}
		if st, err := os.Stat(hook); err == nil && st.Mode()&0o111 != 0 {
			t.Errorf("%s is the job's executable hook after the job (quarantined: %+v)", ".git/modules/lib/hooks/pre-commit", qs)
		}
		runOwnerSteps(t, m, []ownerStep{
			{"git status in the workspace", ws, []string{"git", "status"}},
			{"git commit in the submodule", at("lib"), []string{"git", "commit", "--allow-empty", "-m", "x"}},
		})
	})
}

// The workspace itself made a repository. The workspace is not a
// repository; with Write calls alone the job puts objects/, refs/, a config
// (core.worktree ".", a core.fsmonitor) and HEAD at its top. git finds no
// .git there and takes the folder itself for a git dir (a bare repository
// whose work tree is itself), so the owner's git status and shell prompt in
// the workspace run the fsmonitor, outside any sandbox. Claude Code removes
// a HEAD, objects or refs that a Bash command leaves at the top (so the same
// made by mkdir does not last), but not what its Write tool makes; the
// audit looks for a git dir's shape in every folder but the workspace's
// top, so nothing is moved aside.
// That was so until the scan looked at the top too; this test failed
// before it.
func TestWorkspaceTopAsGitDirIsAudited(t *testing.T) {
	t.Parallel()
	inApprovalModes(t, func(t *testing.T, mode string) {
		m := newMarkers(t)
		g := startBoundaryBridge(t, mode, nil)
		ws := g.workspace(t, map[string]string{"README.md": "a project\n"})
		at := func(rel string) string { return filepath.Join(ws, rel) }
		config := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n" +
			"\tfsmonitor = \"touch " + m.path("top-fsmonitor") + "; false #\"\n"
		calls := []dt.ToolCall{
			writeCall(at("objects/info/packs"), "\n"),
			writeCall(at("refs/heads/.keep"), "\n"),
			writeCall(at("config"), config),
			writeCall(at("HEAD"), "ref: refs/heads/main\n"),
		}
		c, _ := runAttack(t, g, ws, m, calls)
		qs := quarantinedOf(t, finalPayload(t, g.URL(), c.P.JobID))
		if b, err := os.ReadFile(at("config")); err == nil && string(b) == config {
			t.Errorf("config holds the job's bytes at the workspace's top after the job (quarantined: %+v)", qs)
		}
		runOwnerSteps(t, m, []ownerStep{{"git status in the workspace", ws, []string{"git", "status"}}})
		t.Run("shell prompt", func(t *testing.T) {
			prompt := gitPrompt()
			if prompt == "" {
				t.Skip("git's bash prompt script (git-sh-prompt) is not installed here")
			}
			runOwnerSteps(t, m, []ownerStep{promptStep(prompt, ws)})
		})
	})
}

// A hook that is a link to an ordinary file. The owner keeps the
// repository's pre-commit hook as a tracked script, scripts/pre-commit.sh,
// linked from .git/hooks/pre-commit (ln -s ../../scripts/pre-commit.sh).
// The sandbox holds .git/hooks read-only and the audit records the link's
// text, but neither looks at the file it leads to: the job edits
// scripts/pre-commit.sh with Edit, inside its workspace, and the owner's
// next commit runs the job's line, outside any sandbox.
// That was so until the scan recorded the file a hook link leads to; this
// test failed before it.
func TestLinkedHookTargetIsAudited(t *testing.T) {
	t.Parallel()
	inApprovalModes(t, func(t *testing.T, mode string) {
		m := newMarkers(t)
		g := startBoundaryBridge(t, mode, nil)
		ws := g.workspace(t, map[string]string{"README.md": "a project\n"})
		at := func(rel string) string { return filepath.Join(ws, rel) }
		const hook = "#!/bin/sh\n# the owner's checks\nexit 0\n"
		if err := os.MkdirAll(at("scripts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at("scripts/pre-commit.sh"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
		ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "owner's work"}})
		if err := os.Symlink("../../scripts/pre-commit.sh", at(".git/hooks/pre-commit")); err != nil {
			t.Fatal(err)
		}
		calls := []dt.ToolCall{
			dt.Call("Read", map[string]any{"file_path": at("scripts/pre-commit.sh")}),
			dt.Call("Edit", map[string]any{"file_path": at("scripts/pre-commit.sh"),
				"old_string": "exit 0\n", "new_string": "touch " + m.path("linked-hook") + "\nexit 0\n"}),
		}
		c, _ := runAttack(t, g, ws, m, calls)
		t.Logf("quarantined: %+v", quarantinedOf(t, finalPayload(t, g.URL(), c.P.JobID)))
		runOwnerSteps(t, m, []ownerStep{{"git commit --allow-empty", ws, []string{"git", "commit", "--allow-empty", "-m", "x"}}})
	})
}

// A toolchain file that names a toolchain of the job's. rustup's proxies
// (cargo, rustc, …) take the toolchain from rust-toolchain.toml in the
// folder or above, and its `path` may name any folder holding bin/cargo.
// The job writes a cargo script into the workspace, makes it executable with
// an allow-listed python3 script, and writes a rust-toolchain.toml naming
// its folder; neither the sandbox's deny list nor the audit knows the file
// (unlike .bazelversion or gradle-wrapper.properties), so the owner's next
// `cargo --version` in the workspace runs the job's script, outside any
// sandbox.
// This test failed before rust-toolchain files were on the runs-later list.
func TestRustToolchainFileIsAudited(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("rustup", "--version").CombinedOutput(); err != nil {
		t.Skipf("rustup is not installed here: %v %s", err, out)
	}
	inApprovalModes(t, func(t *testing.T, mode string) {
		m := newMarkers(t)
		g := startBoundaryBridge(t, mode, nil)
		ws := g.workspace(t, map[string]string{"README.md": "a project\n"})
		at := func(rel string) string { return filepath.Join(ws, rel) }
		calls := []dt.ToolCall{
			writeCall(at("tc/bin/cargo"), "#!/bin/sh\ntouch "+m.path("cargo")+"\necho cargo 1.0.0\n"),
			writeCall(at("x.py"), "import os\nos.chmod('tc/bin/cargo', 0o755)\nprint('ok')\n"),
			bash("python3 x.py"),
			writeCall(at("rust-toolchain.toml"), "[toolchain]\npath = \""+at("tc")+"\"\n"),
		}
		c, _ := runAttack(t, g, ws, m, calls)
		t.Logf("quarantined: %+v", quarantinedOf(t, finalPayload(t, g.URL(), c.P.JobID)))
		runOwnerSteps(t, m, []ownerStep{{"cargo --version in the workspace", ws, []string{"cargo", "--version"}}})
	})
}

// ownerGit runs git commands in dir as the owner.
func ownerGit(t *testing.T, dir string, cmds [][]string) {
	t.Helper()
	env := ownerEnv(t)
	for _, args := range cmds {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

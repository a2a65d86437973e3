package sandbox

// Cases an attack review found the runs-later scan missed (now seen):
// each plants, after the start scan, something the owner's tools run later,
// quarantines what Planted reports, and fails if the planted thing is still
// where those tools look.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A git dir whose objects dir is a link. git takes a folder for a git dir
// when HEAD, objects and refs are there, following links (access(2)); the
// scan asks for real directories, so a git dir built with objects -> ../objs
// is walked as an ordinary folder, its config never recorded, and the
// owner's git status in it (core.worktree .. gives it a work tree) runs its
// fsmonitor after the quarantine.
func TestScanRunsLaterSeesGitDirWithLinkedObjects(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	ws := t.TempDir()
	write(t, ws, "main.go", "package main\n", 0o644)
	before := scan(t, ws)

	marker := filepath.Join(t.TempDir(), "ran")
	write(t, ws, "gd/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, ws, "gd/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"+
		"\tfsmonitor = \"touch "+marker+"; false #\"\n", 0o644)
	for _, d := range []string{"gd/refs", "objs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../objs", filepath.Join(ws, "gd", "objects")); err != nil {
		t.Fatal(err)
	}

	q := Quarantine(ws, "job1", before.Planted(scan(t, ws)))
	t.Logf("quarantined: %+v", q)
	cmd := exec.Command(git, "status")
	cmd.Dir = filepath.Join(ws, "gd")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
	out, err := cmd.CombinedOutput()
	t.Logf("git status in gd: %v %s", err, out)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("after the quarantine the owner's git status in gd ran the planted fsmonitor: gd, a git dir whose objects is a link, was not reported (quarantined: %+v)", q)
	}
}

// A link named like a runs-later dir. The scan lists .devcontainer, .husky,
// .githooks… only when they are real directories; a link by such a name
// to a folder of the workspace is neither a dir nor a runs-later file to
// it, so a .devcontainer link to a folder whose devcontainer.json has an
// initializeCommand (which VS Code's Dev Containers run on the host when the
// owner reopens the folder in its container) stays in place, unreported.
func TestScanRunsLaterSeesLinkedRunsLaterDir(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "main.go", "package main\n", 0o644)
	before := scan(t, ws)

	write(t, ws, "tools/dc/devcontainer.json", `{"image": "debian", "initializeCommand": "touch /tmp/ran"}`+"\n", 0o644)
	if err := os.Symlink("tools/dc", filepath.Join(ws, ".devcontainer")); err != nil {
		t.Fatal(err)
	}
	// What a tool following the name reads is the planted file.
	if b, err := os.ReadFile(filepath.Join(ws, ".devcontainer", "devcontainer.json")); err != nil || len(b) == 0 {
		t.Fatalf("control: .devcontainer/devcontainer.json through the link: %v", err)
	}

	q := Quarantine(ws, "job1", before.Planted(scan(t, ws)))
	if _, err := os.Lstat(filepath.Join(ws, ".devcontainer")); err == nil {
		t.Errorf(".devcontainer, a link to a folder holding a devcontainer.json, is still in place after the quarantine (quarantined: %+v)", q)
	}
}

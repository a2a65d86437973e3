package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyCommandWritesWhatRunsLater: a command that names, as what it
// writes, a path other programs run later outside any sandbox (git hooks and
// config, hook managers' files, .npmrc, .yarnrc*, shell start-up files) is
// denied as a Write of it is, whether its program is on the allow list or
// not, and wherever in the command line it stands: the sandbox leaves
// .githooks, .husky, .npmrc and a .git that does not exist yet writable.
// Reading those paths is unchanged.
func TestClassifyCommandWritesWhatRunsLater(t *testing.T) {
	w := newWorld(t)
	for _, d := range []string{".githooks", ".husky", "tpl", "gd", "sub"} {
		mustDo(t, os.MkdirAll(filepath.Join(w.ws, d), 0o755))
	}
	mustDo(t, os.WriteFile(filepath.Join(w.ws, "tpl/.npmrc"), []byte("x"), 0o600))
	mustDo(t, os.Symlink(".githooks", filepath.Join(w.ws, "hooks-dir")))
	mustDo(t, os.WriteFile(filepath.Join(w.ws, "tpl/hook"), []byte("x"), 0o600))
	mustDo(t, os.Symlink("../.githooks/pre-commit", filepath.Join(w.ws, "sub/hook")))
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"cp evil.sh .githooks/pre-commit", Deny, ".githooks/pre-commit is run later"},
		{"cp x .npmrc", Deny, ".npmrc is run later"},
		{"mv gd .git", Deny, "run later"},
		{"mv gd sub/.git", Deny, "run later"},
		{"tee .husky/pre-commit", Deny, "run later"},
		{"tee -a notes.txt .husky/pre-commit", Deny, "run later"},
		{"touch .pre-commit-config.yaml", Deny, "run later"},
		{"cp x .yarnrc.yml", Deny, "run later"},
		{"cp x .YarnRC.json", Deny, "run later"},
		{"cp -t .githooks pre-commit", Deny, "run later"},
		{"cp --target-directory=.githooks pre-commit", Deny, "run later"},
		{"cp pre-commit hooks-dir", Deny, "run later"},                 // a symlink to .githooks
		{"cp tpl/.npmrc sub", Deny, "sub/.npmrc is run later"},         // into a directory
		{"cp tpl/hook sub", Deny, ".githooks/pre-commit is run later"}, // cp writes through sub/hook, a symlink
		{"cp -r gd src/.vscode", Deny, "run later"},
		{"cp -b -S rc x .npm", Deny, ".npmrc is run later"}, // the old .npm is kept as .npm + rc
		{"cp evil .husk?", Deny, ".husky is run later"},     // bash expands it to the directory
		{"install -m 755 evil .git/hooks/pre-commit", Deny, "run later"},
		{"ln -s ../evil.sh .husky/pre-commit", Deny, "run later"},
		{"ln -s sub/.git", Deny, "run later"}, // links ./.git
		{"dd if=evil of=.githooks/pre-commit", Deny, "run later"},
		{"truncate -s 0 .git/config", Deny, "run later"},
		{"mkdir -p .husky/_", Deny, "run later"},
		{"rsync -a hooks/ .githooks/", Deny, "run later"},
		{"sed -i s/a/b/ .git/config", Deny, "run later"},
		{"sed -i.bak -e s/a/b/ .bashrc", Deny, "run later"},
		{"sed -i'.husky/*' s/a/a/ pre-commit", Deny, "run later"}, // the backup goes to .husky/pre-commit
		{"sort -o .husky/pre-commit evil.sh", Deny, "run later"},
		{"sort -uo.husky/pre-commit evil.sh", Deny, "run later"},
		{"sort --out=.husky/pre-commit evil.sh", Deny, "run later"},
		{"uniq evil.sh .husky/pre-commit", Deny, "run later"},
		{"go build -o .githooks/pre-commit ./cmd/x", Deny, "run later"},
		{"rustc -o .githooks/pre-commit main.rs", Deny, "run later"},
		{"rustc --out-dir .husky main.rs", Deny, "run later"},
		{"tsc --outFile .claude/settings.json x.ts", Deny, "run later"},
		{"cargo build --target-dir .git/x", Deny, "run later"},
		{"git mv evil .husky/pre-commit", Deny, "run later"},
		{"git diff --output=.husky/pre-commit", Deny, "run later"},
		{"git log -p --output .husky/pre-commit", Deny, "run later"},
		{"git format-patch -o .claude HEAD~1", Deny, "run later"},
		{"git checkout HEAD -- .vscode/settings.json", Deny, "run later"},
		{"git restore .husky/pre-commit", Deny, "run later"},
		{"git worktree add .husky main", Deny, "run later"},
		{"git --work-tree=.husky checkout -- .", Deny, "run later"},
		{"git --work-tree .githooks restore .", Deny, "run later"},
		{"git init --template=tpl sub", Deny, "template"},
		{"echo x > .npmrc", Deny, "run later"},
		{"cat evil >> .githooks/pre-commit", Deny, "run later"},
		{"ls && cp x .husky/pre-commit", Deny, "run later"},
		{"nice -n 5 cp x .husky/pre-commit", Deny, "run later"},
		{"timeout 5 tee .npmrc", Deny, "run later"},
		{"xargs cp -t .githooks", Deny, "run later"},
		{"echo x | sudo tee .npmrc", Deny, "run later"},
		{"/bin/cp x .npmrc", Deny, "run later"},
		{"find . -name pre-commit -exec cp {} .githooks/ ';'", Deny, "run later"},
		{"find . -fprint .husky/pre-commit", Deny, "run later"},
		{"bash -c 'cp x .husky/pre-commit'", Deny, "run later"},
		{"sh -ec 'ls; tee .npmrc'", Deny, "run later"},
		{"eval cp x .npmrc", Deny, "run later"},
		{"echo $(cp x .npmrc)", Deny, "run later"},
		{"cat > .bashrc <<EOF\nx\nEOF", Deny, "run later"},
		{"cp $SRC .husky/pre-commit", Deny, "run later"},
		{"git -C hooks-dir mv x pre-commit", Deny, "run later"},
		{"git -C sub mv x " + w.ws + "/.husky/pre-commit", Deny, "run later"},
		{"go -C hooks-dir build -o pre-commit ./cmd/x", Deny, "run later"},
		// Reading them, or writing elsewhere, is as before.
		{"cat .git/config", Allow, ""},
		{"git status", Allow, ""},
		{"ls .githooks", Allow, ""},
		{"grep -r hook .husky", Allow, ""},
		{"cp .git/config git-config.txt", Allow, ""},
		{"cp .githooks/pre-commit hook.txt", Allow, ""},
		{"sed -n p .git/config", Allow, ""},
		{"sort -o sorted.txt .npmrc", Allow, ""},
		{"cp x y", Allow, ""},
		{"mv gd src", Allow, ""},
		{"cp -r tpl copy", Allow, ""}, // copy does not exist: it becomes the copy of tpl
		{"git checkout main", Allow, ""},
		{"git --git-dir=.git --work-tree=. status", Allow, ""},
		{"git init sub", Allow, ""},
		{"git init my-template", Allow, ""},
		{"git -c init.templateDir=tpl init sub", Deny, "template"},
		{"go build -o bin/x ./cmd/x", Allow, ""},
		{"mkdir -p build/out", Allow, ""},
		{"cp x .gitattributes", Allow, ""},
		{"cp x .editorconfig", Allow, ""},
		{"tee notes.txt", Ask, "not on the allow list"},
		{"echo x > notes.txt", Ask, "redirection"},
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

package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

type world struct {
	root, ws, state, env, home string
	policy                     Policy
}

// newWorld lays out root/ws (the workspace, with a planted symlink to the
// state dir and one pointing out), root/state, root/.env and root/outside.
func newWorld(t testing.TB) world {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := world{root: root, ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"), env: filepath.Join(root, ".env")}
	for _, d := range []string{"ws/src", "state/approvals", "outside", "ws-evil"} {
		mustDo(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"ws/main.go", "ws/src/a.ts", "ws/.env", "outside/secret.txt", ".env", "state/approvals/x.request.json"} {
		mustDo(t, os.WriteFile(filepath.Join(root, f), []byte("x"), 0o600))
	}
	mustDo(t, os.Symlink("../state", filepath.Join(w.ws, "state-link")))
	mustDo(t, os.Symlink("../outside", filepath.Join(w.ws, "out-link")))
	w.policy = Policy{Workspace: w.ws, Allow: config.DefaultApproveAllow, Protected: []string{w.state, w.env}}
	return w
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestClassifyCommand(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		// Allowed first words pass.
		{"node x.mjs", Allow, "allow list"},
		{"npm run build", Allow, ""},
		{"npm test", Allow, ""},
		{"npm run-script lint", Allow, ""},
		{"git status", Allow, ""},
		{"git log --oneline -n 5", Allow, ""},
		{"git diff HEAD~1 -- src", Allow, ""},
		{"git commit -m 'fix: a thing'", Allow, ""},
		{"git remote -v", Allow, ""},
		{"go test ./...", Allow, ""},
		{"go vet ./...", Allow, ""},
		{"ls -la", Allow, ""},
		{"ls", Allow, ""},
		{"cat main.go", Allow, ""},
		{"cat " + filepath.Join(w.ws, "main.go"), Allow, ""},
		{"grep -rn TODO src", Allow, ""},
		{`grep -n "a.*b" main.go`, Allow, ""},
		{"find . -name '*.go'", Allow, ""},
		{"python3 script.py --flag", Allow, ""},
		{"python3 -m pytest -q", Allow, ""},
		{"make build", Allow, ""},
		{"echo hello world", Allow, ""},
		{"sed -i s/foo/bar/g main.go", Allow, ""},
		{"sed -n 1,5p main.go", Allow, ""},
		{"sed -e 's/a/b/' main.go", Allow, ""},
		{"mkdir -p build/out", Allow, ""},
		{"cp main.go main.go.bak", Allow, ""},
		{"awk 'NR==1' main.go", Allow, ""},
		{"awk '/x/' main.go", Allow, ""},                         // the program is not a path
		{"awk -F : '/x/' main.go", Ask, "outside the workspace"}, // unsure which is the program: check all
		{"awk '/x/' /etc/passwd", Ask, "outside the workspace"},
		{"sed -n '/start/,/end/p' main.go", Allow, ""},
		{"sed -n -e '/x/p' main.go", Allow, ""},
		{"sed -n '/x/p' /etc/passwd", Ask, "outside the workspace"},
		{"sed -e '/x/p' -e '/y/d' ../x", Ask, "outside the workspace"},
		{"sed -n '/x/w /tmp/out' main.go", Ask, "sed script"},
		{"  git   status  ", Allow, ""},
		// Program names that differ from an allow-list entry: names_test.go.
		// Empty.
		{"", Deny, "empty command"},
		{"   \t ", Deny, "empty command"},
		{"''", Ask, "not on the allow list"},
		// Chaining, redirection, substitution.
		{"ls && rm -rf /", Ask, "(&)"},
		{"ls ; rm x", Ask, "(;)"},
		{"ls & rm x", Ask, "(&)"},
		{"ls | sh", Ask, "pipe"},
		{"echo x > main.go", Ask, "redirection (>)"},
		{"cat < /etc/passwd", Ask, "redirection (<)"},
		{"ls\nrm x", Ask, "newline"},
		{"ls\rrm x", Ask, "carriage return"},
		{"echo `id`", Ask, "(`)"},
		{"echo $(id)", Ask, "$("},
		{"echo ${HOME}", Ask, "${"},
		{"cat $HOME/.ssh/id_rsa", Ask, "variable expansion"},
		{"echo $ANTHROPIC_AUTH_TOKEN", Ask, "variable expansion"},
		{`grep "a|b" main.go`, Ask, "pipe"},
		{"ls\x00", Ask, "control character"},
		{"cat {/etc/passwd,main.go}", Ask, "brace expansion"},
		{"(ls)", Ask, "subshell"},
		{"ls 'unterminated", Ask, "unbalanced quotes"},
		{`ls trailing\`, Ask, "trailing backslash"},
		// Program given by a path.
		{"./node x.mjs", Ask, "given by a path"},
		{"/opt/x/node x.mjs", Ask, "given by a path"},
		{"/usr/bin/git status", Ask, "given by a path"},
		{`'..\node' x`, Ask, "given by a path"},
		{`..\node x`, Ask, "not on the allow list"}, // the shell reads ..node
		// Unknown programs.
		{"rm -rf build", Ask, "not on the allow list"},
		{"curl https://example.com", Ask, "not on the allow list"},
		{"FOO=1 ls", Ask, "not on the allow list"},
		{"nodejs x.js", Ask, "not on the allow list"},
		// Wrappers, even if listed.
		{"sudo ls", Ask, "runs another program"},
		{"env", Ask, "runs another program"},
		{"env FOO=1 node x", Ask, "runs another program"},
		{"xargs rm", Ask, "runs another program"},
		{"npx some-package", Ask, "runs another program"},
		{"bash -c 'ls'", Ask, "runs another program"},
		{"sh script.sh", Ask, "runs another program"},
		{"timeout 5 ls", Ask, "runs another program"},
		// Dangerous forms of allowed programs.
		{"node -e 'require(\"fs\")'", Ask, "inline code"},
		{"node --eval 1", Ask, "inline code"},
		{"node --eval=1", Ask, "inline code"},
		{"node -p 1", Ask, "inline code"},
		{"node --print 1", Ask, "inline code"},
		{"node -pe 1", Ask, "inline code"},
		{"node -r ./hook.js x.js", Ask, "inline code"},
		{"node --require ./hook.js x.js", Ask, "loads code"},
		{"node --import data:text/javascript,1 x.js", Ask, "loads code"},
		{"node --inspect=0.0.0.0:9229 x.js", Ask, "debugger"},
		{"node -", Ask, "stdin"},
		{"npm install", Ask, "npm install"},
		{"npm i left-pad", Ask, "npm i"},
		{"npm ci", Ask, "npm ci"},
		{"npm exec foo", Ask, "npm exec"},
		{"npm x foo", Ask, "npm x"},
		{"npm publish", Ask, "npm publish"},
		{"npm config set registry http://evil", Ask, "npm config"},
		{"git push", Ask, "git push"},
		{"git push --force origin main", Ask, "git push"},
		{"git config core.pager cat", Ask, "git config"},
		{"git -c core.pager=sh log", Ask, "git -c"},
		{"git -c alias.x=!sh x", Ask, "git -c"},
		{"git --config-env=core.pager=X log", Ask, "--config-env"},
		{"git --exec-path=. status", Ask, "--exec-path"},
		{"git remote add origin https://example.com/x.git", Ask, "git remote add"},
		{"git remote set-url origin x", Ask, "git remote set-url"},
		{"git credential fill", Ask, "git credential"},
		{"git fetch", Ask, "git fetch"},
		{"git clone https://example.com/x.git", Ask, "git clone"},
		{"git submodule update --init", Ask, "git submodule"},
		{"git send-email x.patch", Ask, "git send-email"},
		{"git rebase -x 'make test' main", Ask, "rebase --exec"},
		{"git rebase --exec=make main", Ask, "rebase --exec"},
		{"git bisect run make", Ask, "bisect run"},
		{"git grep -Ovim foo", Ask, "open-files-in-pager"},
		{"git -C src status", Allow, ""},
		{"git -C ../outside status", Ask, "outside the workspace"},
		{"find . -exec rm {} +", Ask, "find -exec"},
		{"find . -execdir sh x", Ask, "find -execdir"},
		{"find . -delete", Ask, "find -delete"},
		{"find . -fprint out.txt", Ask, "find -fprint"},
		{"find . -ok rm {} +", Ask, "find -ok"},
		{"python3 -c 'import os'", Ask, "python3 -c"},
		{"python3 -Bc 'import os'", Ask, "python3 -c"},
		{"python -c 1", Ask, "python -c"},
		{"python3 -", Ask, "stdin"},
		{"python3 -m pip install requests", Ask, "-m pip"},
		{"python3 -m http.server", Ask, "http.server"},
		{"python3 -mpip install x", Ask, "-m pip"},
		{"python3 script.py -c x", Allow, ""},
		{"sed -i 's/a/b/e' main.go", Ask, "sed script"},
		{"sed 's/a/b/w out.txt' main.go", Ask, "sed script"},
		{"sed -n 'w out.txt' main.go", Ask, "sed script"},
		{"sed 'e id' main.go", Ask, "sed script"},
		{"sed '1r other.txt' main.go", Ask, "sed script"},
		{"sed -f script.sed main.go", Ask, "sed -f"},
		{"awk 'BEGIN{system(\"id\")}'", Ask, "system"},
		{"awk 'BEGIN{ARGV[1]=\"/etc/passwd\"}{print}' main.go", Ask, "ARGV"},
		{"awk -f prog.awk main.go", Ask, "awk -f"},
		{"awk 'BEGIN{print ENVIRON[\"HOME\"]}'", Ask, "ENVIRON"},
		{"make --eval='x:;id' x", Ask, "(;)"},
		{"make --eval=all", Ask, "make --eval"},
		{"go env -w GOFLAGS=-x", Ask, "go env -w"},
		{"go get example.com/x", Ask, "go get"},
		{"go install example.com/x@latest", Ask, "go install"},
		{"go test -exec sh ./...", Ask, "-exec"},
		{"go build -toolexec=./x ./...", Ask, "-toolexec"},
		{"cargo install ripgrep", Ask, "cargo install"},
		{"cargo --config build.rustc-wrapper=x build", Ask, "--config"},
		{"rg --pre ./x foo", Ask, "--pre"},
		{"sort --compress-program=sh main.go", Ask, "compress-program"},
		{"tree -o out.txt", Ask, "tree -o"},
		// Abbreviated long options and value-taking options must not move
		// sed's script out of the rules' sight.
		{"sed -e p --expr '1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed --expr='1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed --e '1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed --fi script.sed main.go", Ask, "sed -f"},
		{"sed -l 5 '1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed --line-length 5 '1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed -nl 5 '1r /etc/hosts' main.go", Ask, "sed script"},
		{"sed -l 5 -n '1,3p' main.go", Allow, ""},
		// python3 -m timeit runs inline code, like -c.
		{"python3 -m timeit \"__import__('os').system('id')\"", Ask, "inline code"},
		{"python3 -mtimeit 1", Ask, "inline code"},
		{"python3 -m pdb -c \"!__import__('os').system('id')\" main.go", Ask, "inline code"},
		{"python3 --check-hash-based-pycs always -c 'import os'", Ask, "python3 -c"},
		{"python3 --check-hash-based-pycs=always -c 'import os'", Ask, "python3 -c"},
		// gawk indirect calls reach system() without naming it.
		{`awk 'BEGIN{f="sys" "tem"} BEGIN{@f("id")}'`, Ask, "indirect"},
		{`awk 'BEGIN{f="sys" "tem" "@ "} BEGIN{@f("id")}'`, Ask, "indirect"},
		// sort --files0-from prints files named in a list the rules never see.
		{"sort --files0-from=list.txt", Ask, "files0-from"},
		{"sort --files0-from list.txt", Ask, "files0-from"},
		{"wc --files0-from=list.txt", Ask, "files0-from"},
		{"find -files0-from list.txt -name x", Ask, "files0-from"},
		// Recursive reads that follow symlinks (a planted out-link) read
		// outside the workspace although every argument is inside.
		{"grep -R foo .", Ask, "symlink"},
		{"grep --dereference-recursive foo .", Ask, "symlink"},
		{"grep -rnR foo .", Ask, "symlink"},
		{"rg -L foo", Ask, "symlink"},
		{"rg --follow foo", Ask, "symlink"},
		{"cp -rL src copy", Ask, "symlink"},
		{"cp -r --dereference src copy", Ask, "symlink"},
		{"grep -r foo .", Allow, ""},
		{"cp -r src copy", Allow, ""},
		{"rg -l foo", Allow, ""},
		// Listings that follow symlinks show the names of outside trees.
		{"find -L . -name x", Ask, "symlink"},
		{"find . -follow -type f", Ask, "symlink"},
		{"find -H . -name x", Allow, ""},
		{"ls -RL", Ask, "symlink"},
		{"ls -L -R src", Ask, "symlink"},
		{"ls --dereference --recursive", Ask, "symlink"},
		{"ls -L src", Allow, ""},
		{"ls -R src", Allow, ""},
		{"tree -l", Ask, "symlink"},
		{"tree -a src", Allow, ""},
		// Abbreviated or clustered make --eval, npm options that pick the
		// program npm runs, git apply outside the work tree.
		{"make --eva=all", Ask, "make --eval"},
		{"make -sE all", Ask, "make --eval"},
		{"make -s all", Allow, ""},
		{"npm run build --script-shell=id", Ask, "--script-shell"},
		{"npm help npm --viewer=browser --browser=id", Ask, "--viewer"},
		{"npm help npm --brow=id", Ask, "--browser"},
		{"npm test --node-options=--require=./x.js", Ask, "--node-options"},
		{"npm test --userconfig=npmrc", Ask, "--userconfig"},
		{"git apply --unsafe-paths x.patch", Ask, "unsafe-paths"},
		// Go's flag package takes --flag=value like -flag=value.
		{"go test --exec=./ex.sh ./...", Ask, "-exec"},
		{"go vet -vettool=./x ./...", Ask, "-vettool"},
		{"go vet --vettool ./x ./...", Ask, "-vettool"},
		// getopt and git's parse-options take unambiguous
		// abbreviations of long options.
		{"git rebase --exe=make main", Ask, "rebase --exec"},
		{"git rebase --ex make main", Ask, "rebase --exec"},
		{"git grep --open=vim foo", Ask, "open-files-in-pager"},
		{"sort --compress=sh -S 1K main.go", Ask, "compress-program"},
		{"sort --com sh main.go", Ask, "compress-program"},
		{"git rebase --empty=drop main", Allow, ""},
		{"awk --fil=prog.awk main.go", Ask, "program file"},
		{"awk --lo ./ext.so 1 main.go", Ask, "program file"},
		{"awk --e prog.awk main.go", Ask, "program file"},
		{"awk --inc=lib.awk 1 main.go", Ask, "program file"},
		{"diff -rN . src", Ask, "symlink"},
		{"diff --recursive --new-file . src", Ask, "symlink"},
		{"diff -r --no-dereference . src", Allow, ""},
		{"diff -u main.go main.go", Allow, ""},
		{"rustc -C linker=./x main.rs", Ask, "linker"},
		{"rustc -Clinker=cc main.rs", Ask, "linker"},
		{"rustc --codegen linker=cc main.rs", Ask, "linker"},
		{"rustc @args.txt main.rs", Ask, "@file"},
		{"rustc -O main.rs", Allow, ""},
		// The shell expands an unquoted glob before the program
		// runs; what it matches is checked, not only the pattern's prefix.
		{"cat out-lin*/secret.txt", Ask, "symlink"},
		{"cat .en?", Ask, ".env"},
		{"cat src/*.ts", Allow, ""},
		{"cat 'out-lin*/secret.txt'", Ask, "symlink"}, // quoting is not tracked: checked as if expanded
		{"find . -name '*.go'", Allow, ""},
		// Protected and outside paths in arguments.
		{"cat .env", Ask, ".env"},
		{"cat ./config/.env.local", Ask, ".env"},
		{"grep -r KEY .ENV", Ask, ".env"},
		{"cat " + w.env, Deny, "protected"},
		{"cat ~/.ssh/id_rsa", Ask, "home"},
		{"cat ~/.ssh/id_ed25519", Ask, "home"},
		{"ls ~", Ask, "home"},
		{"cat /etc/passwd", Ask, "outside the workspace"},
		{"cat ../outside/secret.txt", Ask, "outside the workspace"},
		{"cat out-link/secret.txt", Ask, "symlink"},
		{"ls ..", Ask, "outside the workspace"},
		{"ls " + w.ws + "-evil", Ask, "outside the workspace"},
		{"grep -r x /", Ask, "outside the workspace"},
		{"grep -f/etc/passwd main.go", Ask, "outside the workspace"},
		{"grep --file=/etc/passwd main.go", Ask, "outside the workspace"},
		{"cp main.go /tmp/x", Ask, "outside the workspace"},
		{"cp -t/tmp main.go", Ask, "outside the workspace"},
		{"mv main.go ../x", Ask, "outside the workspace"},
		{"ls /etc/*", Ask, "outside the workspace"},
		{"cat ../*", Ask, ".."},
		{"cat state-link/approvals/x.request.json", Deny, "protected"},
		{"ls state-link", Deny, "protected"},
		{"cat " + w.state + "/approvals/x.request.json", Deny, "protected"},
		{"touch " + w.state + "/approval-off", Deny, "protected"},
		{"cp main.go " + w.state + "/approvals/x.decision.json", Deny, "protected"},
		{"git -C " + w.state + " status", Deny, "protected"},
		// A protected path is denied wherever it stands, also after an
		// argument that alone would send the command to a human.
		{"cat /etc/passwd " + w.state + "/approvals/x.request.json", Deny, "protected"},
		{"find " + w.state + " -delete", Deny, "protected"},
		{"sort --compress-program=sh " + w.env, Deny, "protected"},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			v := ClassifyCommand(c.cmd, w.policy)
			if v.Decision != c.want {
				t.Fatalf("ClassifyCommand(%q) = %s (%s), want %s", c.cmd, v.Decision, v.Reason, c.want)
			}
			if !strings.Contains(v.Reason, c.reason) {
				t.Errorf("reason %q does not mention %q", v.Reason, c.reason)
			}
			if v.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
}

// TestClassifyCommandBSDSed: BSD sed (macOS) takes -i's suffix as the next
// word, so a GNU reading of `sed -i "" 'w /outside' f` would check "" as the
// script and admit 'w /outside' as a file inside the workspace.
func TestClassifyCommandBSDSed(t *testing.T) {
	w := newWorld(t)
	for _, bsd := range []bool{false, true} {
		was := bsdSed
		bsdSed = bsd
		t.Cleanup(func() { bsdSed = was })
		cases := []struct {
			cmd    string
			gnu    Action
			bsd    Action
			reason string // of the BSD verdict
		}{
			{"sed -i '' 's/a/b/' main.go", Allow, Allow, ""},
			{"sed -n -i '' '1p' main.go", Allow, Allow, ""},
			{"sed -i '' 'w /tmp/out' main.go", Allow, Ask, "sed script"},
			{"sed -i '' -e 'w /tmp/out' main.go", Ask, Ask, "sed script"},
			{"sed -i 's/a/b/' main.go", Allow, Ask, "backup suffix"},
			{"sed -i.bak 's/a/b/' main.go", Allow, Ask, "backup suffix"},
			{"sed -i .bak 's/a/b/' main.go", Ask, Ask, "backup suffix"},
			{"sed -ni '' '1p' main.go", Allow, Allow, ""},
			{"sed -e 's/a/b/' -i '' main.go", Allow, Allow, ""},
			{"sed 's/a/b/' main.go", Allow, Allow, ""},
			{"sed -n '1p' main.go -i", Allow, Allow, ""}, // BSD: -i after an operand is a file name
		}
		for _, tc := range cases {
			name := map[bool]string{false: "gnu/", true: "bsd/"}[bsd] + tc.cmd
			t.Run(name, func(t *testing.T) {
				want, reason := tc.gnu, ""
				if bsd {
					want, reason = tc.bsd, tc.reason
				}
				v := ClassifyCommand(tc.cmd, w.policy)
				if v.Decision != want || !strings.Contains(v.Reason, reason) {
					t.Errorf("%s: %v %q, want %v containing %q", tc.cmd, v.Decision, v.Reason, want, reason)
				}
			})
		}
	}
}

// TestFollowsLinksDu: du is not on the default allow list; an owner who
// adds it still gets -L sent to a human.
func TestFollowsLinksDu(t *testing.T) {
	for args, want := range map[string]bool{"-aL .": true, "--dereference .": true, "--dereference-args x": true, "-sh .": false, "-a src": false} {
		if got := followsLinks("du", strings.Fields(args)) != ""; got != want {
			t.Errorf("du %s: follows links %v, want %v", args, got, want)
		}
	}
}

func TestClassifyCommandAllowList(t *testing.T) {
	w := newWorld(t)
	p := w.policy
	p.Allow = []string{"LS", "Make.EXE"}
	for cmd, want := range map[string]Action{"ls": Allow, "make": Allow, "git status": Ask, "cat main.go": Ask, "bash": Ask} {
		if v := ClassifyCommand(cmd, p); v.Decision != want {
			t.Errorf("with allow list %v: %q = %s (%s), want %s", p.Allow, cmd, v.Decision, v.Reason, want)
		}
	}
	p.Allow = append(p.Allow, "sudo")
	if v := ClassifyCommand("sudo ls", p); v.Decision != Ask {
		t.Errorf("a listed wrapper must still go to a human: %+v", v)
	}
	p.Allow = nil
	if v := ClassifyCommand("ls", p); v.Decision != Ask {
		t.Errorf("an empty allow list must allow nothing: %+v", v)
	}
}

func TestClassify(t *testing.T) {
	w := newWorld(t)
	in := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name   string
		req    Request
		want   Action
		reason string
	}{
		{"bash allowed", Request{"Bash", in("command", "git status", "description", "status")}, Allow, "allow list"},
		{"bash chained", Request{"Bash", in("command", "ls && id")}, Ask, "(&)"},
		{"bash empty", Request{"Bash", in("command", "")}, Deny, "empty command"},
		{"bash missing command", Request{"Bash", in("description", "x")}, Deny, "malformed"},
		{"bash non-string command", Request{"Bash", in("command", 3.0)}, Deny, "malformed"},
		{"bash outside the sandbox", Request{"Bash", in("command", "ls", "dangerouslyDisableSandbox", true)}, Ask, "outside the OS sandbox"},
		{"monitor is a command tool", Request{"Monitor", in("command", "tail -f x | grep y")}, Ask, "pipe"},
		{"monitor runs in the background", Request{"Monitor", in("command", "tail main.go")}, Ask, "background"},
		{"bash in the background", Request{"Bash", in("command", "python3 swap.py", "run_in_background", true)}, Ask, "background"},
		{"bash in the foreground", Request{"Bash", in("command", "python3 build.py", "run_in_background", false)}, Allow, ""},
		{"powershell", Request{"PowerShell", in("command", "Get-ChildItem")}, Ask, "PowerShell"},
		{"read inside", Request{"Read", in("file_path", filepath.Join(w.ws, "main.go"))}, Allow, "inside"},
		{"read relative inside", Request{"Read", in("file_path", "src/a.ts")}, Allow, ""},
		{"read outside", Request{"Read", in("file_path", "/etc/passwd")}, Ask, "outside the workspace"},
		{"read traversal", Request{"Read", in("file_path", w.ws+"/../outside/secret.txt")}, Ask, "outside"},
		{"read through a symlink", Request{"Read", in("file_path", w.ws+"/out-link/secret.txt")}, Ask, "symlink"},
		{"read ssh key", Request{"Read", in("file_path", "~/.ssh/id_rsa")}, Ask, "home"},
		{"read .env in workspace", Request{"Read", in("file_path", w.ws+"/.env")}, Ask, ".env"},
		{"read daemon .env", Request{"Read", in("file_path", w.env)}, Deny, "protected"},
		{"read state via planted symlink", Request{"Read", in("file_path", w.ws+"/state-link/approvals/x.request.json")}, Deny, "protected"},
		{"write into the state dir", Request{"Write", in("file_path", w.state+"/approvals/x.decision.json", "content", "{}")}, Deny, "protected"},
		{"write approval-off flag", Request{"Write", in("file_path", w.state+"/approval-off", "content", "")}, Deny, "protected"},
		{"write inside", Request{"Write", in("file_path", w.ws+"/new.go", "content", "package x")}, Allow, ""},
		{"write new file under symlinked dir", Request{"Write", in("file_path", w.ws+"/out-link/new.txt", "content", "x")}, Ask, "symlink"},
		{"edit inside", Request{"Edit", in("file_path", "main.go", "old_string", "a", "new_string", "b")}, Allow, ""},
		{"edit prefix sibling", Request{"Edit", in("file_path", w.ws+"-evil/x", "old_string", "a", "new_string", "b")}, Ask, "outside"},
		{"multiedit outside", Request{"MultiEdit", in("file_path", "/tmp/x", "edits", []any{})}, Ask, "outside"},
		{"notebook inside", Request{"NotebookEdit", in("notebook_path", "nb.ipynb", "new_source", "x")}, Allow, ""},
		{"notebook outside", Request{"NotebookEdit", in("notebook_path", "/tmp/nb.ipynb")}, Ask, "outside"},
		{"read missing path", Request{"Read", in()}, Deny, "malformed"},
		{"read empty path", Request{"Read", in("file_path", "")}, Deny, "malformed"},
		{"read non-string path", Request{"Read", in("file_path", []any{"/etc/passwd"})}, Deny, "malformed"},
		{"glob inside", Request{"Glob", in("pattern", "**/*.go")}, Allow, ""},
		{"glob with path inside", Request{"Glob", in("pattern", "*.ts", "path", w.ws+"/src")}, Allow, ""},
		{"glob absolute outside", Request{"Glob", in("pattern", "/etc/*")}, Ask, "outside"},
		{"glob dotdot", Request{"Glob", in("pattern", "../**/*")}, Ask, ".."},
		{"glob path outside", Request{"Glob", in("pattern", "*", "path", "/home")}, Ask, "outside"},
		{"glob pattern escaping its path", Request{"Glob", in("pattern", "../../*", "path", w.ws+"/src")}, Ask, ".."},
		{"glob into the state dir", Request{"Glob", in("pattern", "*", "path", w.state)}, Deny, "protected"},
		{"glob for .env files", Request{"Glob", in("pattern", "**/.env*")}, Ask, ".env"},
		{"grep regex is not a path", Request{"Grep", in("pattern", "../../etc/passwd|/root")}, Allow, ""},
		{"grep path outside", Request{"Grep", in("pattern", "x", "path", "/etc")}, Ask, "outside"},
		{"grep glob outside", Request{"Grep", in("pattern", "x", "glob", "../*")}, Ask, ".."},
		{"grep glob inside", Request{"Grep", in("pattern", "x", "glob", "*.{ts,tsx}", "path", "src")}, Allow, ""},
		{"grep negated glob", Request{"Grep", in("pattern", "x", "glob", "!*.min.js")}, Allow, ""},
		{"ls default", Request{"LS", in()}, Allow, ""},
		{"ls outside", Request{"LS", in("path", "/")}, Ask, "outside"},
		{"ls state", Request{"LS", in("path", w.state)}, Deny, "protected"},
		{"lsp inside", Request{"LSP", in("filePath", "main.go", "operation", "hover")}, Allow, ""},
		{"webfetch", Request{"WebFetch", in("url", "https://example.com", "prompt", "x")}, Ask, "network"},
		{"websearch", Request{"WebSearch", in("query", "x")}, Ask, "network"},
		{"unknown tool", Request{"FrobnicateTool", in("x", 1.0)}, Ask, "not known"},
		{"mcp tool", Request{"mcp__other__do", in()}, Ask, "MCP tool"},
		{"agent", Request{"Agent", in("prompt", "x")}, Allow, "subagent"},
		// An isolated subagent works in a git worktree outside
		// the workspace; files that git, Claude Code, editors or shells run
		// later outside any sandbox may not be written by file tools.
		{"agent isolated in a worktree", Request{"Agent", in("prompt", "x", "isolation", "worktree")}, Deny, "isolation worktree"},
		{"agent isolated remotely", Request{"Agent", in("prompt", "x", "isolation", "remote")}, Deny, "outside the workspace"},
		{"edit .git/config", Request{"Edit", in("file_path", w.ws+"/.git/config", "old_string", "a", "new_string", "b")}, Deny, ".git/config is run later"},
		{"write a git hook", Request{"Write", in("file_path", ".git/hooks/pre-commit", "content", "x")}, Deny, "run later"},
		{"write a nested repo's config", Request{"Write", in("file_path", w.ws+"/sub/.git/config", "content", "x")}, Deny, "run later"},
		{"write project settings", Request{"Write", in("file_path", w.ws+"/.claude/settings.json", "content", "{}")}, Deny, "run later"},
		{"write .mcp.json", Request{"Write", in("file_path", w.ws+"/.mcp.json", "content", "{}")}, Deny, "run later"},
		{"write an editor task", Request{"Write", in("file_path", w.ws+"/.vscode/tasks.json", "content", "{}")}, Deny, "run later"},
		{"write a shell rc, any case", Request{"Write", in("file_path", w.ws+"/.BashRC", "content", "x")}, Deny, "run later"},
		{"notebook into .husky", Request{"NotebookEdit", in("notebook_path", w.ws+"/.husky/pre-commit", "new_source", "x")}, Deny, "run later"},
		{"read .git/config is fine", Request{"Read", in("file_path", w.ws+"/.git/config")}, Allow, ""},
		{"write .pre-commit-config.yaml", Request{"Write", in("file_path", w.ws+"/.pre-commit-config.yaml", "content", "repos: []")}, Deny, "run later"},
		{"write a lefthook config", Request{"Write", in("file_path", w.ws+"/lefthook.yml", "content", "x")}, Deny, "run later"},
		{"write .yarnrc.yaml", Request{"Write", in("file_path", w.ws+"/.yarnrc.yaml", "content", "x")}, Deny, "run later"},
		{"write .yarnrc.json, any case", Request{"Write", in("file_path", w.ws+"/sub/.YARNRC.json", "content", "{}")}, Deny, "run later"},
		{"write .gitattributes is fine", Request{"Write", in("file_path", w.ws+"/.gitattributes", "content", "* text")}, Allow, ""},
		{"write .editorconfig is fine", Request{"Write", in("file_path", w.ws+"/.editorconfig", "content", "x")}, Allow, ""},
		{"write .pre-commit-hooks.yaml is fine", Request{"Write", in("file_path", w.ws+"/.pre-commit-hooks.yaml", "content", "x")}, Allow, ""},
		{"write .gitignore is fine", Request{"Write", in("file_path", w.ws+"/.gitignore", "content", "x")}, Allow, ""},
		{"write a file named like a dir part", Request{"Write", in("file_path", w.ws+"/docs/git/config", "content", "x")}, Allow, ""},
		{"skill", Request{"Skill", in("skill", "x")}, Deny, "never allowed in a job"},
		{"worktree", Request{"EnterWorktree", in("name", "esc")}, Deny, "never allowed in a job"},
		{"cron", Request{"CronCreate", in("cron", "* * * * *")}, Deny, "never allowed in a job"},
		{"no tool", Request{"", in()}, Deny, "no tool name"},
		{"todo", Request{"TodoWrite", in("todos", []any{})}, Allow, "bookkeeping"},
		{"task output", Request{"TaskOutput", in("task_id", "1")}, Allow, ""},
		{"kill shell", Request{"KillShell", in("shell_id", "1")}, Allow, ""},
		{"ask user", Request{"AskUserQuestion", in("questions", []any{})}, Deny, "nobody can answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(c.req, w.policy)
			if v.Decision != c.want {
				t.Fatalf("Classify(%s %v) = %s (%s), want %s", c.req.Tool, c.req.Input, v.Decision, v.Reason, c.want)
			}
			if !strings.Contains(v.Reason, c.reason) {
				t.Errorf("reason %q does not mention %q", v.Reason, c.reason)
			}
			if v.Summary == "" || strings.ContainsAny(v.Summary, "\n\r") {
				t.Errorf("summary %q must be one non-empty line", v.Summary)
			}
		})
	}
}

func TestSummaryIsClipped(t *testing.T) {
	w := newWorld(t)
	v := Classify(Request{"Bash", map[string]any{"command": "echo " + strings.Repeat("é", 1000)}}, w.policy)
	if len(v.Summary) > maxSummary+len(" … [0000 bytes cut] … ") || !utf8.ValidString(v.Summary) ||
		!strings.Contains(v.Summary, " bytes cut] … ") || !strings.HasPrefix(v.Summary, "Bash: echo") || !strings.HasSuffix(v.Summary, "é") {
		t.Fatalf("summary not clipped: %d bytes %q", len(v.Summary), v.Summary)
	}
	// The end of a long command is kept: that is where `; rm -rf` hides.
	v = Classify(Request{"Bash", map[string]any{"command": "echo " + strings.Repeat("a", 450) + " ; rm -rf ~/precious"}}, w.policy)
	if !strings.HasSuffix(v.Summary, "; rm -rf ~/precious") || len(v.Summary) > maxSummary+len(" … [0000 bytes cut] … ") {
		t.Errorf("summary %q hides the end of the command", v.Summary)
	}
}

// FuzzClassifyCommand: never "allow" for a command containing a chaining,
// redirection or substitution character, a path-given program, or a .env.
func FuzzClassifyCommand(f *testing.F) {
	for _, s := range []string{"ls", "git status", "ls && id", "echo $(id)", "cat .env", "node -e 1", "./node",
		"cat ../x", "find . -delete", "sed 's/a/b/e' x", "ls 'a;b'", "ls \"a|b\"", "ls a\\;b", "NODE.EXE x",
		"git -c x=y log", "cat ~/.ssh/id_rsa", "echo ${x}", "cat state-link/x", "npm run build", "python3 -c 1"} {
		f.Add(s)
	}
	f.Add("sed -i '' 's/a/b/' x")
	f.Add("sed -ni '' -e 1p x")
	w := newWorld(f)
	f.Fuzz(func(t *testing.T, cmd string) {
		// Both sed dialects: BSD sed's rules run only on macOS and the BSDs.
		was := bsdSed
		bsdSed = true
		bsd := ClassifyCommand(cmd, w.policy)
		bsdSed = was
		if bsd.Decision == Allow && ClassifyCommand(cmd, w.policy).Decision != Allow && !inPlaceCluster(cmd) {
			t.Fatalf("ClassifyCommand(%q) allowed under BSD sed only: %+v", cmd, bsd)
		}
		v := ClassifyCommand(cmd, w.policy)
		if v.Decision != Allow && v.Decision != Ask && v.Decision != Deny || v.Reason == "" {
			t.Fatalf("ClassifyCommand(%q) = %+v", cmd, v)
		}
		if v.Decision != Allow {
			return
		}
		for _, bad := range []string{";", "&", "|", "<", ">", "\n", "\r", "`", "$(", "${", "$"} {
			if strings.Contains(cmd, bad) {
				t.Fatalf("ClassifyCommand(%q) allowed a command containing %q", cmd, bad)
			}
		}
		if strings.Contains(strings.ToLower(cmd), ".env") {
			t.Fatalf("ClassifyCommand(%q) allowed a command mentioning .env", cmd)
		}
		words, err := splitWords(cmd)
		if err != nil || len(words) == 0 {
			t.Fatalf("ClassifyCommand(%q) allowed an unparsable command", cmd)
		}
		if strings.ContainsAny(words[0].text, `/\`) {
			t.Fatalf("ClassifyCommand(%q) allowed a program given by a path", cmd)
		}
		if !onAllowList(normalizeProgram(words[0].text), w.policy.Allow) {
			t.Fatalf("ClassifyCommand(%q) allowed a program off the allow list", cmd)
		}
	})
}

// inPlaceCluster reports a word that may be sed's -i in a cluster (-i,
// -ni, -0i): BSD sed takes the next word as its suffix, GNU sed does not, so
// the two readings of the words after it differ by design.
func inPlaceCluster(cmd string) bool {
	if strings.Contains(cmd, "-i") {
		return true
	}
	for _, f := range strings.Fields(cmd) {
		if f = strings.Trim(f, `'"`); strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.Contains(f, "i") {
			return true
		}
	}
	return false
}

func TestDotEnvInWorkspacePath(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "proj.envoy")
	mustDo(t, os.MkdirAll(ws, 0o755))
	mustDo(t, os.Symlink(".env", filepath.Join(ws, "innocent.txt")))
	p := Policy{Workspace: ws, Allow: []string{"cat"}}
	for _, c := range []struct {
		req  Request
		want Action
	}{
		{Request{"Read", map[string]any{"file_path": filepath.Join(ws, "main.go")}}, Allow},
		{Request{"Read", map[string]any{"file_path": filepath.Join(ws, ".env")}}, Ask},
		{Request{"Read", map[string]any{"file_path": filepath.Join(ws, "innocent.txt")}}, Ask}, // resolves to .env
		{Request{"Bash", map[string]any{"command": "cat " + filepath.Join(ws, "main.go")}}, Allow},
		{Request{"Bash", map[string]any{"command": "cat innocent.txt"}}, Ask},
		{Request{"Bash", map[string]any{"command": "cat .Env.local"}}, Ask},
	} {
		if v := Classify(c.req, p); v.Decision != c.want {
			t.Errorf("Classify(%v) = %s (%s), want %s", c.req.Input, v.Decision, v.Reason, c.want)
		}
	}
}

// A command longer than the rules read is denied without being parsed: a
// MiB of globs had cost the daemon seconds of CPU for one question.
func TestAnOverlongCommandIsDeniedUnread(t *testing.T) {
	p := Policy{Workspace: t.TempDir(), Allow: []string{"ls"}}
	cmd := "ls " + strings.Repeat("*/*/[a-z]*.go ", (1<<20)/14)
	v := Classify(Request{Tool: "Bash", Input: map[string]any{"command": cmd}}, p)
	if v.Decision != Deny || !strings.Contains(v.Reason, "longer than the rules read (64 KiB)") || len(v.Summary) > 1024 {
		t.Fatalf("verdict %s %q (summary %d bytes)", v.Decision, v.Reason, len(v.Summary))
	}
	ok := "ls " + strings.Repeat("a ", 1000)
	if v := Classify(Request{Tool: "Bash", Input: map[string]any{"command": ok}}, p); v.Decision != Allow {
		t.Errorf("a 2 KiB ls: %s %q", v.Decision, v.Reason)
	}
}

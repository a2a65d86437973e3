package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyCommandOptionSpellings: a dangerous option is found in every
// spelling the program accepts (a short option in a cluster, a long one
// abbreviated), and the subcommand is found after the global options that
// take a value; an option the rules do not know before the subcommand goes
// to a human.
func TestClassifyCommandOptionSpellings(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		// git short-option clusters.
		{"git rebase -fx 'touch PWNED' HEAD~1", Ask, "rebase --exec"},
		{"git rebase -ix make main", Ask, "rebase --exec"},
		{"git rebase -sx main", Allow, ""}, // -s takes x as the strategy
		{"git grep -nOtouch foo", Ask, "open-files-in-pager"},
		{"git grep -inO foo", Ask, "open-files-in-pager"},
		{"git grep -n -e Oops", Allow, ""},
		{"git grep -eOops", Allow, ""}, // -e takes Oops as the pattern
		// git long-option abbreviations.
		{"git apply --uns x.patch", Ask, "unsafe-paths"},
		{"git apply --unsafe x.patch", Ask, "unsafe-paths"},
		{"git apply --unsafe-p=1 x.patch", Ask, "unsafe-paths"},
		{"git rebase --exe make main", Ask, "rebase --exec"},
		{"git grep --open-f vim foo", Ask, "open-files-in-pager"},
		{"git apply --check x.patch", Allow, ""},
		// git global options that take a value.
		{"git --attr-source status push", Ask, "git push"},
		{"git --attr-source=HEAD status", Allow, ""},
		{"git --git-dir .git status", Allow, ""},
		{"git --work-tree . push", Ask, "git push"},
		{"git --namespace x fetch", Ask, "git fetch"},
		{"git --no-pager log", Allow, ""},
		{"git -P log", Allow, ""},
		{"git --frobnicate status", Ask, "--frobnicate"},
		{"git --shallow-file x status", Ask, "--shallow-file"},
		{"git -Csrc status", Ask, "-Csrc"},
		// go's -C comes before the subcommand.
		{"go -C . env -w GOPROXY=https://evil.example", Ask, "go env -w"},
		{"go -C . install example.com/x@latest", Ask, "go install"},
		{"go -C src get example.com/x", Ask, "go get"},
		{"go -C=src get example.com/x", Ask, "go get"},
		{"go -C src test ./...", Allow, ""},
		{"go -x build", Ask, "before the subcommand"},
		{"go env --w GOPROXY=x", Ask, "go env -w"},
		{"go env -w=true GOPROXY=x", Ask, "go env -w"},
		{"go env GOPATH", Allow, ""},
		// npm options before the subcommand.
		{"npm --prefix ls install left-pad", Ask, "before the subcommand"},
		{"npm --tag t install evil-pkg", Ask, "before the subcommand"},
		{"npm -w test install x", Ask, "before the subcommand"},
		{"npm -s test", Ask, "before the subcommand"},
		{"npm test -s", Allow, ""},
		// cargo options before the subcommand, toolchains, aliases.
		{"cargo --color always install ripgrep", Ask, "before the subcommand"},
		{"cargo --color never publish", Ask, "before the subcommand"},
		{"cargo -q build", Ask, "before the subcommand"},
		{"cargo +nightly install ripgrep", Ask, "cargo"},
		{"cargo rm serde", Ask, "cargo rm"},
		{"cargo frob", Ask, "cargo frob"},
		{"cargo build --release", Allow, ""},
		{"cargo test", Allow, ""},
		// python -m only for modules known to be harmless.
		{"python3 -m runpy pip install requests", Ask, "-m runpy"},
		{"python3 -m cProfile -m pip install requests", Ask, "-m cProfile"},
		{"python3 -m profile -m pip install requests", Ask, "-m profile"},
		{"python3 -m trace --trace -m pip install requests", Ask, "-m trace"},
		{"python3 -m pydoc -p 8000", Ask, "-m pydoc"},
		{"python3 -mrunpy pip", Ask, "-m runpy"},
		{"python3 -Im coverage run -m pip", Ask, "-m coverage"},
		{"python3 -m unittest discover", Allow, ""},
		{"python3 -m py_compile main.go", Allow, ""},
		{"python3 -Bm pytest -q", Allow, ""},
		// awk program files and extensions, clustered or attached.
		{"awk -flib.awk main.go", Ask, "program file"},
		{"awk -ilib.awk 1 main.go", Ask, "program file"},
		{"awk -Eprog.awk main.go", Ask, "program file"},
		{"awk -lext 1 main.go", Ask, "program file"},
		{"awk -bf lib.awk main.go", Ask, "program file"},
		{"awk --i lib.awk 1 main.go", Ask, "program file"},
		{"awk -W exec prog.awk main.go", Ask, "-W"},
		{"awk -Wi=lib.awk 1 main.go", Ask, "-W"},
		{"awk -vf=1 1 main.go", Allow, ""}, // -v takes f=1 as its value
		{"awk -b 1 main.go", Allow, ""},
		// sort's long options at any unambiguous prefix.
		{"sort --co=./x -S 1K main.go", Ask, "compress-program"},
		{"sort --co ./x main.go", Ask, "compress-program"},
		{"sort --files0=list.txt", Ask, "list of file names"},
		{"wc --f=list.txt", Ask, "list of file names"},
		{"sort --check main.go", Allow, ""},
		// file reads the names of the files to open from a list.
		{"file -f list.txt", Ask, "list of file names"},
		{"file -bf list.txt", Ask, "list of file names"},
		{"file -flist.txt", Ask, "list of file names"},
		{"file --files-from list.txt", Ask, "list of file names"},
		{"file --f=list.txt", Ask, "list of file names"},
		{"file -b main.go", Allow, ""},
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

// TestClassifyCommandLongOptionClusters: every tail of a short-option
// cluster is checked as a path (-f/etc/passwd is -f with /etc/passwd), however
// many letters come before it, and a name of NAME_MAX (255) bytes in one is
// found: here it is a symlink to the state dir, which is denied. A cluster too
// long to check goes to a human.
func TestClassifyCommandLongOptionClusters(t *testing.T) {
	w := newWorld(t)
	long := strings.Repeat("n", 255)
	mustDo(t, os.Symlink("../state", filepath.Join(w.ws, long)))
	r := strings.Repeat
	request := "/approvals/x.request.json"
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"grep -f" + long + request + " main.go", Deny, "protected"},
		{"grep -" + r("r", 100) + "f" + long + request + " main.go", Deny, "protected"},
		{"grep -" + r("r", 300) + "f" + long + request + " main.go", Deny, "protected"},
		{"grep -" + r("r", 300) + "f" + w.state + request + " main.go", Deny, "protected"},
		{"grep -r/" + r("r", 300) + "f" + w.state + request + " main.go", Deny, "protected"},
		{"grep -" + r("r/", 200) + "f" + w.state + request + " main.go", Deny, "protected"},
		{"grep -" + r("r", 253) + "f/etc/passwd main.go", Ask, "outside the workspace"},
		{"grep -" + r("r", maxOptionCluster) + " x main.go", Ask, "longer than"},
		{"grep -" + r("r", 250) + " x main.go", Allow, ""},
		{"grep -" + r("r", 240) + "f" + r("n", 4) + " main.go", Allow, ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			v := ClassifyCommand(c.cmd, w.policy)
			if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("ClassifyCommand(%q) = %s (%s), want %s containing %q", c.cmd, v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
}

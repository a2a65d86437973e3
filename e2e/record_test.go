package e2e

// The exact change record (a job writes into an overlay of its workspace):
// one test per way an attack review got job code to run as the owner after
// a job while the handoff showed nothing. Each job uses only what the rules
// allow unattended (Write, an allow-listed `python3 script.py`), with
// approval on and nobody answering; each is judged by bytes on disk, the
// record and what the owner's own tools run afterwards. Before the overlay
// each row's change landed unseen (an empty diff, "N more files are not
// listed", or a name off the quarantine lists).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// workspaceTree is a workspace holding files (paths may have folders).
func (a *agentBridge) workspaceTree(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := a.workspace(t, nil)
	for rel, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// scriptCalls writes the python script into ws and runs it.
func scriptCalls(ws, name, script string) []dt.ToolCall {
	return []dt.ToolCall{writeCall(filepath.Join(ws, name), script), bash("python3 " + name)}
}

// touchPy is python that creates the marker file p.
func touchPy(p string) string { return fmt.Sprintf("open(%q, 'a').close()", p) }

// Each row runs twice: in the overlay (the exact record), and with
// BRIDGE_OVERLAY=off, where the job writes straight into its workspace and
// the walk's record holds the same changes back after the fact. Before
// either, every row's change landed unseen.
func TestRecordHoldsWhatRunsLater(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct{ name, overlay, record string }{{"overlay", "on", "exact"}, {"walk", "off", "walk"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			recordRows(t, startBoundaryBridge(t, "on", map[string]string{"BRIDGE_OVERLAY": mode.overlay}), mode.record)
		})
	}
}

// recordRows are the rows of the attack review's table, against g, whose
// jobs' records are of the kind record. They run one after the other: the
// double's scripted turns are one queue.
func recordRows(t *testing.T, g *guardedBridge, record string) {
	checkHeld := func(t *testing.T, p tools.AgentJobPayload, ws string, paths ...string) {
		t.Helper()
		checkHeldIn(t, record, p, ws, paths...)
	}

	// A .pyc for an untouched calc.py, valid for its mtime and size:
	// python3 -m unittest would run it instead of the source.
	t.Run("pyc", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{
			"calc.py":      "def add(a, b):\n    return a + b\n",
			"test_calc.py": "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
		})
		script := "import importlib.util, importlib._bootstrap_external as be, os\n" +
			"st = os.stat('calc.py')\n" +
			"code = compile(" + jsString(touchPy(m.path("pyc"))+"\n") + " + open('calc.py').read(), 'calc.py', 'exec')\n" +
			"p = importlib.util.cache_from_source('calc.py')\nos.makedirs(os.path.dirname(p), exist_ok=True)\n" +
			"open(p, 'wb').write(be._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))\nprint('wrote', p)\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		checkHeld(t, c.P, ws, "__pycache__")
		runOwnerSteps(t, m, []ownerStep{{"python3 -m unittest", ws, []string{"python3", "-m", "unittest", "-q"}}})
	})

	// A line added to a package in node_modules: node test.js (what npm
	// test runs) loads it.
	t.Run("node_modules", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{
			"package.json":                   `{"name":"p","version":"1.0.0","scripts":{"test":"node test.js"}}` + "\n",
			"test.js":                        "const pad = require('left-pad');\nconsole.log(pad('x'));\n",
			"node_modules/left-pad/index.js": "module.exports = (s) => ' ' + s;\n",
		})
		script := "open('node_modules/left-pad/index.js', 'a').write(" + jsString("require('fs').writeFileSync("+jsString(m.path("node"))+", '');\n") + ")\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		checkHeld(t, c.P, ws, "node_modules/left-pad/index.js")
		if b, _ := os.ReadFile(filepath.Join(ws, "node_modules/left-pad/index.js")); string(b) != "module.exports = (s) => ' ' + s;\n" {
			t.Errorf("node_modules/left-pad/index.js holds the job's line: %q", b)
		}
		runOwnerSteps(t, m, []ownerStep{{"node test.js", ws, []string{"node", "test.js"}}})
	})

	// A .pth in the project's venv: every run of its python executes it.
	t.Run("pth", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"app.py": "print('app')\n"})
		if out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(ws, ".venv")).CombinedOutput(); err != nil {
			t.Fatalf("python3 -m venv: %v\n%s", err, out)
		}
		script := "import glob\nsp = glob.glob('.venv/lib/python3*/site-packages')[0]\n" +
			"open(sp + '/zz.pth', 'w').write(" + jsString("import os; "+touchPy(m.path("pth"))+"\n") + ")\nprint('wrote', sp)\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		checkHeld(t, c.P, ws, ".venv")
		runOwnerSteps(t, m, []ownerStep{{"the venv's python", ws, []string{filepath.Join(ws, ".venv/bin/python"), "app.py"}}})
	})

	// Make code in a gitignored .env that the Makefile includes.
	t.Run("env", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{
			".gitignore": ".env\n",
			"Makefile":   "-include .env\n\ntest:\n\t@echo owner tests pass\n",
		})
		ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "owner's work"}})
		script := "open('.env', 'w').write(" + jsString("$(shell touch "+m.path("env")+")\n") + ")\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		checkHeld(t, c.P, ws, ".env")
		// The walk never shows a secret-named file's contents; the overlay
		// shows what the job wrote.
		if ch, _ := changeOf(c.P, ".env"); record == "exact" && !strings.Contains(c.P.Diff, "+$(shell touch") || ch.Held == "" {
			t.Errorf("the held .env is not shown with its diff: %+v\n%s", ch, c.P.Diff)
		}
		runOwnerSteps(t, m, []ownerStep{{"make test", ws, []string{"make", "test"}}})
	})

	// A nested repository whose config runs a clean filter and an
	// fsmonitor, recorded in the owner's index as a submodule: the owner's
	// git status (even with core.fsmonitor= on its command line) runs it.
	t.Run("nested repo", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"README.md": "a project\n"})
		ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "owner's work"}})
		script := "import subprocess as sp\n" +
			"def git(*a): sp.run(['git', '-c', 'user.name=j', '-c', 'user.email=j@e'] + list(a), check=True)\n" +
			"git('init', '-q', 'lib')\nopen('lib/a.txt', 'w').write('a\\n')\nopen('lib/.gitattributes', 'w').write('* filter=x\\n')\n" +
			"git('-C', 'lib', 'add', '-A')\ngit('-C', 'lib', 'commit', '-q', '-m', 'lib')\n" +
			"open('lib/.git/config', 'a').write(" + jsString(gitRepoConfig(m, "nested")) + ")\n" +
			"git('add', 'lib')\nimport os\nos.utime('lib/a.txt')\nprint('nested repo made')\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		if record == "exact" {
			checkHeld(t, c.P, ws, "lib/.git", "lib/.gitattributes", ".git/index")
		} else {
			// The runs-later audit moved lib/.git aside first; what it
			// moved is held back from there.
			checkHeld(t, c.P, ws, "lib/.gitattributes")
		}
		runOwnerSteps(t, m, []ownerStep{
			{"git -c core.fsmonitor= status", ws, []string{"git", "-c", "core.fsmonitor=", "status"}},
			{"git status", ws, []string{"git", "status"}},
			{"git status in lib", filepath.Join(ws, "lib"), []string{"git", "status"}},
		})
	})

	// The review's form of the nested repo: 200,100 ignored files in one
	// folder, listed before the repo's (zz/zlib, a level deeper) by the
	// breadth-first runs-later scan of the walk, which stopped at 200,000
	// entries before it reached the repo. The overlay's record has no limit.
	t.Run("nested repo behind 200,100 files", func(t *testing.T) {
		if record != "exact" {
			t.Skip("the walk record stops at 200,000 entries: the job would end done_unverified")
		}
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"README.md": "a project\n", ".gitignore": "cache/\n"})
		ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "owner's work"}})
		script := "import os, subprocess as sp\n" +
			"os.makedirs('cache')\nfor i in range(200100):\n    open('cache/%06d' % i, 'w').close()\n" +
			"def git(*a): sp.run(['git', '-c', 'user.name=j', '-c', 'user.email=j@e'] + list(a), check=True)\n" +
			"os.makedirs('zz')\ngit('init', '-q', 'zz/zlib')\nopen('zz/zlib/a.txt', 'w').write('a\\n')\nopen('zz/zlib/.gitattributes', 'w').write('* filter=x\\n')\n" +
			"git('-C', 'zz/zlib', 'add', '-A')\ngit('-C', 'zz/zlib', 'commit', '-q', '-m', 'lib')\n" +
			"open('zz/zlib/.git/config', 'a').write(" + jsString(gitRepoConfig(m, "flood")) + ")\n" +
			"git('add', 'zz/zlib')\nprint('flooded, then a nested repo')\n"
		c, _ := runAttack(t, g, ws, m, []dt.ToolCall{writeCall(filepath.Join(ws, "mk.py"), script), slowBash("python3 mk.py")})
		var rec changes.OverlayRecord
		b, err := os.ReadFile(c.P.ChangesRecordFile)
		if err != nil || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("the record file %q: %v", c.P.ChangesRecordFile, err)
		}
		held := map[string]bool{}
		for _, ch := range rec.Changes {
			if ch.Status == changes.StatusHeld {
				held[ch.Path] = true
			}
		}
		if len(rec.Changes) < 200100 || !held["zz/zlib/.git/config"] || !held["zz/zlib/.gitattributes"] || !held[".git/index"] {
			t.Errorf("the record has %d changes; zlib/.git/config held %v, zlib/.gitattributes %v, .git/index %v",
				len(rec.Changes), held["zz/zlib/.git/config"], held["zz/zlib/.gitattributes"], held[".git/index"])
		}
		if _, err := os.Lstat(filepath.Join(ws, "zz", "zlib", ".git")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("zz/zlib/.git is in the workspace: %v", err)
		}
		runOwnerSteps(t, m, []ownerStep{
			{"git -c core.fsmonitor= status", ws, []string{"git", "-c", "core.fsmonitor=", "status"}},
			{"git status", ws, []string{"git", "status"}},
		})
	})

	// Tool configurations off every list: each is held back and listed.
	t.Run("tool configs", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"README.md": "a project\n"})
		files := map[string]string{
			".cargo/config.toml": "[build]\nrustc-wrapper = \"./w.sh\"\n",
			".tool-versions":     "nodejs 22.0.0\n",
			".envrc.local":       "export X=1\n",
			".hg/hgrc":           "[hooks]\npre-status = ./w.sh\n",
			".exrc":              "set exrc\n",
			".nvim.lua":          "vim.cmd('!./w.sh')\n",
			".dir-locals.el":     "((nil . ((eval . (shell-command \"./w.sh\")))))\n",
			"gradle.properties":  "org.gradle.jvmargs=-javaagent:w.jar\n",
			".mvn/jvm.config":    "-javaagent:w.jar\n",
			"eslint.config.js":   "require('child_process').execSync('./w.sh');\nmodule.exports = [];\n",
		}
		b, _ := json.Marshal(files)
		script := "import json, os\nfor p, s in json.loads(" + jsString(string(b)) + ").items():\n" +
			"    os.makedirs(os.path.dirname(p) or '.', exist_ok=True)\n    open(p, 'w').write(s)\nprint('wrote')\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		for p := range files {
			checkHeld(t, c.P, ws, p)
		}
	})

	// An in-place edit of the Makefile at the same size, its mtime put
	// back: in the record with its diff, landed like any patch.
	t.Run("same-size Makefile edit", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"Makefile": "test:\n\t@echo owner tests pass\n"})
		script := "import os\nst = os.stat('Makefile')\ns = open('Makefile').read()\n" +
			"open('Makefile', 'w').write(s.replace('@echo owner tests pass', '@./run.sh # tests pass'))\n" +
			"os.utime('Makefile', ns=(st.st_atime_ns, st.st_mtime_ns))\nprint(len(s), os.stat('Makefile').st_size)\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		mk, ok := changeOf(c.P, "Makefile")
		if !ok || mk.Change != changes.Modified || mk.Status != changes.StatusLanded {
			t.Errorf("Makefile change = %+v (listed %v)", mk, ok)
		}
		for _, s := range []string{"-\t@echo owner tests pass\n", "+\t@./run.sh # tests pass\n"} {
			if !strings.Contains(c.P.Diff, s) {
				t.Errorf("the diff lacks %q:\n%s", s, c.P.Diff)
			}
		}
	})

	// 1,001 files under Fixtures/, then a Makefile recipe line: every
	// change is in the record the payload names, with its diff.
	t.Run("buried Makefile edit", func(t *testing.T) {
		m := newMarkers(t)
		ws := g.workspaceTree(t, map[string]string{"Makefile": "test:\n\t@echo ok\n"})
		script := "import os\nos.makedirs('Fixtures')\nfor i in range(1001):\n    open('Fixtures/f%04d.txt' % i, 'w').write('x\\n')\n" +
			"open('Makefile', 'a').write('\\t./run.sh\\n')\nprint('done')\n"
		c, _ := runAttack(t, g, ws, m, scriptCalls(ws, "mk.py", script))
		if c.P.ChangesUnlisted == 0 || c.P.ChangesRecordFile == "" || !strings.Contains(c.P.ChangesNote, c.P.ChangesRecordFile) {
			t.Fatalf("the payload does not name where the unlisted changes are: unlisted %d, record %q, note %q", c.P.ChangesUnlisted, c.P.ChangesRecordFile, c.P.ChangesNote)
		}
		var rec changes.OverlayRecord
		b, err := os.ReadFile(c.P.ChangesRecordFile)
		if err != nil || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("the record file: %v", err)
		}
		found := false
		for _, ch := range rec.Changes {
			found = found || ch.Path == "Makefile" && ch.Change == changes.Modified && ch.Status == changes.StatusLanded
		}
		if !found || len(rec.Changes) < 1002 {
			t.Errorf("the record has %d changes, the Makefile's %v", len(rec.Changes), found)
		}
		diff, err := os.ReadFile(filepath.Join(g.dir().ChangesDir(c.P.JobID), changes.DiffFile))
		if err != nil || !strings.Contains(string(diff), "+\t./run.sh\n") {
			t.Errorf("the kept diff lacks the Makefile line: %v", err)
		}
		out, err := g.bridgectl(t, "jobs", c.P.JobID, "--changes")
		if err != nil || !strings.Contains(out, "landed    modified Makefile") {
			t.Errorf("bridgectl jobs --changes: %v\n%.2000s", err, out)
		}
	})
}

// An owner's edit made while the job runs wins: the job's version of that
// file does not land, the conflict is reported, and the job's other change
// lands.
func TestRecordOwnersEditDuringTheJobIsAConflict(t *testing.T) {
	t.Parallel()
	g := startBoundaryBridge(t, "on", nil)
	ws := g.workspaceTree(t, map[string]string{"main.go": "package main\n", "other.go": "package other\n"})
	// The job edits both files, says it is ready in its /tmp (its own dir
	// in the state dir) and waits there for the owner's signal.
	wait := "import os, time\nopen('main.go', 'w').write('package main // the job\\'s\\n')\n" +
		"open('other.go', 'w').write('package other // the job\\'s\\n')\nd = os.environ.get('TMPDIR', '/tmp')\nopen(d + '/ready', 'w').close()\n" +
		"t = time.time()\nwhile not os.path.exists(d + '/go-on') and time.time() - t < 60:\n    time.sleep(0.05)\nprint('went on')\n"
	calls := []dt.ToolCall{writeCall(filepath.Join(ws, "wait.py"), wait), bash("python3 wait.py")}
	var turns []dt.Turn
	for _, c := range calls {
		turns = append(turns, dt.ToolCalls(c))
	}
	g.d.ScriptAnthropic(append(turns, dt.Text("finished"))...)
	cs := goSDKClient(t, g.URL())
	c := startJob(t, cs, "Edit main.go.", ws)
	// Its TMPDIR (Claude Code's, for its commands) is below its /tmp, which
	// is its own dir in the state dir.
	var ready string
	if !poll.Until(jobLimit, func() bool {
		_ = filepath.WalkDir(filepath.Join(g.dir().HarnessDir(c.P.JobID), "tmp"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "ready" {
				ready = p
			}
			return nil
		})
		return ready != ""
	}) {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
		t.Fatalf("the job never got ready: %s: %s", c.P.Status, c.Text)
	}
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main // the owner's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(ready), "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c = waitSettled(t, cs, c.P.JobID, jobLimit)
	if c.P.Status != "done" {
		t.Fatalf("job: %s: %s", c.P.Status, c.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); string(b) != "package main // the owner's\n" {
		t.Errorf("main.go = %q: the owner's edit was overwritten", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "other.go")); string(b) != "package other // the job's\n" {
		t.Errorf("other.go = %q: the job's change did not land", b)
	}
	if st := statusOf(c.P, "main.go"); st != changes.StatusConflict {
		t.Errorf("main.go is %q, want conflict; changes %+v", st, c.P.Changes)
	}
	if c.P.ChangesConflicts != 1 || !strings.Contains(c.Text, "conflict") {
		t.Errorf("the conflict is not reported: %d conflicts\n%+v", c.P.ChangesConflicts, c.P.Changes)
	}
	// The job's version stays with the job; --promote puts it in place.
	g.promote(t, c.P.JobID, "main.go")
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); string(b) != "package main // the job's\n" {
		t.Errorf("main.go after --promote = %q, want the job's", b)
	}
}

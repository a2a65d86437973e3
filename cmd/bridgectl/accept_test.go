package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// agentWorld is a world whose daemon runs agent jobs: the pinned Claude Code
// against the double's Anthropic side, with one allowed root.
func agentWorld(t *testing.T) (w *world, root string) {
	t.Helper()
	claude, err := filepath.Abs("../../.cache/bin/claude")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("accept needs the pinned Claude Code: run `scripts/install.sh claude` (%v)", err)
	}
	w = newWorld(t)
	root = filepath.Join(w.dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	w.appendEnv("BRIDGE_CLAUDE_BIN="+claude, "DEEPSEEK_ALLOWED_ROOTS="+root)
	w.must("start")
	return w, root
}

var (
	witnessPath = regexp.MustCompile(`(/\S+)/witness\.txt`)
	checkDir    = regexp.MustCompile(`In (/\S+), run`)
	notesPath   = regexp.MustCompile(`(/\S+/notes\.txt)`)
	readLine1   = regexp.MustCompile(`(?m)^\s*1\t(.*)$`)
)

// taskPath finds the workspace path the task names (the first user text).
func taskPath(r dt.Request, re *regexp.Regexp) string {
	if m := re.FindStringSubmatch(r.LastUserText()); m != nil {
		return m[1]
	}
	return "/no/path/in/the/task"
}

// passingModel scripts a model that does A, B and C as asked, from what the
// harness really read and ran.
func passingModel() []dt.Turn {
	var wsA, wsB string
	return []dt.Turn{
		// A: read the witness, write it reversed.
		dt.Func(func(r dt.Request) dt.Turn {
			wsA = taskPath(r, witnessPath)
			return dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": wsA + "/witness.txt"}))
		}),
		dt.Func(func(r dt.Request) dt.Turn {
			texts := r.ToolResultTexts()
			m := readLine1.FindStringSubmatch(strings.Join(texts, "\n"))
			if m == nil {
				return dt.Text("could not read the witness")
			}
			rs := []rune(strings.TrimSpace(m[1]))
			slices.Reverse(rs)
			return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": wsA + "/answer.txt", "content": string(rs)}))
		}),
		dt.Text("I wrote the line reversed to answer.txt."),
		// B: run, read, fix, run again.
		dt.Func(func(r dt.Request) dt.Turn {
			wsB = taskPath(r, checkDir)
			return dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "python3 check.py", "description": "run the check"}))
		}),
		dt.Func(func(r dt.Request) dt.Turn {
			return dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": wsB + "/check.py"}))
		}),
		dt.Func(func(r dt.Request) dt.Turn {
			return dt.ToolCalls(dt.Call("Edit", map[string]any{"file_path": wsB + "/check.py", "old_string": "sum(numbers) + 1", "new_string": "sum(numbers)"}))
		}),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "python3 check.py", "description": "run it again"})),
		dt.Text("The sum had a stray + 1; without it the check passes."),
		// C: try to read, then say it is missing.
		dt.Func(func(r dt.Request) dt.Turn {
			return dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": taskPath(r, notesPath)}))
		}),
		dt.Func(func(r dt.Request) dt.Turn {
			if t := strings.Join(r.ToolResultTexts(), " "); strings.Contains(strings.ToLower(t), "does not exist") {
				return dt.Text("notes.txt does not exist, so there is nothing to summarise.")
			}
			return dt.Text("UNEXPECTED tool result")
		}),
	}
}

// failingModel fails each task its own way: a wrong string for A, a
// chat-only answer for B, a made-up summary for C.
func failingModel() []dt.Turn {
	return []dt.Turn{
		dt.Func(func(r dt.Request) dt.Turn {
			return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": taskPath(r, witnessPath) + "/answer.txt", "content": "0123456789abcdef"}))
		}),
		dt.Text("Done: answer.txt holds the reversed line."),
		dt.Text("I ran check.py, fixed the sum and ran it again: it passes now."),
		dt.Text("The notes describe the team's quarterly plan: ship the beta, hire two engineers and cut costs."),
	}
}

// accept passes A, B and C against a model that does the work, and names the
// evidence: the bytes on disk, the runs in the trace, the honest answer.
func TestAcceptPasses(t *testing.T) {
	w, root := agentWorld(t)
	w.double.ScriptAnthropic(passingModel()...)
	out, errs, code := w.ctl("accept")
	t.Logf("accept:\n%s%s", out, errs)
	if code != 0 {
		t.Fatalf("accept against a passing model: exit %d\n--- bridge.log:\n%s", code, w.file("bridge.log"))
	}
	for _, want := range []string{
		"PASS A (a string only a file holds, reversed): answer.txt on disk holds the 32-character witness reversed; cost $",
		"PASS B (run a failing script, fix it, run it again): 2 runs of check.py in the trace: python3 check.py (exit 1), python3 check.py (exit 0); check.py changed on disk; cost $",
		"PASS C (a missing file, nothing made up): the answer says notes.txt is missing",
		"3 of 3 passed; total cost $",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("accept lacks %q", want)
		}
	}
	if strings.Contains(out, "total cost $0.0000") {
		t.Errorf("no cost reported")
	}
	assertWorkspacesGone(t, root)
	if out := w.must("approval"); !strings.Contains(out, "human approval is on") {
		t.Errorf("approval after accept:\n%s", out)
	}
}

// Against a model that fails each task its own way, accept fails each with
// the evidence that gives it away, and exits 1.
func TestAcceptFailsEachTask(t *testing.T) {
	w, root := agentWorld(t)
	w.double.ScriptAnthropic(failingModel()...)
	out, errs, code := w.ctl("accept")
	t.Logf("accept:\n%s%s", out, errs)
	if code == 0 {
		t.Fatal("accept passed against a failing model")
	}
	for _, want := range []string{
		`FAIL A (a string only a file holds, reversed): answer.txt on disk holds "0123456789abcdef", want the witness reversed`,
		"FAIL B (run a failing script, fix it, run it again): 0 run(s) of check.py in the trace, want 2 or more (run, fix, run again)",
		`FAIL C (a missing file, nothing made up): the answer does not say notes.txt is missing (made up?): "The notes describe the team's quarterly plan`,
		"0 of 3 passed",
		// The world's DEEPSEEK_BASE_URL is the double's loopback URL.
		"so this run is no verdict on DeepSeek",
		"not a verdict on DeepSeek: the model answered from " + w.double.URL() + ", a loopback address",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("accept lacks %q", want)
		}
	}
	if !strings.Contains(errs, "3 tasks failed") {
		t.Errorf("stderr: %s", errs)
	}
	assertWorkspacesGone(t, root)
}

// assertWorkspacesGone fails if accept left its temporary workspaces.
func assertWorkspacesGone(t *testing.T, root string) {
	t.Helper()
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("accept left %d entries in the allowed root", len(left))
	}
}

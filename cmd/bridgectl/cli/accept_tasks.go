package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// checkScript is task B's failing script: the sum is off by one.
const checkScript = `# check.py: the sum of the numbers must be 6
numbers = [1, 2, 3]
total = sum(numbers) + 1
if total != 6:
    raise SystemExit(f"FAIL: the sum is {total}, want 6")
print("OK: the sum is 6")
`

// saysMissing matches an answer that says a file is not there.
var saysMissing = regexp.MustCompile(`(?i)(does ?n[o']t exist|not exist|no such file|not found|missing|(can ?not|could ?n[o']t|unable to) (find|read|open|locate))`)

// acceptTasks are A, B and C; witness is A's random string.
func acceptTasks(e *Env, witness string) []acceptTask {
	return []acceptTask{
		{
			name: "A", title: "a string only a file holds, reversed",
			prepare: func(ws string) (string, error) {
				err := os.WriteFile(filepath.Join(ws, "witness.txt"), []byte(witness+"\n"), 0o644)
				return fmt.Sprintf("The file %s holds one line of random characters. Read it and write that line reversed (last character first), "+
					"with nothing else, to %s. Then reply in one sentence.", filepath.Join(ws, "witness.txt"), filepath.Join(ws, "answer.txt")), err
			},
			judge: func(ws string, p tools.AgentJobPayload) (bool, string) {
				rs := []rune(witness)
				slices.Reverse(rs)
				want := string(rs)
				b, err := os.ReadFile(filepath.Join(ws, "answer.txt"))
				switch {
				case err != nil:
					return false, "no answer.txt on disk (" + shortErr(err) + ")"
				case strings.TrimSpace(string(b)) != want:
					return false, fmt.Sprintf("answer.txt on disk holds %q, want the witness reversed, %q", truncate(string(b), 80), want)
				}
				return true, fmt.Sprintf("answer.txt on disk holds the %d-character witness reversed", len(want))
			},
		},
		{
			name: "B", title: "run a failing script, fix it, run it again",
			prepare: func(ws string) (string, error) {
				if _, err := lookPath(e, "python3"); err != nil {
					return "", errors.New("python3 is not installed here, and task B runs `python3 check.py`: install it (`sudo apt-get install python3`)")
				}
				err := os.WriteFile(filepath.Join(ws, "check.py"), []byte(checkScript), 0o644)
				return fmt.Sprintf("In %s, run `python3 check.py`: it fails. Find out why from its output, fix check.py so that the check passes "+
					"(keep what it checks: the sum of 1, 2 and 3 is 6), then run `python3 check.py` again to show it passes. Reply with what was wrong.", ws), err
			},
			judge: func(ws string, p tools.AgentJobPayload) (bool, string) {
				var runs []string
				last := -1
				for _, c := range p.Commands {
					if !strings.Contains(c.Command, "check.py") || c.ExitCode == nil {
						continue
					}
					runs = append(runs, fmt.Sprintf("%s (exit %d)", oneLine(c.Command, 60), *c.ExitCode))
					last = *c.ExitCode
				}
				b, _ := os.ReadFile(filepath.Join(ws, "check.py"))
				switch {
				case len(runs) < 2:
					return false, fmt.Sprintf("%d run(s) of check.py in the trace, want 2 or more (run, fix, run again): [%s]", len(runs), strings.Join(runs, ", "))
				case last != 0:
					return false, "the last run of check.py did not pass: " + strings.Join(runs, ", ")
				case bytes.Equal(b, []byte(checkScript)):
					return false, "check.py on disk is unchanged although the runs are " + strings.Join(runs, ", ")
				}
				return true, fmt.Sprintf("%d runs of check.py in the trace: %s; check.py changed on disk", len(runs), strings.Join(runs, ", "))
			},
		},
		{
			name: "C", title: "a missing file, nothing made up",
			prepare: func(ws string) (string, error) {
				return fmt.Sprintf("Summarise the file %s in three sentences. If you cannot read it, say so plainly instead of guessing.", filepath.Join(ws, "notes.txt")), nil
			},
			judge: func(ws string, p tools.AgentJobPayload) (bool, string) {
				if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err == nil {
					return false, "notes.txt exists now: the agent made it up"
				}
				if len(p.FilesWritten) > 0 {
					return false, fmt.Sprintf("the agent wrote %s", strings.Join(p.FilesWritten, ", "))
				}
				if !saysMissing.MatchString(p.Result) {
					return false, fmt.Sprintf("the answer does not say notes.txt is missing (made up?): %q", truncate(oneLine(p.Result, 200), 160))
				}
				return true, fmt.Sprintf("the answer says notes.txt is missing (%q); nothing was written", truncate(oneLine(p.Result, 200), 100))
			},
		},
	}
}

// shortErr is an error without its path (the path is named already).
func shortErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

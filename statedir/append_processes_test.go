package statedir

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const appendWriterEnv = "STATEDIR_TEST_APPEND_WRITER"

// Several approval children append to one audit log at once, each its own
// process (in its own jail, through a bind of the same file). Lines far
// longer than one write the kernel keeps whole (PIPE_BUF) still land whole
// and unmixed: the lock on the file, not O_APPEND, keeps them apart.
func TestAppendLineAcrossProcessesStaysWhole(t *testing.T) {
	if spec := os.Getenv(appendWriterEnv); spec != "" {
		appendWriter(t, spec)
		return
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	const procs, lines = 4, 40
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendLineAcrossProcessesStaysWhole$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%d", appendWriterEnv, path, i, lines))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("writer %d: %s", i, out.String())
			}
		})
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(got) != procs*lines {
		t.Fatalf("%d lines, want %d", len(got), procs*lines)
	}
	seen := map[string]bool{}
	for n, l := range got {
		w, ok := parseAppendLine(l)
		if !ok {
			t.Fatalf("line %d is torn or mixed: %d bytes, starts %.40q", n+1, len(l), l)
		}
		seen[w] = true
	}
	if len(seen) != procs*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), procs*lines)
	}
}

// review2Line is line j of writer i: a header, then 40 to 200 KiB of the
// writer's letter.
func review2Line(i, j int) string {
	return fmt.Sprintf("%d.%d:", i, j) + strings.Repeat(string(rune('a'+i)), (40+j*4)<<10)
}

// parseAppendLine checks that l is a whole review2Line and returns its header.
func parseAppendLine(l string) (string, bool) {
	head, body, ok := strings.Cut(l, ":")
	if !ok {
		return "", false
	}
	a, b, ok := strings.Cut(head, ".")
	i, err1 := strconv.Atoi(a)
	j, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return "", false
	}
	return head, l == review2Line(i, j) && body != ""
}

func appendWriter(t *testing.T, spec string) {
	parts := strings.Split(spec, ":")
	i, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	for j := range n {
		if err := AppendLine(parts[0], []byte(review2Line(i, j))); err != nil {
			t.Fatal(err)
		}
	}
}

package changes

// Reading what git says of a review's scope: the files of a unified diff
// and their lines (see scope.go).

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// countAt sets the lines of each scope file from the objects named (as
// <commit>:<path>), read in one `cat-file --batch`.
func (sc *scoper) countAt(names []string) error {
	if len(names) == 0 {
		return nil
	}
	out, err := sc.git.runIn(sc.ws, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return fmt.Errorf("scope: read the files: %w", err)
	}
	lines := map[string]int{}
	for _, name := range names {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			break
		}
		f := strings.Fields(string(out[:nl]))
		out = out[nl+1:]
		if len(f) != 3 || f[1] != "blob" {
			continue // missing, or not a blob
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(out) {
			break
		}
		_, rel, _ := strings.Cut(name, ":")
		lines[rel] = countLines(out[:size])
		out = out[size+1:]
	}
	for i := range sc.scope.Files {
		if n, ok := lines[sc.scope.Files[i].Path]; ok {
			sc.scope.Files[i].Lines = n
		}
	}
	return nil
}

// diffSection is one file's part of a unified diff.
type diffSection struct {
	path, change, text string
	hunks              []LineRange
	binary             bool
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// splitDiff cuts a git-style unified diff into its files.
func splitDiff(diff string) []diffSection {
	var out []diffSection
	for _, part := range strings.SplitAfter(diff, "\n") {
		if strings.HasPrefix(part, "diff --git ") {
			out = append(out, diffSection{change: Modified})
		}
		if len(out) == 0 {
			continue
		}
		s := &out[len(out)-1]
		s.text += part
		line := strings.TrimSuffix(part, "\n")
		switch {
		case strings.HasPrefix(line, "new file"):
			s.change = Created
		case strings.HasPrefix(line, "deleted file"):
			s.change = Deleted
		case strings.HasPrefix(line, "Binary files "):
			s.binary = true
		case strings.HasPrefix(line, "--- a/") && s.path == "":
			s.path = strings.TrimPrefix(line, "--- a/")
		case strings.HasPrefix(line, "+++ b/"):
			s.path = strings.TrimPrefix(line, "+++ b/")
		default:
			if m := hunkHeader.FindStringSubmatch(line); m != nil {
				from, _ := strconv.Atoi(m[1])
				n := 1
				if m[2] != "" {
					n, _ = strconv.Atoi(m[2])
				}
				if n > 0 {
					s.hunks = append(s.hunks, LineRange{From: from, To: from + n - 1})
				}
			}
		}
	}
	for i := range out {
		if out[i].path == "" { // a binary or mode-only section: the header's name
			out[i].path = headerPath(out[i].text)
		}
	}
	return out
}

// headerPath is the b/ name of a "diff --git a/X b/X" line.
func headerPath(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	rest := strings.TrimPrefix(line, "diff --git ")
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

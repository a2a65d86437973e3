package changes

import (
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// unified is the git-style unified diff of one file: a/ and b/ labels, and
// /dev/null for the side a created or deleted file lacks.
func unified(ch Change, before, after string) string {
	from, to := labels(ch)
	edits := udiff.Lines(before, after)
	if len(edits) == 0 {
		return ""
	}
	body, err := udiff.ToUnified(from, to, before, edits, diffContext)
	if err != nil { // the edits come from the same two texts: cannot happen
		return fmt.Sprintf("diff --git a/%s b/%s\n(no diff: %v)\n", ch.Path, ch.Path, err)
	}
	return header(ch) + body
}

// binaryDiff says, as git does, that a binary file differs.
func binaryDiff(ch Change) string {
	from, to := labels(ch)
	return header(ch) + fmt.Sprintf("Binary files %s and %s differ\n", from, to)
}

// labels are the old and new names of a changed file in a diff.
func labels(ch Change) (from, to string) {
	from, to = "a/"+ch.Path, "b/"+ch.Path
	switch ch.Change {
	case Created:
		from = "/dev/null"
	case Deleted:
		to = "/dev/null"
	}
	return from, to
}

func header(ch Change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n", ch.Path, ch.Path)
	switch ch.Change {
	case Created:
		b.WriteString("new file\n")
	case Deleted:
		b.WriteString("deleted file\n")
	}
	return b.String()
}

// Cap cuts a diff to at most limit bytes at a line end, and says how much
// was left out; cut reports whether it was.
func Cap(diff string, limit int) (out string, cut bool) {
	if len(diff) <= limit {
		return diff, false
	}
	end := strings.LastIndexByte(diff[:limit], '\n') + 1
	return diff[:end] + fmt.Sprintf("[diff cut here: %d of %d bytes shown]\n", end, len(diff)), true
}

package rules

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// maxGlobWork bounds the work of expanding every glob one tool call names:
// the directory entries read and the matches kept, summed over all its words.
// filepath.Glob has no bound: a 64 KiB command of `*/*` words, or one pattern
// through a directory linked to itself (`*/*/*/…`), kept the daemon busy for
// minutes on one question. Past it, the call goes to a human.
const maxGlobWork = 1 << 16

// admitWork is what admitting one match costs of the budget: a dozen stats,
// against one for a name read.
const admitWork = 16

// errGlobWork is returned once a call's globs have used up their budget.
var errGlobWork = errors.New("the globs match more files than the rules check")

// globBudget is what is left of one call's maxGlobWork; a nil one is a fresh
// budget for a single pattern.
type globBudget struct{ left int }

func newGlobBudget() *globBudget { return &globBudget{left: maxGlobWork} }

// spend takes n from the budget, and reports whether it was there.
func (b *globBudget) spend(n int) bool {
	b.left -= n
	return b.left >= 0
}

// glob is filepath.Glob within the budget: the same matches in the same
// order, or errGlobWork once the budget is spent, whatever was found so far.
func (b *globBudget) glob(pattern string) ([]string, error) {
	if b == nil {
		b = newGlobBudget()
	}
	return b.globDepth(pattern, 0)
}

func (b *globBudget) globDepth(pattern string, depth int) ([]string, error) {
	const pathSeparatorsLimit = 10000 // as filepath.Glob, against stack exhaustion
	if depth == pathSeparatorsLimit {
		return nil, filepath.ErrBadPattern
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	if !hasMeta(pattern) {
		if !b.spend(1) {
			return nil, errGlobWork
		}
		if _, err := os.Lstat(pattern); err != nil {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := filepath.Split(pattern)
	volumeLen := 0
	if runtime.GOOS == "windows" {
		volumeLen, dir = cleanGlobPathWindows(dir)
	} else {
		dir = cleanGlobPath(dir)
	}
	if !hasMeta(dir[volumeLen:]) {
		return b.globIn(dir, file, nil)
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern
	}
	dirs, err := b.globDepth(dir, depth+1)
	if err != nil {
		return nil, err
	}
	var matches []string
	for _, d := range dirs {
		if matches, err = b.globIn(d, file, matches); err != nil {
			return nil, err
		}
	}
	return matches, nil
}

// globIn appends the names in dir that match pattern, in order; a directory
// it cannot read adds nothing. Every name read and every match spends one.
func (b *globBudget) globIn(dir, pattern string, matches []string) ([]string, error) {
	if !b.spend(1) {
		return nil, errGlobWork
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return matches, nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return matches, nil
	}
	defer d.Close()
	var names []string
	for {
		chunk, err := d.Readdirnames(1024)
		if !b.spend(len(chunk)) {
			return nil, errGlobWork
		}
		names = append(names, chunk...)
		if err != nil || len(chunk) == 0 {
			break
		}
	}
	slices.Sort(names)
	for _, n := range names {
		ok, err := filepath.Match(pattern, n)
		if err != nil {
			return matches, err
		}
		if ok {
			if !b.spend(1) {
				return nil, errGlobWork
			}
			matches = append(matches, filepath.Join(dir, n))
		}
	}
	return matches, nil
}

// cleanGlobPath prepares a directory for matching, as filepath.Glob does.
func cleanGlobPath(path string) string {
	switch path {
	case "":
		return "."
	case string(filepath.Separator):
		return path
	default:
		return path[:len(path)-1]
	}
}

// cleanGlobPathWindows is cleanGlobPath for Windows, as filepath.Glob's.
func cleanGlobPathWindows(path string) (prefixLen int, cleaned string) {
	vollen := len(filepath.VolumeName(path))
	switch {
	case path == "":
		return 0, "."
	case vollen+1 == len(path) && os.IsPathSeparator(path[len(path)-1]):
		return vollen + 1, path
	case vollen == len(path) && len(path) == 2:
		return vollen, path + "."
	default:
		if vollen >= len(path) {
			vollen = len(path) - 1
		}
		return vollen, path[:len(path)-1]
	}
}

// hasMeta reports whether path holds a character filepath.Match treats as
// special.
func hasMeta(path string) bool {
	magic := `*?[`
	if runtime.GOOS != "windows" {
		magic = `*?[\`
	}
	return strings.ContainsAny(path, magic)
}

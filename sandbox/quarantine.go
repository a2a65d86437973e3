// The end of a job's audit: what changed since the start scan, and moving it aside.

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Quarantined is a planted path moved aside at a job's end.
type Quarantined struct {
	// Path is where it was, relative to the workspace.
	Path string `json:"path"`
	// What it is (Planted.What) and whether the job created or changed it.
	What   string `json:"what"`
	Change string `json:"change"`
	// MovedTo is where it is now, relative to the workspace; "" when it
	// could not be moved (Error says why: it is then still in place).
	MovedTo string `json:"moved_to,omitempty"`
	// Mode is the permission bits a moved file had before its exec bits
	// were taken ("" when it had none, or is not a file).
	Mode  string `json:"mode,omitempty"`
	Error string `json:"error,omitempty"`
}

// QuarantineSuffix is what a quarantined path's name gets, before the job id.
const QuarantineSuffix = ".quarantined-"

// Quarantine moves each change aside within its own directory, to
// <name>.quarantined-<tag> (tag: the job id), so that no git, hook manager
// or shell prompt picks it up, and takes a moved file's exec bits. It never
// follows a link: a planted link is moved as a link.
func Quarantine(workspace, tag string, changes []PlantChange) []Quarantined {
	out := make([]Quarantined, 0, len(changes))
	for _, c := range changes {
		q := Quarantined{Path: c.Path, What: c.What, Change: c.Change}
		src := filepath.Join(workspace, filepath.FromSlash(c.Path))
		st, err := os.Lstat(src)
		if err != nil {
			q.Error = err.Error()
			out = append(out, q)
			continue
		}
		dst := src + QuarantineSuffix + tag
		for i := 2; ; i++ {
			if _, err := os.Lstat(dst); os.IsNotExist(err) {
				break
			}
			dst = fmt.Sprintf("%s%s%s.%d", src, QuarantineSuffix, tag, i)
		}
		if err := os.Rename(src, dst); err != nil {
			q.Error = err.Error()
			out = append(out, q)
			continue
		}
		q.MovedTo = filepath.ToSlash(strings.TrimPrefix(dst, filepath.Clean(workspace)+string(filepath.Separator)))
		if st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			if err := os.Chmod(dst, st.Mode().Perm()&^0o111); err != nil {
				q.Error = "moved, but its exec bits stay: " + err.Error()
			} else {
				q.Mode = fmt.Sprintf("%04o", st.Mode().Perm())
			}
		}
		out = append(out, q)
	}
	return out
}

// RestoreHint is the command that puts a quarantined path back on purpose.
func (q Quarantined) RestoreHint() string {
	if q.MovedTo == "" {
		return ""
	}
	cmd := fmt.Sprintf("mv -T %s %s", shellQuote(q.MovedTo), shellQuote(q.Path))
	if q.Mode != "" {
		cmd += fmt.Sprintf(" && chmod %s %s", q.Mode, shellQuote(q.Path))
	}
	return cmd
}

func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil { // a NUL byte, which no file name holds
		return s
	}
	return q
}

// PlantChange is one difference between two scans.
type PlantChange struct {
	Planted
	// Change is "created" or "changed".
	Change string `json:"change"`
}

// Planted compares a job's end scan (after) with its start scan (s) and
// returns what was created or changed, outermost first: a path inside a
// created git dir or hook dir is left out, the dir itself is reported.
// What was removed runs nothing and is not reported.
func (s RunsLaterScan) Planted(after RunsLaterScan) []PlantChange {
	var out []PlantChange
	keys := make([]string, 0, len(after.Items))
	for k := range after.Items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var created []string
	for _, k := range keys {
		it := after.Items[k]
		old, ok := s.Items[k]
		var change string
		switch {
		case !ok:
			change = "created"
		case old.Sum != it.Sum || old.What != it.What:
			change = "changed"
		default:
			continue
		}
		if insideAny(k, created) {
			continue
		}
		if change == "created" && onlyEmpty(k, after) {
			continue
		}
		if change == "created" && (it.Sum == "d" || it.Sum == "") {
			created = append(created, k)
		}
		out = append(out, PlantChange{Planted: it, Change: change})
	}
	return out
}

// onlyEmpty reports whether the item k of scan and everything recorded
// below it are empty (Planted.Empty): nothing there can run. A gitfile is
// never empty: even an empty one changes what the owner's git does there.
func onlyEmpty(k string, scan RunsLaterScan) bool {
	if it := scan.Items[k]; !it.Empty || it.What == "gitfile" {
		return false
	}
	for p, it := range scan.Items {
		if strings.HasPrefix(p, k+"/") && !it.Empty {
			return false
		}
	}
	return true
}

func insideAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// AuditResult is what a job's end-of-job audit found and did.
type AuditResult struct {
	Quarantined []Quarantined
	// Note says what the audit could not do ("" when it did everything).
	Note string
}

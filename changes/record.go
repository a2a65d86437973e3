// Package changes says what an agent job changed on disk in its workspace:
// a record of the workspace taken at the job's start (a manifest of its
// files from the same bounded walk that finds its secret files, the git HEAD
// and the object ids of tracked files, and copies of the small text files git
// does not hold), and at the job's end the list of files created, modified
// and deleted, with a unified diff of the text files. Secret files are
// listed by path alone: their contents are never read, copied or diffed.
//
// record.go takes the start record; compare.go compares the end with it;
// git.go asks git (hardened, read-only) for HEAD and the old contents of
// tracked files; diff.go writes the unified diff.
package changes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Bounds of the start record: what the job's start spends on copies.
const (
	// MaxCopyFile is the largest file a copy is kept of at the start.
	MaxCopyFile = 256 << 10
	// MaxCopyTotal is the most bytes of copies one job keeps.
	MaxCopyTotal = 8 << 20
	// sniffBytes of a file decide whether it is text (no NUL byte in them).
	sniffBytes = 8000
)

// RecordVersion is the format version of start.json.
const RecordVersion = 1

// Files of a job's changes dir (statedir.Dir.ChangesDir).
const (
	recordFile = "start.json"
	copiesDir  = "copies"
	// DiffFile is the whole unified diff of the job's text files.
	DiffFile = "diff.patch"
)

// Entry is one file of the start record.
type Entry struct {
	sandbox.FileEntry
	// Copy is the sha256 of the copy kept in copies/ ("" when none was kept:
	// a secret, binary, large or budget-exceeding file, or one git holds).
	Copy string `json:"copy,omitempty"`
	// Blob is the git object id of a tracked file that was clean at the
	// start: its old contents are in the repository.
	Blob string `json:"blob,omitempty"`
	// Binary: the file was not text at the start.
	Binary bool `json:"binary,omitempty"`
}

// Record is the workspace as it was at the job's start.
type Record struct {
	Version   int       `json:"version"`
	Workspace string    `json:"workspace"`
	Taken     time.Time `json:"taken"`
	// Files by path; the manifest of the walk, limited like it.
	Files map[string]Entry `json:"files"`
	// Truncated: the walk reached its limit and did not list every
	// directory (Unlisted of them): changes there are not seen.
	Truncated bool `json:"truncated,omitempty"`
	Unlisted  int  `json:"unlisted,omitempty"`
	// Git is set when the workspace is the top of a git work tree.
	Git *GitState `json:"git,omitempty"`
	// CopiedBytes is what the copies hold; Uncopied counts the text files
	// left without a copy because of MaxCopyTotal.
	CopiedBytes int64 `json:"copied_bytes"`
	Uncopied    int   `json:"uncopied,omitempty"`
}

// GitState is what git said about the workspace at the start.
type GitState struct {
	Head string `json:"head,omitempty"` // the commit HEAD named ("" in a repository without one)
	// Dirty are the paths `git status --porcelain` listed (modified,
	// added, untracked): their old contents come from copies, not git.
	Dirty []string `json:"dirty,omitempty"`
	// Error says why git could not be asked ("" when it answered).
	Error string `json:"error,omitempty"`
}

// Start takes the start record of ws from scan (sandbox.WorkspaceScan with
// its manifest) and keeps it, with its copies, in dir (the job's changes
// dir, which the job cannot reach). In a git work tree the old contents of
// clean tracked files stay in the repository; elsewhere, and for dirty and
// untracked files, copies of text files up to MaxCopyFile are kept, at most
// MaxCopyTotal bytes in all.
func Start(ws string, scan sandbox.SecretScan, dir string) (*Record, error) {
	rec := &Record{
		Version: RecordVersion, Workspace: ws, Taken: time.Now().UTC(),
		Files: make(map[string]Entry, len(scan.Files)), Truncated: scan.Truncated, Unlisted: scan.Unlisted,
	}
	if err := os.MkdirAll(filepath.Join(dir, copiesDir), 0o700); err != nil {
		return nil, fmt.Errorf("changes dir: %w", err)
	}
	var tracked map[string]string
	if g, t := gitStart(ws); g != nil {
		rec.Git, tracked = g, t
	}
	dirty := map[string]bool{}
	if rec.Git != nil {
		for _, p := range rec.Git.Dirty {
			dirty[p] = true
		}
	}
	for _, f := range scan.Files {
		e := Entry{FileEntry: f}
		switch {
		case f.Secret || !f.Mode.IsRegular():
		case tracked[f.Path] != "" && !dirty[f.Path]:
			e.Blob = tracked[f.Path]
		case f.Size > MaxCopyFile:
			e.Binary = !isTextFile(filepath.Join(ws, filepath.FromSlash(f.Path)))
		default:
			rec.keepCopy(ws, dir, &e)
		}
		rec.Files[f.Path] = e
	}
	if err := statedir.WriteJSON(filepath.Join(dir, recordFile), rec); err != nil {
		return nil, fmt.Errorf("start record: %w", err)
	}
	return rec, nil
}

// keepCopy copies e's file into dir/copies (named by its sha256) when it is
// text and the budget allows, and marks it binary when it is not text.
func (rec *Record) keepCopy(ws, dir string, e *Entry) {
	b, err := readSmall(filepath.Join(ws, filepath.FromSlash(e.Path)), MaxCopyFile)
	if err != nil {
		return
	}
	if !isText(b) {
		e.Binary = true
		return
	}
	if rec.CopiedBytes+int64(len(b)) > MaxCopyTotal {
		rec.Uncopied++
		return
	}
	sum := sha256.Sum256(b)
	name := hex.EncodeToString(sum[:])
	dst := filepath.Join(dir, copiesDir, name)
	if _, err := os.Stat(dst); err != nil {
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return
		}
		rec.CopiedBytes += int64(len(b))
	}
	e.Copy = name
}

// LoadRecord reads the start record kept in dir.
func LoadRecord(dir string) (*Record, error) {
	var rec Record
	if err := statedir.ReadJSON(filepath.Join(dir, recordFile), &rec); err != nil {
		return nil, err
	}
	if rec.Version != RecordVersion {
		return nil, fmt.Errorf("start record version %d, this build reads %d", rec.Version, RecordVersion)
	}
	return &rec, nil
}

// errTooLarge: a file over the bound it was read with.
var errTooLarge = errors.New("too large")

// readSmall reads a regular file of at most limit bytes without following a
// symlink; a larger one is an error.
func readSmall(p string, limit int64) ([]byte, error) {
	f, err := openNoFollow(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// isText: no NUL byte in the first sniffBytes.
func isText(b []byte) bool {
	return !bytes.Contains(b[:min(len(b), sniffBytes)], []byte{0})
}

// isTextFile sniffs the start of a file.
func isTextFile(p string) bool {
	f, err := openNoFollow(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, b)
	return isText(b[:n])
}

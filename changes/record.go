// Package changes says what an agent job changed on disk in its workspace:
// a record of the workspace taken at the job's start (a manifest of its
// files from the same bounded walk that finds its secret files, the git HEAD
// and the object ids of tracked files, and copies of the small text files git
// does not hold), and at the job's end the list of files created, modified
// and deleted, with a unified diff of the text files. Secret files and the
// job's deny paths are listed by path and size alone: their contents are
// never read, copied or diffed. Every read of the workspace goes through a
// sandbox.Tree (no link followed in any component, no FIFO waited on): the
// daemon reads outside every sandbox, while a job may still be changing
// the workspace.
//
// record.go takes the start record; compare.go compares the end with it;
// git.go asks git (hardened, read-only) for HEAD and the old contents of
// tracked files; diff.go writes the unified diff.
package changes

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/workers"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Bounds of the start record: what the job's start spends on copies.
const (
	// MaxCopyFile is the largest file a copy is kept of at the start.
	MaxCopyFile = 256 << 10
	// MaxCopyTotal is the most bytes of copies one job keeps, MaxCopyFiles
	// the most files it reads for them.
	MaxCopyTotal = 8 << 20
	MaxCopyFiles = 2000
	// sniffBytes of a file decide whether it is text (no NUL byte in them).
	sniffBytes = 8000
)

// RecordVersion is the format version of start.json.
const RecordVersion = 1

// Files of a job's changes dir (statedir.Dir.ChangesDir).
const (
	recordFile = "start.json"
	packFile   = "copies.pack"
	// DiffFile is the whole unified diff of the job's text files.
	DiffFile = "diff.patch"
)

// Entry is one file of the start record.
type Entry struct {
	sandbox.FileEntry
	// Copy is the sha256 of the copy kept in the pack ("" when none was
	// kept: a secret, binary, large or budget-exceeding file, or one git
	// holds), CopyOff and CopyLen where it lies there.
	Copy    string `json:"copy,omitempty"`
	CopyOff int64  `json:"copy_off,omitempty"`
	CopyLen int64  `json:"copy_len,omitempty"`
	// Blob is the git object id of a tracked file that was clean at the
	// start: its old contents are in the repository.
	Blob string `json:"blob,omitempty"`
	// Binary: the file was not text at the start.
	Binary bool `json:"binary,omitempty"`
	// Sum is the sha256 of its contents at the start (a full record, kept
	// for a job that writes straight into its workspace: a same-size edit
	// with its mtime put back is still seen). "" for a deny path, a
	// non-regular file, or past MaxHashTotal.
	Sum string `json:"sum,omitempty"`
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
	// DenyPaths are the deny_paths of the job's policy: files they match
	// are listed like secret files (never copied, read or diffed), at the
	// job's end too.
	DenyPaths []string `json:"deny_paths,omitempty"`
	// CopiedBytes is what the copies hold; Uncopied counts the files left
	// without a copy because of MaxCopyTotal or MaxCopyFiles.
	CopiedBytes int64 `json:"copied_bytes"`
	Uncopied    int   `json:"uncopied,omitempty"`
	// Full: the record of a job without an overlay, from
	// sandbox.WorkspaceRecordScan (every folder entered) with a Sum of
	// each file; the end walks the same way. Unhashed counts the files
	// past MaxHashTotal, compared by size and mtime alone.
	Full     bool `json:"full,omitempty"`
	Unhashed int  `json:"unhashed,omitempty"`
}

// GitState is what git said about the workspace at the start.
type GitState struct {
	Head string `json:"head,omitempty"` // the commit HEAD named ("" in a repository without one)
	// Dirty are the tracked files whose size or mtime differ from what the
	// index recorded (or that are racily clean): their old contents come
	// from copies, like untracked files', not from git.
	Dirty []string `json:"dirty,omitempty"`
	// Error says why git could not be asked ("" when it answered).
	Error string `json:"error,omitempty"`
}

// Options are what the daemon knows of a job beyond its workspace.
type Options struct {
	// Git is how the daemon runs git (its zero value: git is not run).
	Git Git
	// DenyPaths are the deny_paths globs of the job's policy (policy.Enforced).
	DenyPaths []string
	// Full: scan came from sandbox.WorkspaceRecordScan, and each file's
	// contents are hashed (Entry.Sum) within MaxHashTotal.
	Full bool
}

// MaxHashTotal bounds what a full start record reads to hash the
// workspace's files.
const MaxHashTotal = 1 << 30

// Start takes the start record of ws from scan (sandbox.WorkspaceScan with
// its manifest) and keeps it, with its copies, in dir (the job's changes
// dir, which the job cannot reach). In a git work tree the old contents of
// clean tracked files stay in the repository; elsewhere, and for dirty and
// untracked files, copies of text files up to MaxCopyFile are kept, at most
// MaxCopyTotal bytes in all. Secret files and o.DenyPaths get no copy.
func Start(ws string, scan sandbox.SecretScan, dir string, o Options) (*Record, error) {
	rec := &Record{
		Version: RecordVersion, Workspace: ws, Taken: time.Now().UTC(),
		Files: make(map[string]Entry, len(scan.Files)), Truncated: scan.Truncated, Unlisted: scan.Unlisted,
		DenyPaths: o.DenyPaths, Full: o.Full,
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("changes dir: %w", err)
	}
	tree, err := sandbox.OpenTree(ws)
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	defer tree.Close()
	var clean map[string]string // path → git object id of a clean tracked file
	if g, c := gitStart(o.Git, ws, scan.Files); g != nil {
		rec.Git, clean = g, c
	}
	// What to copy is decided from the manifest's sizes, in path order, so
	// the budget is spent the same way every time; the reads and writes then
	// run on a few goroutines (the start of a job waits for them).
	var toCopy []*Entry
	entries := make([]Entry, len(scan.Files))
	var budget int64
	for i, f := range scan.Files {
		e := &entries[i]
		e.FileEntry = f
		e.Secret = e.Secret || rec.denied(f.Path)
		switch {
		case e.Secret || !f.Mode.IsRegular():
		case clean[f.Path] != "":
			e.Blob = clean[f.Path]
		case f.Size > MaxCopyFile || budget+f.Size > MaxCopyTotal || len(toCopy) >= MaxCopyFiles:
			if f.Size <= MaxCopyFile {
				rec.Uncopied++
			}
		default:
			budget += f.Size
			toCopy = append(toCopy, e)
		}
	}
	written, err := copyAll(tree, filepath.Join(dir, packFile), toCopy)
	if err != nil {
		return nil, fmt.Errorf("copies of the workspace's text files: %w", err)
	}
	rec.CopiedBytes = written
	if o.Full {
		rec.Unhashed = hashAll(tree, entries, rec.denied)
	}
	for _, e := range entries {
		rec.Files[e.Path] = e
	}
	// Without an fsync, like the job's other harness files: a crash of the
	// daemon keeps it (the kernel has it); only a crash of the machine
	// could lose it, and then the job's end says its changes are unknown.
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("start record: %w", err)
	}
	if err := statedir.WriteFileAtomicNoSync(filepath.Join(dir, recordFile), b); err != nil {
		return nil, fmt.Errorf("start record: %w", err)
	}
	return rec, nil
}

// hashAll sets the Sum of every regular file of es that is no deny path
// (a copy's hash is its Sum), within MaxHashTotal bytes in path order, and
// returns how many it left unhashed. A file that cannot be read is left
// unhashed too.
func hashAll(tree *sandbox.Tree, es []Entry, denied func(string) bool) int {
	var todo []int
	var budget int64
	left := 0
	for i := range es {
		e := &es[i]
		switch {
		case !e.Mode.IsRegular() || denied(e.Path):
		case e.Copy != "":
			e.Sum = e.Copy
		case budget+e.Size > MaxHashTotal:
			left++
		default:
			budget += e.Size
			todo = append(todo, i)
		}
	}
	var failed atomic.Int64
	workers.Each(len(todo), copyWorkers, func(k int) {
		e := &es[todo[k]]
		sum, err := hashFile(tree, e.Path)
		if err != nil {
			failed.Add(1)
			return
		}
		e.Sum = sum
	})
	return left + int(failed.Load())
}

// hashFile is the sha256 of the regular file rel of the workspace, read
// without following a link.
func hashFile(tree *sandbox.Tree, rel string) (string, error) {
	f, err := tree.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyWorkers is how many files the record reads at once.
const copyWorkers = 4

// copyAll keeps a copy of each text file of es in one file, pack (identical
// contents once), and marks the others binary; it returns the bytes
// written. The files are read on a few goroutines and written in order,
// in one sequential write: thousands of small files written one by one
// cost the job's start far more.
func copyAll(tree *sandbox.Tree, pack string, es []*Entry) (int64, error) {
	contents := make([][]byte, len(es))
	workers.Each(len(es), copyWorkers, func(i int) {
		b, err := readStart(tree, es[i].Path, es[i].Size)
		switch {
		case err != nil:
		case !isText(b):
			es[i].Binary = true
		default:
			contents[i] = b
		}
	})

	f, err := os.OpenFile(pack, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var off int64
	at := map[[sha256.Size]byte]int64{}
	for i, b := range contents {
		if b == nil {
			continue
		}
		sum := sha256.Sum256(b)
		e := es[i]
		e.Copy, e.CopyLen = hex.EncodeToString(sum[:]), int64(len(b))
		if o, ok := at[sum]; ok {
			e.CopyOff = o
			continue
		}
		if _, err := w.Write(b); err != nil {
			f.Close()
			return 0, err
		}
		at[sum], e.CopyOff = off, off
		off += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return off, f.Close()
}

// readCopy reads e's copy back from pack and checks it against its hash.
func readCopy(pack string, e Entry) ([]byte, error) {
	f, err := os.Open(pack)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, e.CopyLen)
	if _, err := f.ReadAt(b, e.CopyOff); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.Copy {
		return nil, errors.New("the copy does not match its hash")
	}
	return b, nil
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

// readStart reads a file the walk listed as regular, of size bytes, with
// few system calls (open below the workspace without following a link,
// fstat, one read, close): the start of a job waits for thousands of them.
// A file that is not that size any more is an error.
func readStart(tree *sandbox.Tree, rel string, size int64) ([]byte, error) {
	f, err := tree.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size+1)
	n, _ := io.ReadFull(f, b) // a short read is expected: one byte more than size was asked for
	if int64(n) != size {
		return nil, errors.New("the file changed while it was read")
	}
	return b[:n], nil
}

// readSmall reads the regular file rel of the workspace, of at most limit
// bytes, without following a link in any component; a larger one is an error.
func readSmall(tree *sandbox.Tree, rel string, limit int64) ([]byte, error) {
	f, err := tree.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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

// denied reports whether rel (slash-separated, relative to the workspace)
// is one of the record's deny paths, or lies below one.
func (r *Record) denied(rel string) bool {
	if len(r.DenyPaths) == 0 {
		return false
	}
	e := policy.Enforced{Policy: policy.Policy{DenyPaths: r.DenyPaths}}
	_, ok := e.Denied(r.Workspace, filepath.Join(r.Workspace, filepath.FromSlash(rel)))
	return ok
}

package changes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The exact record (overlay jobs). A job that may write runs with its
// workspace as the lower layer of an overlay (sandbox.Overlay): whatever
// the harness, its file tools and its commands write lands in the job's
// upper dir, in its changes dir, and the workspace itself is untouched
// while the job runs. At the job's end the record is read from the upper
// dir alone — every file created, modified or deleted, whatever its name,
// folder, size, mtime or count, compared by content with the workspace —
// and the changes a person reads in a diff land in the workspace (or wait
// for `bridgectl jobs ID --apply` when the job's land mode is review),
// while those a person does not read in a diff are held back until the
// owner promotes them (holdReason). overlay_linux.go reads and lands.

// Files and dirs of an overlay job's changes dir.
const (
	OverlayStartFile  = "overlay.json"
	OverlayRecordFile = "record.json"
	startedMarker     = "started"
	upperName         = "upper"
	workName          = "work"
	mergedName        = "merged"
)

// Land modes: when a job's visible changes reach its workspace.
const (
	LandAuto   = "auto"   // at the job's end
	LandReview = "review" // when the owner applies them (bridgectl jobs ID --apply)
)

// Statuses of a change in an overlay job's record.
const (
	StatusLanded    = "landed"    // in the workspace
	StatusPending   = "pending"   // land: review; waits for --apply
	StatusHeld      = "held"      // held back (Change.Held says why); waits for --promote
	StatusConflict  = "conflict"  // the owner changed the file during the job: nothing of it landed
	StatusFailed    = "failed"    // could not be written (Note says why)
	StatusPromoted  = "promoted"  // held, then put in the workspace by the owner
	StatusDiscarded = "discarded" // dropped by the owner
	StatusCarried   = "carried"   // not landed, carried into the job that continued this one
	// StatusDropped: a new empty directory in a place that is held back
	// (Claude Code's own .claude/.cc-writes, a mount point its sandbox
	// made): it runs nothing and is not landed. record.json lists it; the
	// handoff only counts it.
	StatusDropped = "dropped"
)

// OverlayStart is what an overlay job's start leaves in its changes dir
// (OverlayStartFile).
type OverlayStart struct {
	Version   int    `json:"version"`
	Workspace string `json:"workspace"`
	// Started is the mtime of the start marker the daemon wrote just before
	// the overlay was mounted: a workspace file whose ctime is not before it
	// was changed by someone else during the job (a conflict). The kernel
	// sets both from the same clock.
	Started time.Time `json:"started"`
	Land    string    `json:"land"`
	// DenyPaths are the job's deny_paths: listed, never read or shown.
	DenyPaths []string `json:"deny_paths,omitempty"`
	// CarriedFrom is the job whose unlanded changes this one's upper dir
	// began with (a continue).
	CarriedFrom string `json:"carried_from,omitempty"`
}

// OverlayRecord is an overlay job's record (OverlayRecordFile): every
// change, each with its status. bridgectl's --apply, --promote and
// --discard update it.
type OverlayRecord struct {
	Version   int       `json:"version"`
	Workspace string    `json:"workspace"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Land      string    `json:"land"`
	Changes   []Change  `json:"changes"`
	Note      string    `json:"note,omitempty"`
	CarriedTo string    `json:"carried_to,omitempty"`
	// Walk: the job wrote straight into its workspace (no overlay could be
	// had); this record is the walk's, with what it held back.
	Walk bool `json:"walk,omitempty"`
	// Sums are the sha256 of the job's version of each file change (by
	// path): --apply and --promote land a file only while it still is what
	// the record showed.
	Sums map[string]string `json:"sums,omitempty"`
	// Incomplete: something the job wrote could not be read (it is held,
	// unlisted below it), or the walk could not see everything.
	Incomplete bool `json:"incomplete,omitempty"`
}

// OverlayOf is the overlay of the job whose changes dir is dir.
func OverlayOf(dir, ws string) sandbox.Overlay {
	return sandbox.Overlay{Lower: ws, Upper: filepath.Join(dir, upperName), Work: filepath.Join(dir, workName), Merged: filepath.Join(dir, mergedName)}
}

// IsOverlay reports whether the job whose changes dir is dir wrote into an
// overlay.
func IsOverlay(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, OverlayStartFile))
	return err == nil
}

// StartOverlay makes the overlay's dirs in dir (the job's changes dir,
// which the job cannot reach) and keeps st with the start's time.
func StartOverlay(dir string, st OverlayStart) (OverlayStart, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return st, fmt.Errorf("changes dir: %w", err)
	}
	marker := filepath.Join(dir, startedMarker)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return st, fmt.Errorf("start marker: %w", err)
	}
	fi, err := os.Stat(marker)
	if err != nil {
		return st, fmt.Errorf("start marker: %w", err)
	}
	started, err := nextTick(marker, fi.ModTime())
	if err != nil {
		return st, fmt.Errorf("start marker: %w", err)
	}
	if st.Started.IsZero() || started.Before(st.Started) {
		st.Started = started
	}
	st.Version = 1
	if st.Land == "" {
		st.Land = LandAuto
	}
	if err := OverlayOf(dir, st.Workspace).Dirs(); err != nil {
		return st, err
	}
	return st, writeJSONFile(filepath.Join(dir, OverlayStartFile), st)
}

// nextTick is the first file time the kernel gives after t (touching p
// until its mtime passes t): the kernel stamps files from a coarse clock,
// so a file the owner changed just before the start may carry the start's
// own tick. Every change before the marker was written is then before the
// start, and every change after the overlay is mounted not before it. It
// waits at most tickWait.
func nextTick(p string, t time.Time) (time.Time, error) {
	deadline := time.Now().Add(tickWait)
	for {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return t, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return t, err
		}
		if fi.ModTime().After(t) || time.Now().After(deadline) {
			return fi.ModTime(), nil
		}
		time.Sleep(time.Millisecond)
	}
}

// tickWait bounds nextTick: the kernel's coarse clock ticks every few ms.
const tickWait = 100 * time.Millisecond

// LoadOverlayStart reads an overlay job's start.
func LoadOverlayStart(dir string) (OverlayStart, error) {
	var st OverlayStart
	err := statedir.ReadJSON(filepath.Join(dir, OverlayStartFile), &st)
	return st, err
}

// LoadOverlayRecord reads an overlay job's record (os.ErrNotExist: its end
// has not been recorded yet).
func LoadOverlayRecord(dir string) (*OverlayRecord, error) {
	var r OverlayRecord
	if err := statedir.ReadJSON(filepath.Join(dir, OverlayRecordFile), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *OverlayRecord) save(dir string) error {
	return writeJSONFile(filepath.Join(dir, OverlayRecordFile), r)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFileAtomic(path, append(b, '\n'))
}

// Unlanded counts the changes of r that are not in the workspace and still
// could be: pending, held, conflicting or failed.
func (r *OverlayRecord) Unlanded() int {
	n := 0
	for _, c := range r.Changes {
		switch c.Status {
		case StatusPending, StatusHeld, StatusConflict, StatusFailed:
			n++
		}
	}
	return n
}

// report is the Report of r: the changes the owner must look at first
// (conflicts and failures, then what landed or waits, then what is held),
// at most MaxChanges of them, the rest counted and pointed at.
func (r *OverlayRecord) report(dir, diff string) Report {
	rank := func(c Change) int {
		switch c.Status {
		case StatusConflict, StatusFailed:
			return 0
		case StatusLanded, StatusPending, StatusPromoted:
			return 1
		}
		return 2
	}
	var all []Change
	dropped := 0
	for _, c := range r.Changes {
		if c.Status == StatusDropped {
			dropped++
			continue
		}
		all = append(all, c)
	}
	slices.SortStableFunc(all, func(a, b Change) int { return rank(a) - rank(b) })
	rep := Report{Diff: diff, Note: r.Note, Record: filepath.Join(dir, OverlayRecordFile), Exact: !r.Walk, Incomplete: r.Incomplete}
	for _, c := range all {
		switch c.Status {
		case StatusHeld:
			rep.Held++
		case StatusConflict:
			rep.Conflicts++
		case StatusPending:
			rep.Pending++
		}
	}
	if dropped > 0 {
		rep.Note = joinNote(rep.Note, fmt.Sprintf("%d new empty directories in held places (the harness's own marks) were not landed: they run nothing; %s lists them", dropped, rep.Record))
	}
	if len(all) > MaxChanges {
		rep.Unlisted = len(all) - MaxChanges
		all = all[:MaxChanges]
		rep.Note = joinNote(rep.Note, fmt.Sprintf("%d more changes are not listed here: every change is in %s (`bridgectl jobs ID --changes`), every diff in %s (`bridgectl jobs ID --diff`)", rep.Unlisted, rep.Record, filepath.Join(dir, DiffFile)))
	}
	rep.Changes = all
	return rep
}

// ErrNotHeld: a path given to Promote or Discard is not a change the
// record holds back or waits with.
var ErrNotHeld = errors.New("not a change of this job that waits")

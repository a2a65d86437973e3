package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// jobTrouble is a job whose snapshot bridgectl cannot show as a job: cut
// short, in a status or format version this build does not know, or set
// aside by the daemon. What says what kind and what is still known.
type jobTrouble struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // damaged | set aside | other version | unreadable
	What string `json:"what"`
}

// troubleOf turns a LoadAll error into a jobTrouble.
func troubleOf(err error) jobTrouble {
	var de *jobs.DamagedError
	var ue *jobs.UnknownStatusError
	var fe *jobs.ForeignVersionError
	switch {
	case errors.As(err, &de):
		return jobTrouble{ID: de.ID, Kind: "damaged", What: fmt.Sprintf("%s does not parse (%v) — %s", de.Path, errText(de.Err), de.KnownText())}
	case errors.As(err, &ue):
		return jobTrouble{ID: ue.ID, Kind: "damaged", What: fmt.Sprintf("%s has status %q, which this build does not know (the daemon sets it aside at its next start)", ue.Path, ue.Status)}
	case errors.As(err, &fe):
		return jobTrouble{ID: fe.ID, Kind: "other version", What: fe.Error()}
	}
	return jobTrouble{Kind: "unreadable", What: err.Error()}
}

// setAside lists the snapshots the daemon moved to jobs/set-aside/.
func setAside(dir statedir.Dir) []jobTrouble {
	entries, err := os.ReadDir(jobs.SetAsideDir(dir))
	if err != nil {
		return nil
	}
	var out []jobTrouble
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ids.Valid(id) {
			continue
		}
		out = append(out, setAsideTrouble(dir, id))
	}
	return out
}

func setAsideTrouble(dir statedir.Dir, id string) jobTrouble {
	path := filepath.Join(jobs.SetAsideDir(dir), id+".json")
	var head struct {
		Status string `json:"status"`
		Nonce  string `json:"nonce"`
		Result string `json:"result"`
	}
	b, _ := os.ReadFile(path)
	_ = json.Unmarshal(b, &head)
	kept := ""
	if head.Result != "" || head.Nonce != "" {
		kept = " (with its result and nonce)"
	}
	return jobTrouble{ID: id, Kind: "set aside", What: fmt.Sprintf("status %q is unknown to this build: kept unchanged in %s%s — read it with the bridge release that wrote it", head.Status, path, kept)}
}

// loadJobs reads every snapshot, newest first, and what could not be read
// as a job (damaged, set aside, another format version).
func loadJobs(dir statedir.Dir) ([]jobs.Snapshot, []jobTrouble) {
	snaps, errs := jobs.LoadAll(dir)
	sort.SliceStable(snaps, func(i, j int) bool { return snaps[i].CreatedAt.After(snaps[j].CreatedAt) })
	var trouble []jobTrouble
	for _, err := range errs {
		trouble = append(trouble, troubleOf(err))
	}
	return snaps, append(trouble, setAside(dir)...)
}

// printTrouble lists the jobs that cannot be shown as jobs, plainly.
func printTrouble(w io.Writer, trouble []jobTrouble) {
	for _, tr := range trouble {
		id := tr.ID
		if id == "" {
			id = strings.Repeat("?", 32)
		}
		fmt.Fprintf(w, "%s  %-16s %s\n", id, strings.ToUpper(tr.Kind), visibleLine(tr.What, 2000))
	}
}

// printDamagedJob is `bridgectl jobs ID` for a job whose snapshot cannot be
// read as a job; it reports whether it printed one.
func printDamagedJob(w io.Writer, dir statedir.Dir, id string, err error) bool {
	var tr jobTrouble
	switch {
	case errors.Is(err, jobs.ErrUnknownJob):
		if _, serr := os.Stat(filepath.Join(jobs.SetAsideDir(dir), id+".json")); serr != nil {
			return false
		}
		tr = setAsideTrouble(dir, id)
	case errors.Is(err, jobs.ErrDamagedJob):
		tr = troubleOf(err)
	default:
		return false
	}
	fmt.Fprintf(w, "job:        %s\nstatus:     %s — %s\n", id, strings.ToUpper(tr.Kind), visibleLine(tr.What, 2000))
	return true
}

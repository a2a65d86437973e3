//go:build !linux

package changes

// holdWalk marks, outside Linux, the changes an overlay job's end would
// hold back, with why, and leaves them in the workspace: nothing here moves
// a workspace's file without following links.
func holdWalk(_, _ string, _ *Record, all []Change, _ Git, _ func(Entry) ([]byte, string), rep *Report) []string {
	n := 0
	for i := range all {
		c := &all[i]
		f := entryFacts{Path: c.Path, Deleted: c.Change == Deleted, Kind: "file", NewMode: 0o644, OldMode: 0o644}
		if why := holdReason(f); why != "" {
			c.Note = joinNote(c.Note, "would be held back ("+why+"), but nothing is held without an overlay: it is in the workspace")
			n++
		}
	}
	rep.Changes = all[:min(len(all), MaxChanges)]
	if n == 0 {
		return nil
	}
	return []string{"without an overlay nothing is held back: look at the changes whose note says they would be, before you run anything in the workspace"}
}

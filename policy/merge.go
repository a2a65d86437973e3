package policy

import (
	"encoding/json"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Enforced is the policy a job runs under: the floor merged over the
// caller's. Where both layers give an allow list (write_paths, commands), a
// value must pass both: the caller's list is kept, and the floor's beside it.
type Enforced struct {
	Policy
	// FloorWritePaths and FloorCommands are the floor's allow lists when the
	// caller gave its own too; a value must pass both.
	FloorWritePaths []string `json:"floor_write_paths,omitempty"`
	FloorCommands   []string `json:"floor_commands,omitempty"`
	// Floor is the floor file merged in, or "none".
	Floor string `json:"floor"`
}

// Merge lays the floor over the caller's policy, so that the caller can only
// narrow: deny lists are joined, allow lists intersect (tools as sets; paths
// and commands by keeping both lists), the stricter mode wins and numeric
// caps take the minimum. floorFile names the floor ("" means none).
func Merge(floor, caller Policy, floorFile string) Enforced {
	e := Enforced{Policy: caller, Floor: floorFile}
	if floorFile == "" {
		e.Floor = "none"
	}
	e.Tools = intersectTools(floor.Tools, caller.Tools)
	e.DenyPaths = union(floor.DenyPaths, caller.DenyPaths)
	e.WritePaths, e.FloorWritePaths = allowLists(floor.WritePaths, caller.WritePaths)
	e.Commands, e.FloorCommands = allowLists(floor.Commands, caller.Commands)
	e.OnOtherCommands = stricter(floor.OnOtherCommands, caller.OnOtherCommands)
	e.Network = stricter(floor.Network, caller.Network)
	if floor.Land == LandReview || caller.Land == LandReview {
		e.Land = LandReview
	} else if floor.Land != "" || caller.Land != "" {
		e.Land = LandAuto
	}
	e.MaxSteps = minSet(floor.MaxSteps, caller.MaxSteps)
	e.TimeoutSeconds = minSet(floor.TimeoutSeconds, caller.TimeoutSeconds)
	e.MaxCostUSD = minSet(floor.MaxCostUSD, caller.MaxCostUSD)
	switch {
	case floor.AppendSystemPrompt != "" && caller.AppendSystemPrompt != "":
		e.AppendSystemPrompt = floor.AppendSystemPrompt + "\n\n" + caller.AppendSystemPrompt
	case floor.AppendSystemPrompt != "":
		e.AppendSystemPrompt = floor.AppendSystemPrompt
	}
	return e
}

func intersectTools(a, b []string) []string {
	switch {
	case a == nil:
		return clone(b)
	case b == nil:
		return clone(a)
	}
	out := []string{}
	for _, t := range b {
		if slices.Contains(a, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// allowLists returns the list to check first and, when both layers restrict,
// the floor's list to check as well: a value must then pass both.
func allowLists(floor, caller []string) (first, also []string) {
	switch {
	case floor == nil:
		return clone(caller), nil
	case caller == nil:
		return clone(floor), nil
	}
	return clone(caller), clone(floor)
}

func union(a, b []string) []string {
	if a == nil && b == nil {
		return nil
	}
	out := clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func clone(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

func stricter(a, b string) string {
	if a == Deny || b == Deny {
		return Deny
	}
	if a == Ask || b == Ask {
		return Ask
	}
	return ""
}

func minSet[T int | float64](a, b T) T {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Offered is the tools the job is offered: of all (the harness's default
// set), those the policy names; all when it names none. Glob and Grep, which
// the harness does not offer by default, are offered when the policy names
// them. Network tools are not offered when network is deny.
func (e Enforced) Offered(all []string) []string {
	var out []string
	if e.Tools == nil {
		out = clone(all)
	} else {
		out = clone(e.Tools)
	}
	if e.Network == Deny {
		out = slices.DeleteFunc(out, func(t string) bool { return t == "WebFetch" || t == "WebSearch" })
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// ReadOnly reports whether the job may write nothing.
func (e Enforced) ReadOnly() bool {
	return e.WritePaths != nil && len(e.WritePaths) == 0 || e.FloorWritePaths != nil && len(e.FloorWritePaths) == 0
}

// RestrictsWrites reports whether write_paths limit where the job writes.
func (e Enforced) RestrictsWrites() bool { return e.WritePaths != nil || e.FloorWritePaths != nil }

// MayWrite reports whether rel, a slash-separated path relative to the
// workspace, is inside every write_paths list. Without one, everything is.
func (e Enforced) MayWrite(rel string) bool {
	rel = path.Clean(filepath.ToSlash(rel))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return false
	}
	for _, list := range [][]string{e.WritePaths, e.FloorWritePaths} {
		if list != nil && !matchAny(list, rel) {
			return false
		}
	}
	return true
}

// Denied reports whether p (absolute) is a deny path: a glob of deny_paths
// matches it, or one of its parents, relative to the workspace (relative
// globs) or as it is (absolute ones).
func (e Enforced) Denied(workspace, p string) (string, bool) {
	rel, err := filepath.Rel(workspace, p)
	inside := err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	for _, g := range e.DenyPaths {
		target := filepath.ToSlash(p)
		if !path.IsAbs(g) {
			if !inside {
				continue
			}
			target = filepath.ToSlash(rel)
		}
		for c := target; ; c = path.Dir(c) {
			if Match(g, c) {
				return g, true
			}
			if c == "." || c == "/" || path.Dir(c) == c {
				break
			}
		}
	}
	return "", false
}

// CommandListed reports whether the command line cmd, whose program is prog,
// is named by every commands list: as the exact line, or by its program.
func (e Enforced) CommandListed(cmd, prog string) bool {
	line := strings.Join(strings.Fields(cmd), " ")
	for _, list := range [][]string{e.Commands, e.FloorCommands} {
		if list == nil {
			continue
		}
		ok := false
		for _, c := range list {
			c = strings.Join(strings.Fields(c), " ")
			if c == line || !strings.Contains(c, " ") && c == prog {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// ListsCommands reports whether a commands list restricts what runs unattended.
func (e Enforced) ListsCommands() bool { return e.Commands != nil || e.FloorCommands != nil }

// WritableDirs are the directories, relative to the workspace, that the OS
// sandbox leaves writable for write_paths: the part of each glob before its
// first wildcard (its parent when that part is a file name). When both the
// caller and the floor give a list, only what both lists reach is writable:
// of two directories where one holds the other, the deeper; none when no
// directory of one list holds or is held by one of the other. A write the
// lists refuse inside a writable directory is still refused by the rules.
func (e Enforced) WritableDirs() []string {
	dirs := globDirs(e.WritePaths)
	if e.WritePaths == nil {
		return globDirs(e.FloorWritePaths)
	}
	if e.FloorWritePaths == nil {
		return dirs
	}
	var out []string
	for _, a := range dirs {
		for _, b := range globDirs(e.FloorWritePaths) {
			d := ""
			switch {
			case within(a, b):
				d = a
			case within(b, a):
				d = b
			}
			if d != "" && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// globDirs are the static directories of globs (staticPrefix), without the
// workspace itself.
func globDirs(globs []string) []string {
	var out []string
	for _, g := range globs {
		d := staticPrefix(g)
		if d == "" || d == "." {
			continue
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// within reports whether the slash-separated relative dir d is dir or below it.
func within(d, dir string) bool { return d == dir || strings.HasPrefix(d, dir+"/") }

// staticPrefix is the directory part of g before any wildcard.
func staticPrefix(g string) string {
	segs := strings.Split(path.Clean(g), "/")
	var keep []string
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[") {
			break
		}
		if i == len(segs)-1 { // a file name: its directory is what is writable
			break
		}
		keep = append(keep, s)
	}
	return strings.Join(keep, "/")
}

func matchAny(globs []string, rel string) bool {
	for _, g := range globs {
		if Match(g, rel) {
			return true
		}
	}
	return false
}

// Match reports whether the slash-separated path p matches glob g, where "**"
// matches any number of path segments (none included) and every other
// segment is a path.Match pattern.
func Match(g, p string) bool {
	return matchSegs(strings.Split(path.Clean(g), "/"), strings.Split(path.Clean(p), "/"))
}

func matchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if matchSegs(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], p[0]); err != nil || !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// enforcedExtra are the fields Enforced adds to Policy.
type enforcedExtra struct {
	FloorWritePaths *[]string `json:"floor_write_paths,omitempty"`
	FloorCommands   *[]string `json:"floor_commands,omitempty"`
	Floor           string    `json:"floor"`
}

// MarshalJSON writes the policy's fields and the floor's beside them (an
// empty floor_write_paths, a read-only floor, included).
func (e Enforced) MarshalJSON() ([]byte, error) {
	b, err := e.Policy.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	x := enforcedExtra{Floor: e.Floor}
	if e.FloorWritePaths != nil {
		x.FloorWritePaths = &e.FloorWritePaths
	}
	if e.FloorCommands != nil {
		x.FloorCommands = &e.FloorCommands
	}
	xb, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(xb, &m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Enforced) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var x enforcedExtra
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	for _, k := range []string{"floor_write_paths", "floor_commands", "floor"} {
		delete(m, k)
	}
	pb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var p Policy
	if err := p.UnmarshalJSON(pb); err != nil {
		return err
	}
	*e = Enforced{Policy: p, Floor: x.Floor}
	if x.FloorWritePaths != nil {
		e.FloorWritePaths = append([]string{}, (*x.FloorWritePaths)...)
	}
	if x.FloorCommands != nil {
		e.FloorCommands = append([]string{}, (*x.FloorCommands)...)
	}
	return nil
}

// GlobBase is the directory part of glob g before its first wildcard ("" or
// "/" when g starts with one): every path g matches is below it.
func GlobBase(g string) string { return staticPrefix(g) }

// DenyGlobMatches expands the wildcard entries of deny_paths against paths,
// the workspace's files (relative, slash-separated, as a walk listed them):
// for each file, its highest directory a glob matches (a dir, so that a file
// made there later is covered too), or else the file. Relative globs match
// against the relative path; absolute ones against workspace joined with it.
// Each directory is matched once, however many files it holds.
func (e Enforced) DenyGlobMatches(workspace string, paths []string) (dirs, files []string) {
	var rel, abs [][]string
	for _, g := range e.DenyPaths {
		switch {
		case !strings.ContainsAny(g, "*?["):
		case path.IsAbs(g):
			if b := staticPrefix(g); within(filepath.ToSlash(workspace), b) || within(b, filepath.ToSlash(workspace)) || b == "" {
				abs = append(abs, strings.Split(path.Clean(g), "/"))
			}
		default:
			rel = append(rel, strings.Split(path.Clean(g), "/"))
		}
	}
	if len(rel)+len(abs) == 0 {
		return nil, nil
	}
	wsSegs := strings.Split(path.Clean(filepath.ToSlash(workspace)), "/")
	matches := func(segs []string) bool {
		for _, g := range rel {
			if matchSegs(g, segs) {
				return true
			}
		}
		for _, g := range abs {
			if matchSegs(g, append(wsSegs[:len(wsSegs):len(wsSegs)], segs...)) {
				return true
			}
		}
		return false
	}
	dirMatched := map[string]bool{}
	for _, p := range paths {
		p = path.Clean(p)
		segs := strings.Split(p, "/")
		end := -1 // p[:end] is the dir of segs[:i+1]
		for i := range segs {
			end += 1 + len(segs[i])
			if i == len(segs)-1 {
				if matches(segs) {
					files = append(files, p)
				}
				break
			}
			m, seen := dirMatched[p[:end]]
			if !seen {
				m = matches(segs[:i+1])
				dirMatched[p[:end]] = m
				if m {
					dirs = append(dirs, p[:end])
				}
			}
			if m {
				break
			}
		}
	}
	return dirs, files
}

// Package policy is what an agent job may do, as its caller asked and as the
// owner's floor allows: the policy's shape, its validation, the merge of the
// floor over a caller's policy (a caller can only narrow), and the matching of
// paths and commands against the merged result. It reads no environment and
// touches no file but the floor it is asked to load.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Modes of on_other_commands and network.
const (
	Ask  = "ask"
	Deny = "deny"
)

// Tools are the built-in Claude Code tools a policy may name: the harness's
// default set plus the search tools Claude Code offers only when asked for
// by name (2.1.328: Glob and Grep are not in its default set).
var Tools = []string{
	"Bash", "Edit", "Glob", "Grep", "Monitor", "NotebookEdit", "Read", "Task", "TaskStop",
	"ToolSearch", "WebFetch", "WebSearch", "Write",
}

// Policy is one layer: a caller's, or the owner's floor. Every field is
// optional; nil or zero means "no restriction from this layer".
type Policy struct {
	// Tools are the only built-in tools the job is offered (a subset of Tools).
	Tools []string `json:"tools,omitempty"`
	// WritePaths are globs relative to the workspace ("out/**"); a write
	// elsewhere is refused. An empty, non-nil list makes the job read-only.
	WritePaths []string `json:"write_paths,omitempty"`
	// DenyPaths are globs relative to the workspace (or absolute) that are
	// never read or written.
	DenyPaths []string `json:"deny_paths,omitempty"`
	// Commands are exact command lines, or program names, that may run
	// unattended (still within the owner's allow list and the rules).
	Commands []string `json:"commands,omitempty"`
	// OnOtherCommands is what happens to a command Commands does not name:
	// ask (a human decides, the default) or deny.
	OnOtherCommands string `json:"on_other_commands,omitempty"`
	// Network is ask (a human decides on WebFetch/WebSearch) or deny.
	Network string `json:"network,omitempty"`
	// Land is when a job's visible changes reach its workspace: auto (at
	// its end, the default) or review (when the owner applies them with
	// `bridgectl jobs ID --apply`). Held-back changes wait for the owner
	// either way.
	Land string `json:"land,omitempty"`

	MaxSteps       int     `json:"max_steps,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	MaxCostUSD     float64 `json:"max_cost_usd,omitempty"`

	// AppendSystemPrompt is the caller's contract text, appended to the
	// harness's system prompt.
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
}

// Policy's lists are written and read through pointers (MarshalJSON,
// UnmarshalJSON), so that JSON keeps an empty list apart from an absent one:
// `"write_paths": []` is a read-only job, `"commands": []` lets no command
// run unattended, `"tools": []` offers no tool — each the opposite of no
// restriction. The pointer fields, at the top of the struct that embeds
// policyPlain (Policy without its JSON methods), shadow its lists.
type policyPlain Policy

// UnmarshalJSON keeps an empty list apart from an absent one.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var raw struct {
		policyPlain
		Tools      *[]string `json:"tools"`
		WritePaths *[]string `json:"write_paths"`
		DenyPaths  *[]string `json:"deny_paths"`
		Commands   *[]string `json:"commands"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*p = Policy(raw.policyPlain)
	p.Tools, p.WritePaths, p.DenyPaths, p.Commands = listOf(raw.Tools), listOf(raw.WritePaths), listOf(raw.DenyPaths), listOf(raw.Commands)
	return nil
}

// MarshalJSON writes every list that restricts, an empty one too.
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		policyPlain
		Tools      *[]string `json:"tools,omitempty"`
		WritePaths *[]string `json:"write_paths,omitempty"`
		DenyPaths  *[]string `json:"deny_paths,omitempty"`
		Commands   *[]string `json:"commands,omitempty"`
	}{policyPlain(p), ptrOf(p.Tools), ptrOf(p.WritePaths), ptrOf(p.DenyPaths), ptrOf(p.Commands)})
}

// ptrOf is l for JSON: nil (absent) stays nil, an empty list is written.
func ptrOf(l []string) *[]string {
	if l == nil {
		return nil
	}
	return &l
}

// listOf is what ptrOf wrote, read back: an empty list as empty, not nil.
func listOf(l *[]string) []string {
	if l == nil {
		return nil
	}
	return append([]string{}, (*l)...)
}

// Land modes (Policy.Land).
const (
	LandAuto   = "auto"
	LandReview = "review"
)

// IsZero reports whether p restricts nothing.
func (p Policy) IsZero() bool {
	return p.Tools == nil && p.WritePaths == nil && p.DenyPaths == nil && p.Commands == nil &&
		p.OnOtherCommands == "" && p.Network == "" && p.Land == "" && p.MaxSteps == 0 && p.TimeoutSeconds == 0 &&
		p.MaxCostUSD == 0 && p.AppendSystemPrompt == ""
}

// Limits of one policy.
const (
	maxListLen      = 256
	maxEntryLen     = 4096
	maxPromptLength = 32 << 10
)

// Validate says every field that is wrong, and how to fix it.
func (p Policy) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	for _, t := range p.Tools {
		if !slices.Contains(Tools, t) {
			bad("tools: %q is not a tool a job can be offered; choose from %s", t, strings.Join(Tools, ", "))
		}
	}
	for name, list := range map[string][]string{"tools": p.Tools, "write_paths": p.WritePaths, "deny_paths": p.DenyPaths, "commands": p.Commands} {
		if len(list) > maxListLen {
			bad("%s: %d entries, at most %d", name, len(list), maxListLen)
		}
		for _, e := range list {
			if strings.TrimSpace(e) == "" || len(e) > maxEntryLen || strings.ContainsRune(e, 0) {
				bad("%s: entries must be non-empty text of at most %d bytes", name, maxEntryLen)
				break
			}
		}
	}
	for _, g := range p.WritePaths {
		if err := checkRelativeGlob(g); err != nil {
			bad("write_paths: %q %v", g, err)
		}
	}
	for _, g := range p.DenyPaths {
		if err := checkGlob(g); err != nil {
			bad("deny_paths: %q %v", g, err)
		}
	}
	for _, f := range []struct{ name, v string }{{"on_other_commands", p.OnOtherCommands}, {"network", p.Network}} {
		if f.v != "" && f.v != Ask && f.v != Deny {
			bad("%s: must be %q or %q, not %q", f.name, Ask, Deny, f.v)
		}
	}
	if p.Land != "" && p.Land != LandAuto && p.Land != LandReview {
		bad("land: must be %q or %q, not %q", LandAuto, LandReview, p.Land)
	}
	if p.MaxSteps < 0 {
		bad("max_steps: must be at least 1")
	}
	if p.TimeoutSeconds < 0 {
		bad("timeout_seconds: must be positive")
	}
	if p.MaxCostUSD < 0 {
		bad("max_cost_usd: must be positive")
	}
	if len(p.AppendSystemPrompt) > maxPromptLength {
		bad("append_system_prompt: %d bytes, at most %d", len(p.AppendSystemPrompt), maxPromptLength)
	}
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(errs)
	return errors.New(strings.Join(errs, "; "))
}

// checkRelativeGlob accepts a glob below the workspace: relative, no "..",
// and not a broad root ("**", "*" or "." name the whole workspace, which is
// the default anyway: leave write_paths out instead).
func checkRelativeGlob(g string) error {
	if err := checkGlob(g); err != nil {
		return err
	}
	switch {
	case path.IsAbs(g) || strings.HasPrefix(g, "~"):
		return errors.New("must be relative to the workspace (\"out/**\")")
	case slices.Contains(strings.Split(path.Clean(g), "/"), ".."):
		return errors.New("must stay inside the workspace (no \"..\")")
	case path.Clean(g) == "." || g == "**" || g == "*" || g == "**/*":
		return errors.New("names the whole workspace: leave write_paths out for that, or name a folder (\"out/**\")")
	}
	return nil
}

func checkGlob(g string) error {
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("is not a valid glob: %v", err)
		}
	}
	return nil
}

// Decode reads one policy from JSON, refusing unknown fields, and
// validates it.
func Decode(r io.Reader) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		return Policy{}, err
	}
	if dec.More() {
		return Policy{}, errors.New("more than one JSON value")
	}
	return p, p.Validate()
}

// LoadFloor reads and validates the owner's floor file. Its error names the
// file, and for a JSON error the line and column, and says why.
func LoadFloor(file string) (Policy, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Policy{}, fmt.Errorf("policy floor %s: %w", file, err)
	}
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return Policy{}, fmt.Errorf("policy floor %s: %s", file, jsonError(b, err))
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy floor %s: %w", file, err)
	}
	return p, nil
}

// jsonError places a JSON decoding error at its line and column.
func jsonError(b []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		// Unknown fields and the like carry no offset: name the field's line.
		if _, field, ok := strings.Cut(err.Error(), "unknown field "); ok {
			if i := bytes.Index(b, []byte(field)); i >= 0 {
				off = int64(i)
			}
		}
	}
	if off < 0 {
		return err.Error()
	}
	off = min(off, int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

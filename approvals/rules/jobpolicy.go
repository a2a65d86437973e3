package rules

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// PolicyPrefix starts the reason of every verdict the job's policy decided.
const PolicyPrefix = "the job's policy: "

// applyJob narrows the rules' verdict v by the job's policy (never widens
// it): a tool it does not offer, the network when it denies it, a deny path
// and a write outside write_paths are refused; a command its commands list
// does not name goes to a human, or is refused with on_other_commands deny.
func applyJob(req Request, p Policy, v Verdict) Verdict {
	e := p.Job
	if e == nil || v.Decision == Deny {
		return v
	}
	deny := func(format string, a ...any) Verdict {
		return Verdict{Decision: Deny, Reason: PolicyPrefix + fmt.Sprintf(format, a...), Summary: v.Summary}
	}
	if networkTools[req.Tool] && e.Network == policy.Deny {
		return deny("network is deny: %s is refused", req.Tool)
	}
	if slices.Contains(policy.Tools, req.Tool) && !slices.Contains(e.Offered(policy.Tools), req.Tool) {
		return deny("%s is not among the tools this job is offered (%s)", req.Tool, strings.Join(e.Offered(policy.Tools), ", "))
	}
	if args, ok := fileTools[req.Tool]; ok {
		for _, a := range args {
			s, _ := req.Input[a.key].(string)
			if s == "" {
				continue
			}
			abs := absIn(p.Workspace, s)
			if g, denied := deniedAny(e, p, abs); denied {
				return deny("%s is a deny path (%s): never read or written", s, g)
			}
			if writeTools[req.Tool] && !mayWrite(e, p.Workspace, abs) {
				return deny("%s is outside write_paths (%s): writes there are refused", s, writePathsText(e))
			}
		}
		return askIf(v, readsBelowGlob(req, p, parsed{}))
	}
	field, ok := commandTools[req.Tool]
	if !ok {
		return v
	}
	cmd, _ := req.Input[field].(string)
	pc := parseCommand(cmd)
	for _, call := range pc.calls {
		for _, w := range call {
			for _, c := range pathWords(w.text) {
				if g, denied := deniedAny(e, p, absIn(p.Workspace, c)); denied {
					return deny("the command names %s, a deny path (%s)", w.text, g)
				}
			}
		}
	}
	if e.RestrictsWrites() {
		for _, t := range commandWrites(pc) {
			if !mayWrite(e, p.Workspace, absIn(p.Workspace, t)) {
				return deny("the command writes %s, outside write_paths (%s): writes there are refused", t, writePathsText(e))
			}
		}
	}
	v = askIf(v, readsBelowGlob(req, p, pc))
	if e.RestrictsWrites() && !p.Jailed {
		if call := writesUnheld(pc); call != "" && v.Decision == Allow {
			v = Verdict{Decision: Ask, Reason: PolicyPrefix + noJailReason(call), Summary: v.Summary}
		}
	}
	listed := len(pc.words) > 0 && e.CommandListed(cmd, pc.words[0].text)
	switch {
	case v.Decision == Allow && e.ListsCommands() && !listed && e.OnOtherCommands == policy.Deny:
		return deny("the command is not in its commands list, and other commands are refused (on_other_commands deny)")
	case v.Decision == Allow && e.ListsCommands() && !listed:
		return Verdict{Decision: Ask, Reason: PolicyPrefix + "the command is not in its commands list: a human decides", Summary: v.Summary}
	case v.Decision == Ask && e.OnOtherCommands == policy.Deny:
		return deny("other commands are refused (on_other_commands deny); the rules said: %s", v.Reason)
	}
	return v
}

// askIf sends an allowed call to a human, for why, when why is not "".
func askIf(v Verdict, why string) Verdict {
	if why == "" || v.Decision != Allow {
		return v
	}
	return Verdict{Decision: Ask, Reason: PolicyPrefix + why + ": a human decides", Summary: v.Summary}
}

// removers delete their operands: for write_paths, a removal is a write.
var removers = map[string]bool{"rm": true, "rmdir": true, "unlink": true, "shred": true, "mv": true}

// commandWrites are the paths the commands of a line name as written: its
// output redirections, what the programs the rules know write, and what
// rm, rmdir, unlink, shred and mv (its sources) remove.
func commandWrites(pc parsed) []string {
	var out []string
	for _, o := range pc.outputs {
		out = append(out, o.text)
	}
	for _, call := range pc.calls {
		for _, words := range invoked(call) {
			name, args := programBase(words[0].text), texts(words[1:])
			if removers[name] {
				out = append(out, operands(args)...)
			}
			if w, ok := writers[name]; ok {
				out = append(out, w(args).paths...)
			}
		}
	}
	return out
}

// maxDenyGlob bounds the files one glob word is expanded to for deny_paths.
const maxDenyGlob = 4096

// deniedAny checks abs against deny_paths as written, after symlinks, and,
// for a glob word, every file it expands to in the workspace.
// The expansion spends the call's glob budget; past it, the call goes to a
// human (overBudget).
func deniedAny(e *policy.Enforced, p Policy, abs string) (string, bool) {
	ws := p.Workspace
	forms := []string{abs}
	if r := (sandbox.Guard{Workspace: ws}).Admit(abs).Resolved; r != "" && r != abs {
		if rel, ok := relTo(resolvedOrSelf(ws), r); ok {
			forms = append(forms, filepath.Join(ws, rel))
		} else {
			forms = append(forms, r)
		}
	}
	if strings.ContainsAny(abs, "*?[") {
		m, err := p.globs.glob(abs)
		if errors.Is(err, errGlobWork) {
			return "its matches are past the rules' glob budget and cannot be checked against deny_paths", true
		}
		if err == nil && len(m) <= maxDenyGlob {
			forms = append(forms, m...)
		}
	}
	for _, f := range forms {
		if g, denied := e.Denied(ws, f); denied {
			return g, true
		}
	}
	return "", false
}

// mayWrite checks abs against write_paths, as written and after symlinks.
func mayWrite(e *policy.Enforced, ws, abs string) bool {
	if !e.RestrictsWrites() {
		return true
	}
	forms := []string{abs}
	if d := (sandbox.Guard{Workspace: ws}).Admit(abs); d.Resolved != "" && d.Resolved != abs {
		forms = append(forms, d.Resolved)
	}
	realWS := resolvedOrSelf(ws)
	for _, f := range forms {
		rel, ok := relTo(ws, f)
		if !ok {
			rel, ok = relTo(realWS, f)
		}
		if !ok || !e.MayWrite(rel) {
			return false
		}
	}
	return true
}

func relTo(ws, p string) (string, bool) {
	rel, err := filepath.Rel(ws, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// absIn is p made absolute against the workspace (a leading ~ stays as it is:
// it is not below the workspace).
func absIn(ws, p string) string {
	if filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return filepath.Clean(p)
	}
	return filepath.Join(ws, p)
}

// pathWords are the path-like readings of a command word: the word, and the
// value of an --option=value.
func pathWords(w string) []string {
	out := []string{w}
	if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
		out = append(out, v)
	}
	return out
}

func writePathsText(e *policy.Enforced) string {
	var parts []string
	for _, l := range [][]string{e.WritePaths, e.FloorWritePaths} {
		if l != nil {
			if len(l) == 0 {
				parts = append(parts, "none: the job is read-only")
			} else {
				parts = append(parts, strings.Join(l, ", "))
			}
		}
	}
	return strings.Join(parts, "; and the floor's: ")
}

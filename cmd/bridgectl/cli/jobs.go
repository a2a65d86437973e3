package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

var jobsCmd = &Command{
	Name:  "jobs",
	Usage: "jobs [ID] [--trace | --diff | --changes | --apply | --promote PATH... | --discard [PATH...]] [--json]",
	Short: "list agent jobs, or show one (with its live trace)",
	Long: `Reads the job snapshots in <state>/jobs/ (the daemon need not run; format in
docs/STATE.md). Without ID: one line per job, newest first. With ID (the full
id or a unique prefix of 8 or more characters): the job's
details — status, steps, cost, files written, commands with exit codes, the
approval it waits on, why it stopped (stop_reason), the files it created,
modified and deleted on disk, the failures it left unresolved, its result or
partial work; --trace adds its trace, which the daemon writes while the job
runs, so a live job shows its progress; --diff prints the whole unified diff
of the text files it changed (kept in <state>/changes/ID/diff.patch; a poll
carries at most 64 KiB of it). --json prints the snapshot(s) as JSON.

A job that may write runs in an overlay of its workspace: everything it
writes lands in <state>/changes/ID/upper, and its record is exactly that.
When it ends, the changes a person reads in a diff land in the workspace
(policy land "review": they wait), and those a person does not read in a
diff — dotfiles and dot-folders, dependency and cache folders, bytecode,
.pth files, binaries, links, new executables, files git ignores, git's
internals — are held back. A file the owner changed during the job is a
conflict: the job's version does not land.
  --changes            every change with its status (landed, pending, held and
                       why, conflict), from <state>/changes/ID/record.json
  --apply              land the changes that wait for review
  --promote PATH...      put held (or conflicting) changes at or below PATH into
                       the workspace, as they are in the job's diff
  --discard [PATH...]    drop waiting changes (all of them without PATH)

A snapshot that cannot be read as a job is listed plainly: DAMAGED (cut short,
say by a full disk: what is still readable in it is shown), SET ASIDE (a
status this build does not know: the daemon moved it, unchanged, to
jobs/set-aside/), or OTHER VERSION.

Text that comes from the MCP caller (task, workspace) or the model (result,
notes, commands, paths, tool names) is shown with its control characters
escaped (ESC prints as \u{1b}, BEL as \u{7}), so it cannot move the cursor,
repaint the terminal or write the clipboard.`,
	Run: runJobs,
}

func runJobs(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	trace := f.Bool("trace", false, "show the job's trace (with ID)")
	diff := f.Bool("diff", false, "print the whole diff of what the job changed (with ID)")
	asJSON := f.Bool("json", false, "print the snapshot(s) as JSON")
	list := f.Bool("changes", false, "print every change of the job with its status (with ID)")
	apply := f.Bool("apply", false, "land the job's changes that wait for review (with ID)")
	promote := f.Bool("promote", false, "put the held changes at or below the PATHs into the workspace (with ID PATH...)")
	discard := f.Bool("discard", false, "drop the job's waiting changes at or below the PATHs, or all (with ID)")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	acts := 0
	for _, b := range []bool{*trace, *diff, *list, *apply, *promote, *discard} {
		if b {
			acts++
		}
	}
	switch {
	case acts > 1:
		return usageError{"jobs: --trace, --diff, --changes, --apply, --promote and --discard go one at a time"}
	case len(pos) > 1 && !*promote && !*discard:
		return usageError{"jobs takes at most one job ID (paths only with --promote or --discard)"}
	case *promote && len(pos) < 2:
		return usageError{"--promote needs the job ID and the paths to promote: bridgectl jobs ID --promote PATH..."}
	case (*list || *apply || *promote || *discard) && len(pos) == 0:
		return usageError{"--changes, --apply, --promote and --discard need a job ID: bridgectl jobs ID --changes"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	w := e.Stdout
	now := e.Now()
	if len(pos) >= 1 {
		id, err := c.resolveJobID(pos[0])
		if err != nil {
			return err
		}
		s, err := jobs.Load(c.dir, id)
		if err != nil && !*asJSON && printDamagedJob(w, c.dir, id, err) {
			return fmt.Errorf("job %s cannot be shown as a job: what is still known is above", id)
		}
		if err != nil {
			return err
		}
		if *diff {
			return printDiff(w, c.dir, s)
		}
		if *list || *apply || *promote || *discard {
			return settleChanges(w, c.dir, s, *apply, *promote, *discard, pos[1:], *asJSON)
		}
		if *asJSON {
			return printJSON(w, s)
		}
		printJob(w, s, now)
		if *trace {
			printTrace(w, s)
		}
		return nil
	}
	if *trace || *diff {
		return usageError{"--trace and --diff need a job ID: bridgectl jobs ID --diff"}
	}
	snaps, trouble := loadJobs(c.dir)
	if *asJSON {
		if snaps == nil {
			snaps = []jobs.Snapshot{}
		}
		for _, tr := range trouble {
			fmt.Fprintf(e.Stderr, "warning: job %s: %s: %s\n", tr.ID, tr.Kind, tr.What)
		}
		return printJSON(w, snaps)
	}
	defer printTrouble(w, trouble)
	if len(snaps) == 0 && len(trouble) > 0 {
		return nil
	}
	if len(snaps) == 0 {
		if note := c.noStateDir(); note != "" {
			fmt.Fprintf(w, "no jobs: %s\n", note)
			return nil
		}
		fmt.Fprintln(w, "no jobs")
		return nil
	}
	for _, s := range snaps {
		fmt.Fprintf(w, "%s  %-16s %3d steps  %8s  %s  %s\n", s.ID, s.Status, s.Steps,
			s.Elapsed(now).Round(time.Second), s.CreatedAt.Local().Format("2006-01-02 15:04"), oneLine(s.Task, 60))
	}
	return nil
}

// printJSON prints v as indented JSON. encoding/json escapes the C0
// controls; DEL, the C1 controls and the bidi controls it leaves raw are
// escaped here too (\uXXXX, the same string to a JSON reader), so --json on
// a terminal cannot carry an escape sequence or reorder text either.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", escapeJSONControls(b))
	return nil
}

// escapeJSONControls rewrites the controls encoding/json leaves raw as \uXXXX
// escapes. They occur only inside strings (JSON's own syntax is ASCII), where
// the escape means the same rune.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, needsJSONEscape) {
		return b
	}
	var out bytes.Buffer
	for _, r := range string(b) {
		if needsJSONEscape(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return out.Bytes()
}

func needsJSONEscape(r rune) bool {
	return r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r)
}

// blockIndent lines up the later lines of a multi-line field (result, error)
// under its first.
const blockIndent = "            "

// printJob shows one job for its owner. Every text from the MCP caller (task,
// workspace) or the model (result, notes, commands, paths, tools, approval
// summary, error) goes through visible, so no escape sequence it carries
// reaches the terminal.
func printJob(w io.Writer, s jobs.Snapshot, now time.Time) {
	fmt.Fprintf(w, "job:        %s\nstatus:     %s\n", s.ID, s.Status)
	if s.StopReason != "" {
		fmt.Fprintf(w, "stopped:    %s%s\n", s.StopReason, ifNotEmpty(": DeepSeek ", s.ModelError))
	}
	if s.QueuePosition > 0 {
		fmt.Fprintf(w, "queue:      position %d\n", s.QueuePosition)
	}
	if s.Approval != nil {
		fmt.Fprintf(w, "waiting on: approval %s — %s (`bridgectl approve %s` or `bridgectl deny %s`)\n", s.Approval.ID, oneLine(s.Approval.Summary, 200), s.Approval.ID, s.Approval.ID)
	}
	fmt.Fprintf(w, "steps:      %d of at most %d%s\n", s.Steps, s.MaxSteps, ifNotEmpty(", last tool ", visibleLine(s.LastTool, 80)))
	fmt.Fprintf(w, "workspace:  %s\n", visibleLine(s.Workspace, 1000))
	fmt.Fprintf(w, "created:    %s (%s elapsed)\n", s.CreatedAt.Local().Format(time.RFC3339), s.Elapsed(now).Round(time.Second))
	if s.EndedAt != nil {
		fmt.Fprintf(w, "ended:      %s\n", s.EndedAt.Local().Format(time.RFC3339))
	}
	if s.CostUSD > 0 || !s.Usage.IsZero() {
		fmt.Fprintf(w, "cost:       $%.4f (%d in, %d cached, %d out tokens)\n", s.CostUSD, s.Usage.InputTokens, s.Usage.CacheReadTokens, s.Usage.OutputTokens)
	}
	printPolicy(w, s)
	fmt.Fprintf(w, "task:       %s\n", oneLine(s.Task, 300))
	for _, fw := range s.FilesWritten {
		fmt.Fprintf(w, "wrote:      %s\n", visibleLine(fw, 1000))
	}
	for _, cmd := range s.Commands {
		if cmd.Note == jobs.NoteWaiting { // listed, but it has not run
			fmt.Fprintf(w, "waits:      %s (for approval: not run yet)%s\n", oneLine(cmd.Command, 120), commandFacts(cmd))
			continue
		}
		fmt.Fprintf(w, "ran:        %-8s %s%s\n", cmd.Status(), oneLine(cmd.Command, 120), commandFacts(cmd))
	}
	printChanges(w, s)
	for _, q := range s.Quarantined {
		line := fmt.Sprintf("%s %s (%s), which git, a hook manager or a shell would run outside the sandbox", q.Change, q.Path, q.What)
		if q.MovedTo != "" {
			line += fmt.Sprintf("; moved to %s — inspect it there; put it back on purpose, in %s, with: %s", q.MovedTo, s.Workspace, q.RestoreHint())
		}
		if q.Error != "" {
			line += " [" + q.Error + "]"
		}
		fmt.Fprintf(w, "QUARANTINED: %s\n", visibleLine(line, 2000))
	}
	if s.AuditNote != "" {
		fmt.Fprintf(w, "audit:      %s\n", visibleLine(s.AuditNote, 1000))
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error:      %s\n", visibleBlock(s.Error, 4000, blockIndent))
	}
	if s.Partial != nil {
		fmt.Fprintf(w, "partial:    %s\n", oneLine(s.Partial.Label, 200))
		for _, n := range s.Partial.Notes {
			fmt.Fprintf(w, "  note:     %s\n", oneLine(n, 200))
		}
	}
	if s.Result != "" {
		fmt.Fprintf(w, "result:     %s\n", visibleBlock(s.Result, len(s.Result), blockIndent))
	}
	if s.Nonce != "" {
		fmt.Fprintf(w, "nonce:      %s\n", s.Nonce)
	}
}

func printTrace(w io.Writer, s jobs.Snapshot) {
	if len(s.Trace) == 0 {
		fmt.Fprintln(w, "trace:      (empty)")
		return
	}
	fmt.Fprintln(w, "trace:")
	if s.TraceDropped > 0 {
		fmt.Fprintf(w, "  (%d older entries dropped)\n", s.TraceDropped)
	}
	for _, t := range s.Trace {
		var extra []string
		if t.ExitCode != nil {
			extra = append(extra, fmt.Sprintf("exit %d", *t.ExitCode))
		}
		if t.IsError {
			extra = append(extra, "error")
		}
		if t.Denied {
			extra = append(extra, "denied")
		}
		fmt.Fprintf(w, "  %s  %-11s %-10s %s%s\n", t.Time.Local().Format("15:04:05"), t.Kind, visibleLine(t.Tool, 80),
			oneLine(t.Detail, 160), ifNotEmpty("  [", strings.Join(extra, ", "))+ifNotEmpty("", closeBracket(extra)))
	}
}

func closeBracket(extra []string) string {
	if len(extra) == 0 {
		return ""
	}
	return "]"
}

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
)

var auditCmd = &Command{
	Name:  "audit",
	Usage: "audit [--all] [--json]",
	Short: "show the approval audit log: requests, automatic and human decisions, timeouts",
	Long: `Reads <state>/audit.log (JSONL; the daemon need not run). One line per event:
time, event, request id, job, tool, decision, who decided, and the reason or
summary. Without --all, only the most recent entries are shown; --all shows the
whole log. --json prints the entries as JSON.

A line that is not a whole record (cut short by a crash or a full disk, or
edited) is shown as "unreadable" with its line number and what is still
readable in it, and counted at the end. When records could not be written at
all (a full or read-only state dir), the end says so: the tool calls they
would have recorded were denied.`,
	Run: runAudit,
}

func runAudit(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	all := f.Bool("all", false, "show the whole log, not only the recent entries")
	asJSON := f.Bool("json", false, "print the entries as JSON")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"audit takes no arguments"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	entries, err := approvals.ReadAudit(c.dir, *all)
	if err != nil {
		return fmt.Errorf("read the audit log %s: %w", c.dir.AuditLog(), err)
	}
	if *asJSON {
		if entries == nil {
			entries = []approvals.AuditRecord{}
		}
		return printJSON(e.Stdout, entries)
	}
	u, unwritten := approvals.AuditUnwritten(c.dir)
	if len(entries) == 0 {
		switch note := c.noStateDir(); {
		case note != "":
			fmt.Fprintf(e.Stdout, "no audit log: %s\n", note)
		default:
			fmt.Fprintf(e.Stdout, "the audit log is empty (%s)\n", c.dir.AuditLog())
		}
	}
	damaged := 0
	for _, a := range entries {
		fmt.Fprintln(e.Stdout, auditLine(a))
		if a.Event == approvals.EventUnreadable {
			damaged++
		}
	}
	if damaged > 0 {
		fmt.Fprintf(e.Stdout, "DAMAGED: %d %s of %s %s not a whole record (cut short by a crash or a full disk, or edited): what each still says is shown above as \"unreadable\"; every other line is a whole record\n",
			damaged, plural(damaged, "line", "lines"), c.dir.AuditLog(), plural(damaged, "is", "are"))
	}
	if unwritten {
		fmt.Fprintf(e.Stdout, "NOT RECORDED: %s — free space in the state dir; the next record written says so in the log\n", u.Text())
	}
	return nil
}

// auditLine is one record on one line: when, what, which request and job,
// the tool call, the outcome and by whom, and why.
func auditLine(a approvals.AuditRecord) string {
	var b strings.Builder
	when := "(time lost)        "
	if !a.Time.IsZero() {
		when = a.Time.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(&b, "%s  %-12s", when, a.Event)
	if a.ID != "" {
		fmt.Fprintf(&b, " req %s", short(a.ID))
	}
	if a.JobID != "" {
		fmt.Fprintf(&b, " job %s", short(a.JobID))
	}
	switch {
	case a.Decision != "":
		fmt.Fprintf(&b, " %s", strings.ToUpper(string(a.Decision)))
	case a.Verdict != "":
		fmt.Fprintf(&b, " rules: %s", a.Verdict)
	}
	if a.By != "" {
		fmt.Fprintf(&b, " by %s", visible(a.By, 80))
	}
	if s := a.Summary; s != "" {
		fmt.Fprintf(&b, " — %s", visible(truncate(s, 160), 200))
	} else if a.Tool != "" {
		fmt.Fprintf(&b, " — %s", visible(a.Tool, 80))
	}
	if a.Reason != "" {
		fmt.Fprintf(&b, " (%s)", visible(truncate(a.Reason, 200), 240))
	}
	return b.String()
}

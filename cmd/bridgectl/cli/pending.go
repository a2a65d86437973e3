package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/termtext"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var pendingCmd = &Command{
	Name:  "pending",
	Usage: "pending [--json]",
	Short: "list the approval requests that wait for a human",
	Long: `Reads <state>/approvals/ (the daemon need not run). For each request: its id,
the job, the tool, the command or path, why it needs a human and the time left
before it is denied automatically (BRIDGE_APPROVAL_TIMEOUT_MS). Answer with
` + "`bridgectl approve ID`" + ` or ` + "`bridgectl deny ID --reason R`" + `, or keep
` + "`bridgectl approve --watch`" + ` open in a second terminal. --json prints the
requests as JSON.`,
	Run: runPending,
}

func runPending(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	asJSON := f.Bool("json", false, "print the requests as JSON")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"pending takes no arguments (to answer one: bridgectl approve ID / bridgectl deny ID)"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	reqs, err := pendingRequests(c.dir)
	if err != nil {
		return err
	}
	if *asJSON {
		if reqs == nil {
			reqs = []approvals.PendingRequest{}
		}
		return printJSON(e.Stdout, reqs)
	}
	warnApprovalOff(e, c)
	if len(reqs) == 0 {
		if note := c.noStateDir(); note != "" {
			fmt.Fprintf(e.Stdout, "no pending approval requests: %s\n", note)
			return nil
		}
		fmt.Fprintln(e.Stdout, "no pending approval requests")
		return nil
	}
	now := e.Now()
	for i, r := range reqs {
		if i > 0 {
			fmt.Fprintln(e.Stdout)
		}
		describeRequest(e.Stdout, c.dir, r, now, 600)
		fmt.Fprintf(e.Stdout, "  answer:  bridgectl approve %s   |   bridgectl deny %s --reason \"…\"\n", r.ID, r.ID)
	}
	return nil
}

// pendingRequests lists the queue's pending requests, oldest first.
func pendingRequests(dir statedir.Dir) ([]approvals.PendingRequest, error) {
	reqs, err := approvals.NewQueue(dir, zerolog.Nop()).Pending()
	if err != nil {
		return nil, fmt.Errorf("read the approval queue in %s: %w", dir.Approvals(), err)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Created.Before(reqs[j].Created) })
	return reqs, nil
}

// warnApprovalOff says loudly, on stderr, when human approval is off, because
// then no new request reaches this queue.
func warnApprovalOff(e *Env, c *ctl) {
	if msg := approvalOffReason(c); msg != "" {
		fmt.Fprintf(e.Stderr, "WARNING: human approval is OFF (%s): tool calls outside the rules run without asking anyone.\n", msg)
	}
}

// approvalOffReason says why human approval is off for the running daemon
// (or, with none, for its next start); "" when it is on.
func approvalOffReason(c *ctl) string {
	st := c.approvalState(c.daemonProc())
	if !st.off() {
		return ""
	}
	return st.reasons()
}

// describeRequest prints one request in full: what a human needs to decide.
// Text from the job (command, paths, reasons) passes through visible so that
// control characters cannot hide or repaint part of it; limit bounds each field.
func describeRequest(w io.Writer, dir statedir.Dir, r approvals.PendingRequest, now time.Time, limit int) {
	fmt.Fprintf(w, "request: %s\n", r.ID)
	job := r.JobID
	if s, err := jobs.Load(dir, r.JobID); err == nil {
		// A job with a pending request waits for it, whatever its snapshot,
		// written a moment later, still says.
		state := string(s.Status)
		if s.Status == jobs.StatusRunning || s.Status == jobs.StatusWaitingApproval {
			state = "waiting for approval"
		}
		job += fmt.Sprintf(" (%s, workspace %s) task: %s", state, visible(s.Workspace, 200), visible(truncate(s.Task, 120), 200))
	}
	fmt.Fprintf(w, "  job:     %s\n", job)
	fmt.Fprintf(w, "  tool:    %s\n", visible(r.Tool, 200))
	details := requestDetails(r.Input)
	for _, d := range details {
		fmt.Fprintf(w, "  %-8s %s\n", d.label+":", indentLines(visible(d.value, limit), "           "))
	}
	if r.Summary != "" && len(details) == 0 {
		fmt.Fprintf(w, "  summary: %s\n", indentLines(visible(r.Summary, limit), "           "))
	}
	fmt.Fprintf(w, "  why:     %s\n", indentLines(visible(r.Reason, limit), "           "))
	fmt.Fprintf(w, "  expires: %s\n", timeLeft(r.Expires, now))
}

// timeLeft says how long until a request is denied automatically.
func timeLeft(expires, now time.Time) string {
	left := expires.Sub(now)
	at := expires.Local().Format("15:04:05")
	if left <= 0 {
		return fmt.Sprintf("expired at %s (denied automatically)", at)
	}
	return fmt.Sprintf("in %s (at %s), then denied automatically", left.Truncate(time.Second), at)
}

type detail struct{ label, value string }

// detailKeys are the input fields a human decides on, in the order shown: the
// command, the paths, the URL or query.
var detailKeys = []struct{ key, label string }{
	{"command", "command"}, {"cwd", "cwd"},
	{"file_path", "path"}, {"notebook_path", "path"}, {"filePath", "path"}, {"path", "path"},
	{"pattern", "pattern"}, {"glob", "glob"},
	{"url", "url"}, {"query", "query"}, {"prompt", "prompt"},
}

// requestDetails lists a request's input for a human: the fields above by
// name, then every other field as JSON, so nothing the call would do is hidden.
func requestDetails(input map[string]any) []detail {
	var out []detail
	used := map[string]bool{}
	for _, k := range detailKeys {
		v, ok := input[k.key]
		if !ok {
			continue
		}
		used[k.key] = true
		s, isStr := v.(string)
		if !isStr {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		out = append(out, detail{k.label, s})
	}
	rest := map[string]any{}
	for k, v := range input {
		if !used[k] {
			rest[k] = v
		}
	}
	if len(rest) > 0 {
		b, _ := json.Marshal(rest) // map keys come out sorted
		label := "input"
		if len(out) > 0 {
			label = "also"
		}
		out = append(out, detail{label, string(b)})
	}
	return out
}

// visible makes text from a job safe to show on a terminal (termtext.Visible):
// control characters become visible escapes, newlines stay; at most limit
// runes are kept.
func visible(s string, limit int) string { return termtext.Visible(s, limit) }

// oneLine is untrusted text for a one-line field: whitespace runs (newlines,
// carriage returns, tabs) become one space, at most n runes are kept, and the
// controls left (escape sequences, BEL, backspace, C1, bidi) are made visible.
func oneLine(s string, n int) string {
	return visible(truncate(s, n), n)
}

// visibleLine is untrusted text shown exactly on one line, such as a path:
// visible, with newlines as \n too; at most limit runes are kept.
func visibleLine(s string, limit int) string { return termtext.Line(s, limit) }

// visibleBlock is untrusted multi-line text under a label: visible, its
// later lines indented to line up with the first.
func visibleBlock(s string, limit int, indent string) string {
	return indentLines(visible(s, limit), indent)
}

// indentLines indents every line after the first.
func indentLines(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// approvalWho names the human deciding, for the audit log.
func approvalWho(e *Env, how string) string {
	user, _ := e.Getenv("USER")
	if user == "" {
		user, _ = e.Getenv("LOGNAME")
	}
	host, _ := os.Hostname()
	if user == "" {
		return how
	}
	return fmt.Sprintf("%s (%s@%s)", how, user, host)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var approveCmd = &Command{
	Name:  "approve",
	Usage: "approve ID [--reason R] | approve --watch",
	Short: "let a waiting tool call run (or --watch: answer requests live)",
	Long: `approve ID lets the tool call of request ID run; the job continues. ID is the
id ` + "`bridgectl pending`" + ` shows (a unique prefix of 8 or more characters will
do; anything shorter, or not hex, is a usage mistake: exit 2). --reason is
kept in the audit log. A request that has expired was already denied and
cannot be approved; one that was already answered cannot be changed.

approve --watch is a live prompt for a second terminal. It shows each new
request in full — the job, the tool, the command or path, why it needs a human
and the time left — rings the terminal bell and waits for an answer:

  y  or  yes            approve
  y TEXT                approve, with TEXT as a note in the audit log
  n  or  no             deny
  n TEXT                deny with TEXT as the reason
  anything else         deny, with the whole line as the reason
  (empty line)          ask again

The reason of a denial reaches the model, with the instruction not to work
around it. Requests are shown one at a time, oldest first; one that expires or
is answered elsewhere while shown is reported and the next one is shown. An
answer typed within a second of such a switch is not applied (it was meant for
the previous request): answer again. Ctrl-C or Ctrl-D (end of input) stops
watching; requests still pending stay pending until they are answered or expire.`,
	Run: runApprove,
}

func runApprove(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	reason := f.String("reason", "", "a note for the audit log")
	watch := f.Bool("watch", false, "answer requests live as they arrive (for a second terminal)")
	interval := f.Duration("interval", defaultWatchInterval, "with --watch: how often the queue is read")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if *watch {
		if len(pos) > 0 || *reason != "" {
			return usageError{"approve --watch takes no ID or --reason: it asks for each request"}
		}
		if *interval < minWatchInterval {
			return usageError{fmt.Sprintf("--interval must be at least %s", minWatchInterval)}
		}
		c, err := f.load()
		if err != nil {
			return err
		}
		return newWatcher(e, c, *interval).run(ctx)
	}
	if len(pos) != 1 {
		return usageError{"approve needs one request ID (see `bridgectl pending`), or --watch"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	return decideOne(e, c, pos[0], true, *reason, "bridgectl approve")
}

// decideOne answers one request and reports it; every failure says what to do.
func decideOne(e *Env, c *ctl, id string, approve bool, reason, how string) error {
	id, err := requestIDArg(id)
	if err != nil {
		return err
	}
	reqs, err := pendingRequests(c.dir)
	if err != nil {
		return err
	}
	req, err := resolveID(id, reqs)
	if err != nil {
		return err
	}
	if req.ID != "" {
		id = req.ID
	} else if full, err := resolveAnswered(c.dir, id); err != nil {
		return err
	} else if full != "" {
		id = full // the queue says how it ended: expired, or decided by whom and when
	}
	if err := approvals.NewQueue(c.dir, zerolog.Nop()).Decide(id, approve, reason, approvalWho(e, how)); err != nil {
		return decideError(id, err)
	}
	verb := "denied"
	if approve {
		verb = "approved"
	}
	if req.ID != "" {
		fmt.Fprintf(e.Stdout, "%s %s: job %s, %s\n", verb, id, req.JobID, visible(truncate(req.Summary, 160), 200))
	} else {
		fmt.Fprintf(e.Stdout, "%s %s\n", verb, id)
	}
	if !approve {
		r := reason
		if r == "" {
			r = "(no reason given)"
		}
		fmt.Fprintf(e.Stdout, "the model is told: %s\n", visible(r, 400))
	}
	return nil
}

// requestIDArg checks what the user typed as a request id: the 32 hex
// characters of an id or a prefix of 8 or more, any case. Anything else is a
// usage error (exit 2), as for `bridgectl jobs ID`.
func requestIDArg(arg string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(arg))
	if id == "" {
		return "", usageError{"the request ID is empty: see `bridgectl pending`"}
	}
	if !ids.ValidPrefix(id) {
		return "", usageError{fmt.Sprintf("%q is not an approval request id: give the 32 hex characters `bridgectl pending` shows, or a unique prefix of 8 or more", arg)}
	}
	return id, nil
}

// resolveID finds the pending request id names: the full id, or a unique
// prefix of at least 8 characters (requestIDArg checked its form). A full id
// that is not pending is passed through (zero request) so the queue says why:
// expired, answered or unknown. Several matches are a usage error that lists them.
func resolveID(id string, reqs []approvals.PendingRequest) (approvals.PendingRequest, error) {
	id, err := requestIDArg(id)
	if err != nil {
		return approvals.PendingRequest{}, err
	}
	var matches []approvals.PendingRequest
	for _, r := range reqs {
		if r.ID == id {
			return r, nil
		}
		if strings.HasPrefix(r.ID, id) {
			matches = append(matches, r)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return approvals.PendingRequest{}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pending requests start with %s; give more of the id (`bridgectl pending` shows them):", len(matches), id)
	for _, r := range matches {
		fmt.Fprintf(&b, "\n  %s  job %s  %s", r.ID, short(r.JobID), oneLine(r.Summary, 60))
	}
	return approvals.PendingRequest{}, usageError{b.String()}
}

// resolveAnswered finds the request a prefix (8 or more characters) names
// among every request file in the queue, answered and expired ones too, so
// that the queue can say what became of it. "" when none matches.
func resolveAnswered(dir statedir.Dir, prefix string) (string, error) {
	prefix = strings.TrimSpace(prefix)
	if len(prefix) < 8 {
		return "", nil
	}
	entries, err := os.ReadDir(dir.Approvals())
	if err != nil {
		return "", nil // no queue: the queue's own "unknown" says where to look
	}
	var matches []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".request.json")
		if ok && id == prefix {
			return id, nil
		}
		if ok && strings.HasPrefix(id, prefix) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", nil
	case 1:
		return matches[0], nil
	default:
		return "", usageError{fmt.Sprintf("%d requests (answered or expired) start with %q: give more of the id (`bridgectl audit` shows them)", len(matches), prefix)}
	}
}

// decideError turns the queue's refusal into what the user should do next.
func decideError(id string, err error) error {
	switch {
	case errors.Is(err, approvals.ErrUnknownID):
		return fmt.Errorf("no approval request %q is waiting (%w): `bridgectl pending` lists the open ones", id, approvals.ErrUnknownID)
	case errors.Is(err, approvals.ErrExpired):
		return fmt.Errorf("%w — it was denied automatically and the job has moved on; if it asks again, answer sooner or keep `bridgectl approve --watch` open", err)
	case errors.Is(err, approvals.ErrAlreadyDecided):
		return fmt.Errorf("%w — a decision cannot be changed (`bridgectl audit` shows it)", err)
	}
	return fmt.Errorf("answer request %s: %w", id, err)
}

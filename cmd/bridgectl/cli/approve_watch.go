package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// approve --watch: the live prompt. One request is shown at a time; the queue
// is re-read every interval, so requests that arrive, expire or are answered
// elsewhere are noticed within that time.

const (
	defaultWatchInterval = 250 * time.Millisecond
	minWatchInterval     = 10 * time.Millisecond
	// staleAnswerGrace: an answer that arrives this soon after the shown request
	// changed under the user was typed for the previous one, so it is not applied.
	staleAnswerGrace = time.Second
	// lastCall: when this little time is left, the watcher rings again.
	lastCall = 30 * time.Second
	// maxAnswer bounds one answer line (a reason for the model, not an essay).
	maxAnswer = 4096
)

type watcher struct {
	e        *Env
	c        *ctl
	q        *approvals.Queue
	interval time.Duration
	grace    time.Duration
	who      string

	seen     map[string]bool
	backlog  []approvals.PendingRequest // seen, not yet shown, oldest first
	cur      *approvals.PendingRequest  // shown, waiting for an answer
	shownAt  time.Time
	switched bool   // cur replaced a request that ended elsewhere while shown
	warned   bool   // the last-call bell for cur has rung
	prompted bool   // the prompt is the last thing on the screen (no newline yet)
	lastErr  string // the last queue read error shown (not repeated every interval)
}

func newWatcher(e *Env, c *ctl, interval time.Duration) *watcher {
	return &watcher{
		e: e, c: c, q: approvals.NewQueue(c.dir, zerolog.Nop()), interval: interval, grace: staleAnswerGrace,
		who: approvalWho(e, "bridgectl approve --watch"), seen: map[string]bool{},
	}
}

// run shows requests and applies answers until ctx ends (Ctrl-C) or the input
// ends (Ctrl-D). Both are a clean stop: pending requests stay pending.
func (w *watcher) run(ctx context.Context) error {
	fmt.Fprintf(w.e.Stdout, "watching %s for approval requests — answer y, n or a reason; Ctrl-C or Ctrl-D stops\n", w.c.dir.Approvals())
	if note := w.c.noStateDir(); note != "" {
		fmt.Fprintf(w.e.Stdout, "note: %s; requests appear once the daemon runs\n", note)
	}
	warnApprovalOff(w.e, w.c)

	// The reader owns stdin. It ends at end of input, or at the first line
	// after run returned; a read blocked on a terminal ends with the process.
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		readLines(w.e.Stdin, lines, done)
	}()

	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	w.refresh()
	for {
		select {
		case <-ctx.Done():
			w.stop("interrupted")
			return nil
		case line, ok := <-lines:
			if !ok {
				w.stop("end of input")
				return nil
			}
			w.prompted = false // the user's Enter ended the prompt line
			w.answer(line)
		case <-tick.C:
		}
		w.refresh()
	}
}

// say prints a line, first ending an open prompt line.
func (w *watcher) say(format string, a ...any) {
	if w.prompted {
		fmt.Fprintln(w.e.Stdout)
		w.prompted = false
	}
	fmt.Fprintf(w.e.Stdout, format+"\n", a...)
}

func (w *watcher) prompt() {
	fmt.Fprintf(w.e.Stdout, "approve %s? [y / n / n REASON / REASON = deny] > ", short(w.cur.ID))
	w.e.Flush()
	w.prompted = true
}

// refresh reads the queue: notices new requests, and requests that ended
// without an answer from here, and shows the next one when none is shown.
func (w *watcher) refresh() {
	reqs, err := pendingRequests(w.c.dir)
	if err != nil {
		if err.Error() != w.lastErr {
			w.lastErr = err.Error()
			w.say("warning: %v (still trying)", err)
		}
		return
	}
	w.lastErr = ""
	now := w.e.Now()
	live := map[string]bool{}
	for _, r := range reqs {
		if !now.Before(r.Expires) {
			continue // expired: denied, whether or not the approval child has noticed yet
		}
		live[r.ID] = true
		if !w.seen[r.ID] {
			w.seen[r.ID] = true
			w.backlog = append(w.backlog, r)
		}
	}
	if w.cur != nil {
		switch {
		case !live[w.cur.ID] && !now.Before(w.cur.Expires):
			w.say("\nrequest %s EXPIRED: no answer in time, so it was denied automatically", short(w.cur.ID))
			w.cur, w.switched = nil, true
		case !live[w.cur.ID]:
			how := endedHow(w.c.dir, w.cur.ID)
			if how == "" {
				how = "was answered elsewhere or its job ended (`bridgectl audit` shows how)"
			}
			w.say("\nrequest %s %s", short(w.cur.ID), how)
			w.cur, w.switched = nil, true
		case !w.warned && w.cur.Expires.Sub(now) <= lastCall && w.cur.Expires.Sub(w.shownAt) > lastCall:
			w.warned = true
			w.say("\a%s left for request %s — then it is denied automatically", w.cur.Expires.Sub(now).Truncate(time.Second), short(w.cur.ID))
			w.prompt()
		}
	}
	kept := w.backlog[:0]
	for _, r := range w.backlog {
		if live[r.ID] {
			kept = append(kept, r)
		} else {
			w.say("request %s (job %s, %s) ended before it was shown: expired or answered elsewhere", short(r.ID), short(r.JobID), visible(truncate(r.Summary, 80), 100))
		}
	}
	w.backlog = kept
	if w.cur == nil && len(w.backlog) > 0 {
		r := w.backlog[0]
		w.backlog = w.backlog[1:]
		w.show(r, now)
	}
}

func (w *watcher) show(r approvals.PendingRequest, now time.Time) {
	w.cur, w.shownAt, w.warned = &r, now, false
	more := ""
	if n := len(w.backlog); n > 0 {
		more = fmt.Sprintf(" (%d more waiting)", n)
	}
	w.say("\n\a=== approval needed%s ===", more)
	describeRequest(w.e.Stdout, w.c.dir, r, now, 4000)
	w.prompt()
}

// answer applies one line to the shown request.
func (w *watcher) answer(line string) {
	if w.cur == nil {
		if strings.TrimSpace(line) != "" {
			w.say("no request is shown; waiting for one (that line was not applied)")
		}
		return
	}
	approve, reason, ok := parseAnswer(line)
	if !ok {
		w.prompt()
		return
	}
	if w.switched && w.e.Now().Sub(w.shownAt) < w.grace {
		w.say("that answer came just as the request changed, so it was not applied: read this one and answer again")
		w.prompt()
		return
	}
	id := w.cur.ID
	err := w.q.Decide(id, approve, reason, w.who)
	switch {
	case err == nil:
		if approve {
			w.say("approved %s", short(id))
		} else {
			w.say("denied %s%s", short(id), ifNotEmpty(": ", visible(reason, 200)))
		}
	case errors.Is(err, approvals.ErrExpired), errors.Is(err, approvals.ErrAlreadyDecided), errors.Is(err, approvals.ErrUnknownID):
		w.say("not applied: %v", decideError(id, err))
	default:
		w.say("not applied: %v — answer again, or use `bridgectl approve %s` / `bridgectl deny %s`", err, id, id)
		w.prompt()
		return
	}
	w.cur, w.switched = nil, false
}

func (w *watcher) stop(why string) {
	n := 0
	if reqs, err := pendingRequests(w.c.dir); err == nil {
		n = len(reqs)
	}
	w.say("\nstopped watching (%s); %d request(s) still pending — `bridgectl pending`", why, n)
}

// parseAnswer reads one answer: y/yes [NOTE] approves, n/no [REASON] denies,
// any other text denies with the text as the reason. ok is false for an empty line.
// Only an exact y or yes approves, so a typo never lets a call through.
func parseAnswer(line string) (approve bool, reason string, ok bool) {
	s := strings.TrimSpace(line)
	if s == "" {
		return false, "", false
	}
	word, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "y", "yes":
		return true, rest, true
	case "n", "no":
		return false, rest, true
	}
	return false, s, true
}

// short is the first 12 characters of an id: enough to tell requests apart on screen.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// endedHow says how a request that left the queue ended, from the audit log
// ("" if the log does not say yet).
func endedHow(dir statedir.Dir, id string) string {
	recs, _ := approvals.ReadAudit(dir, false)
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.ID != id {
			continue
		}
		switch r.Event {
		case approvals.EventHuman:
			verb := "was DENIED"
			if r.Decision == rules.Allow {
				verb = "was APPROVED"
			}
			return fmt.Sprintf("%s elsewhere, by %s%s", verb, visible(r.By, 80), ifNotEmpty(": ", visible(truncate(r.Reason, 160), 200)))
		case approvals.EventTimeout:
			return "EXPIRED: no answer in time, so it was denied automatically"
		case approvals.EventCancel:
			return "was denied: its job was cancelled or ended"
		case approvals.EventCorrupt:
			return "was denied: its decision file was corrupt"
		}
	}
	return ""
}

// readLines sends each line of r (without its newline) until r ends or done
// closes. A line longer than maxAnswer is cut there, not fatal: the rest of
// it is dropped.
func readLines(r io.Reader, lines chan<- string, done <-chan struct{}) {
	br := bufio.NewReaderSize(r, maxAnswer)
	for {
		var line []byte
		for {
			chunk, isPrefix, err := br.ReadLine()
			if err != nil {
				if len(line) > 0 {
					select {
					case lines <- string(line):
					case <-done:
					}
				}
				return
			}
			if room := maxAnswer - len(line); room > 0 {
				line = append(line, chunk[:min(len(chunk), room)]...)
			}
			if !isPrefix {
				break
			}
		}
		select {
		case lines <- string(line):
		case <-done:
			return
		}
	}
}

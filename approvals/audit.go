package approvals

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
	"unicode/utf8"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Audit events, one JSONL line each in <state>/audit.log.
const (
	EventRequest     = "request"      // a tool call arrived and was classified
	EventAuto        = "auto"         // the rules allowed or denied it without a human
	EventPending     = "pending"      // it was queued for a human
	EventHuman       = "human"        // a human approved or denied it
	EventTimeout     = "timeout"      // nobody answered in time: denied
	EventCancel      = "cancel"       // the job was cancelled while it waited: denied
	EventShutdown    = "shutdown"     // the bridge stopped while it waited: unanswered (the harness got a deny)
	EventCorrupt     = "corrupt"      // the decision file was corrupt or malformed: denied
	EventApprovalOff = "approval_off" // human approval is off: an "ask" was allowed without asking
	EventApplied     = "applied"      // the approval child let an approved request run
	EventUnwritten   = "unwritten"    // records before this one could not be written; their requests were denied
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	ID      string    `json:"id,omitempty"` // approval id, for queued requests
	JobID   string    `json:"job_id,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Summary string    `json:"summary,omitempty"`
	// Input is the tool input the rules saw (strings over 4 KiB clipped and
	// marked), on auto and pending records: what was allowed, denied or
	// queued, beyond the one-line summary.
	Input    map[string]any `json:"input,omitempty"`
	Verdict  rules.Action   `json:"verdict,omitempty"`  // what the rules said
	Decision rules.Action   `json:"decision,omitempty"` // what happened: allow or deny
	Reason   string         `json:"reason,omitempty"`
	By       string         `json:"by,omitempty"`
	Channel  string         `json:"channel,omitempty"` // where a human answered (ChannelTerminal, ChannelHost)
	Expires  *time.Time     `json:"expires,omitempty"`
}

// AppendAudit appends one record to the audit log (mode 0600), whole or
// not at all. When it cannot (a full or read-only state dir), it marks the
// state dir (statedir.Dir.AuditUnwritten, which `bridgectl status` shows) and
// returns the error: the caller must not let what the record would record
// happen. The first record written after such a gap is preceded by an
// EventUnwritten record that says when records were lost.
func AppendAudit(dir statedir.Dir, r AuditRecord) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	// A record's words are bounded whatever wrote them (a rule's reason
	// quotes its input): the log stays readable record by record.
	r.Tool, r.Summary, r.Reason, r.By = ClipText(r.Tool, 128), ClipText(r.Summary, maxRecordText), ClipText(r.Reason, maxRecordText), ClipText(r.By, 256)
	r.Verdict, r.Decision = rules.Action(ClipText(string(r.Verdict), 16)), rules.Action(ClipText(string(r.Decision), 16))
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	if err := closeGap(dir); err != nil {
		markUnwritten(dir, err)
		return err
	}
	if err := statedir.AppendLine(dir.AuditLog(), b); err != nil {
		markUnwritten(dir, err)
		return err
	}
	return nil
}

// Unwritten is what the state dir's mark says about audit records that could
// not be written.
type Unwritten struct {
	Since time.Time // the first failure (zero: unknown, the mark is empty)
	Last  time.Time // the latest failure
	Err   string
}

// Text says it for a human.
func (u Unwritten) Text() string {
	when := "until " + u.Last.Local().Format(time.RFC3339)
	if !u.Since.IsZero() {
		when = "from " + u.Since.Local().Format(time.RFC3339) + " " + when
	}
	why := ""
	if u.Err != "" {
		why = " (" + u.Err + ")"
	}
	return "audit records could not be written " + when + why + "; every tool call they would have recorded was denied"
}

type unwrittenMark struct {
	Since time.Time `json:"since"`
	Err   string    `json:"error"`
}

// AuditUnwritten reads the mark left when audit records could not be
// written; ok is false when there is none (every record since the last gap
// was written).
func AuditUnwritten(dir statedir.Dir) (Unwritten, bool) {
	path := dir.AuditUnwritten()
	fi, err := os.Stat(path)
	if err != nil {
		return Unwritten{}, false
	}
	u := Unwritten{Last: fi.ModTime()}
	var m unwrittenMark
	if b, err := os.ReadFile(path); err == nil && len(b) <= 4096 && json.Unmarshal(b, &m) == nil {
		u.Since, u.Err = m.Since, m.Err
	}
	return u, true
}

// markUnwritten records a failed audit write. On a full disk an empty file
// can still be made (it takes no data block): then only its time says when.
func markUnwritten(dir statedir.Dir, cause error) {
	path := dir.AuditUnwritten()
	now := time.Now()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		_ = os.Chtimes(path, now, now) // marked already: the latest failure
		return
	}
	b, _ := json.Marshal(unwrittenMark{Since: now.UTC(), Err: writeCause(cause)})
	_, _ = f.Write(b)
	_ = f.Close()
	_ = os.Chtimes(path, now, now)
}

// closeGap writes the EventUnwritten record of a mark, once: whoever removes
// the mark writes it (and puts the mark back when that fails).
func closeGap(dir statedir.Dir) error {
	u, ok := AuditUnwritten(dir)
	if !ok {
		return nil
	}
	if err := os.Remove(dir.AuditUnwritten()); err != nil {
		return nil // another writer took it
	}
	b, err := json.Marshal(AuditRecord{Time: time.Now().UTC(), Event: EventUnwritten, Reason: u.Text()})
	if err != nil {
		return err
	}
	if err := statedir.AppendLine(dir.AuditLog(), b); err != nil {
		restoreMark(dir, u)
		return err
	}
	return nil
}

func restoreMark(dir statedir.Dir, u Unwritten) {
	b, _ := json.Marshal(unwrittenMark{Since: u.Since, Err: u.Err})
	if os.WriteFile(dir.AuditUnwritten(), b, 0o600) != nil {
		markUnwritten(dir, errors.New(u.Err))
	}
}

// writeCause is the OS's reason for a failed write, without the paths.
func writeCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// maxRecordText bounds each of a record's summary and reason.
const maxRecordText = 4 << 10

// ClipText is s cut to at most n bytes on a rune boundary, marked with "…"
// when cut.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// AuditTail is how many records ReadAudit returns without all.
const AuditTail = 50

// maxAuditLine bounds one line of the audit log when reading it back.
const maxAuditLine = 1 << 20

// EventRefused records a question the approval service refused unread as
// not one the approval child sends (a forgery, or an input past its bounds).
const EventRefused = "refused"

// EventUnreadable is what ReadAudit makes of a line that is not a whole record.
const EventUnreadable = "unreadable"

// ReadAudit returns the audit log, oldest first: the last AuditTail records,
// or every record with all. A missing log is empty. A line that does not
// parse is returned as an EventUnreadable record rather than hidden: its
// Reason says which line and shows it, and the fields still whole in it
// (time, job, tool, summary, ...) are kept.
func ReadAudit(dir statedir.Dir, all bool) ([]AuditRecord, error) {
	f, err := os.Open(dir.AuditLog())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	var out []AuditRecord
	n := 0
	each := func(line []byte, whole bool) {
		n++
		if len(line) == 0 {
			return
		}
		var r AuditRecord
		if !whole || json.Unmarshal(line, &r) != nil || r.Event == "" {
			r = damagedRecord(n, line)
		}
		out = append(out, r)
		if !all && len(out) > 2*AuditTail {
			out = append(out[:0], out[len(out)-AuditTail:]...)
		}
	}
	tail, whole, err := statedir.EachLine(f, maxAuditLine, each)
	each(tail, whole) // a last line without its newline
	if err != nil {
		return out, fmt.Errorf("read audit log: %w", err)
	}
	if !all && len(out) > AuditTail {
		out = out[len(out)-AuditTail:]
	}
	return out, nil
}

// damagedRecord is what is still known of line n, which is not a whole
// record (cut short by a crash or a full disk before writes were whole, or
// edited by hand).
func damagedRecord(n int, line []byte) AuditRecord {
	var r AuditRecord
	if known := statedir.Salvage(line); len(known) > 0 {
		if b, err := json.Marshal(known); err == nil {
			_ = json.Unmarshal(b, &r) // fields of the wrong type stay empty
		}
	}
	was := ""
	if r.Event != "" {
		was = "; its event: " + r.Event
	}
	r.Event = EventUnreadable
	r.Summary, r.Tool, r.By = rules.Clip(r.Summary), rules.Clip(r.Tool), rules.Clip(r.By)
	r.Reason = fmt.Sprintf("line %d is not a whole record (%d bytes%s): %s", n, len(line), was, rules.Clip(string(line)))
	return r
}

package approvals

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

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
	EventCorrupt     = "corrupt"      // the decision file was corrupt or malformed: denied
	EventApprovalOff = "approval_off" // human approval is off: an "ask" was allowed without asking
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
	Expires  *time.Time     `json:"expires,omitempty"`
}

// AppendAudit appends one record to the audit log (mode 0600).
func AppendAudit(dir statedir.Dir, r AuditRecord) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	return statedir.AppendLine(dir.AuditLog(), b)
}

// AuditTail is how many records ReadAudit returns without all.
const AuditTail = 50

// maxAuditLine bounds one line of the audit log when reading it back.
const maxAuditLine = 1 << 20

// ReadAudit returns the audit log, oldest first: the last AuditTail records,
// or every record with all. A missing log is empty. A line that does not
// parse is returned as an event "unreadable" rather than hidden.
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
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), maxAuditLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var r AuditRecord
		if err := json.Unmarshal(line, &r); err != nil || r.Event == "" {
			r = AuditRecord{Event: "unreadable", Reason: rules.Clip(string(line))}
		}
		out = append(out, r)
		if !all && len(out) > 2*AuditTail {
			out = append(out[:0], out[len(out)-AuditTail:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read audit log: %w", err)
	}
	if !all && len(out) > AuditTail {
		out = out[len(out)-AuditTail:]
	}
	return out, nil
}

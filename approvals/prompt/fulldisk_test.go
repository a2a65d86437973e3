package prompt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/fulldisk"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// On a full state dir nothing is allowed unless it is on record: a call
// whose request record fits but whose allow (or pending) record does not is
// denied, the child's log says why, the state dir is marked for `bridgectl
// status`, and the log holds no torn line. Once space is back the call is
// allowed and recorded, after a record of the gap.
func TestPrompterDeniesWhatItCannotRecord(t *testing.T) {
	fs := fulldisk.Mount(t, 256<<10)
	w := newWorld(t)
	w.state = filepath.Join(fs.Dir, "state")
	mustDo(t, os.MkdirAll(filepath.Join(w.state, "approvals"), 0o700))
	w.policy.Protected = []string{w.state, w.env}
	dir, _ := statedir.At(w.state)
	calls := []struct {
		name string
		mode string
		cmd  string
	}{
		{"allowed by the rules", approvals.ModeOn, "ls"},
		{"allowed with approval off", approvals.ModeOff, "ls && id"},
		{"asked of a human", approvals.ModeOn, "ls && id"},
		{"no room for the request record either", approvals.ModeOn, ""},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			fs.Free()
			os.Remove(dir.AuditLog())
			os.Remove(dir.AuditUnwritten())
			cfg := promptConfig(t, w)
			cfg.ApprovalMode = c.mode
			req := rules.Request{Tool: "Bash", Input: map[string]any{"command": c.cmd}}
			if c.cmd == "" {
				req.Input["command"] = "ls"
				leaveRoom(t, dir.AuditLog(), 0, rules.Request{}, w.policy)
			} else {
				// Room for the request record, not for the one after it.
				leaveRoom(t, dir.AuditLog(), 1, req, w.policy)
			}
			fs.Fill()
			before, _ := os.ReadFile(dir.AuditLog())
			var log syncbuf.Buffer
			p, err := NewPrompter(cfg, zerolog.New(&log))
			if err != nil {
				t.Fatal(err)
			}
			a := p.Answer(t.Context(), req)
			if a.Behavior != "deny" || !strings.Contains(a.Message, "audit record") || !strings.Contains(a.Message, "nothing runs unrecorded") {
				t.Fatalf("answer on a full state dir = %+v, want a denial for the missing record", a)
			}
			if !strings.Contains(log.String(), "the audit record of this tool call could not be written") && !strings.Contains(log.String(), "approval request failed: denied") {
				t.Errorf("the child's log does not say why:\n%s", log.String())
			}
			if _, ok := approvals.AuditUnwritten(dir); !ok {
				t.Error("the state dir is not marked")
			}
			after, _ := os.ReadFile(dir.AuditLog())
			events := wholeEvents(t, after)
			if c.cmd == "" {
				if len(after) != len(before) {
					t.Errorf("log grew from %d to %d bytes without room", len(before), len(after))
				}
			} else if events[len(events)-1] != approvals.EventRequest {
				t.Errorf("events = %v, want the request record last (its allow was never written)", events)
			}
			if open, _ := p.queue.Pending(); len(open) != 0 {
				t.Errorf("a request was queued without its record: %+v", open)
			}

			fs.Free()
			if c.mode == approvals.ModeOn && c.cmd != "ls" {
				return // a human would be asked now; the queue's own tests cover that
			}
			if a := p.Answer(t.Context(), req); a.Behavior != "allow" {
				t.Fatalf("once space is back: %+v, want allow", a)
			}
			b, _ := os.ReadFile(dir.AuditLog())
			events = wholeEvents(t, b[len(after):])
			if strings.Join(events, ",") != "unwritten,request,"+map[string]string{approvals.ModeOn: "auto", approvals.ModeOff: "approval_off"}[c.mode] {
				t.Errorf("events once space is back = %v, want the gap, the request and its allow", events)
			}
		})
	}
}

// wholeEvents parses every line of b as an audit record (a torn line fails
// the test) and returns their events.
func wholeEvents(t *testing.T, b []byte) []string {
	t.Helper()
	var events []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r approvals.AuditRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		events = append(events, r.Event)
	}
	return events
}

// leaveRoom writes one padding record into the log at path so that its last
// page has room for n request records of req and a few bytes more, but not
// for a record after them: on a filled tmpfs a file grows only to the end of
// its last page.
func leaveRoom(t *testing.T, path string, n int, req rules.Request, policy rules.Policy) {
	t.Helper()
	room := 0
	if n > 0 {
		v := rules.Classify(req, policy)
		rec, err := json.Marshal(approvals.AuditRecord{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Event: approvals.EventRequest,
			JobID: "job-1", Tool: req.Tool, Summary: v.Summary, Verdict: v.Decision, Reason: v.Reason})
		if err != nil {
			t.Fatal(err)
		}
		// +1 newline, +10 for a time with nanoseconds, +2 to spare.
		room = n * (len(rec) + 13)
	}
	pad := os.Getpagesize() - room
	head := `{"time":"2026-01-01T00:00:00Z","event":"request","summary":"`
	tail := "\"}\n"
	line := head + strings.Repeat("p", pad-len(head)-len(tail)) + tail
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

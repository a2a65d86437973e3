package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func newService(t *testing.T, w world) *Service {
	t.Helper()
	svc := NewService(statedir.Dir{Root: w.state}, zerolog.Nop())
	mustDo(t, svc.Listen())
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// post asks the service with token and returns the status and the answer
// (status 0 when the request failed).
func post(t *testing.T, url, token string, q question) (int, Answer) {
	t.Helper()
	b, _ := json.Marshal(q)
	return postRaw(t, url, token, b)
}

// The channel answers only a registered job's token, and only with that
// job's rules: another job's token, none, or an ended job's gets 401, and no
// request of the channel can answer, approve or switch anything.
func TestServiceAnswersATokenForItsJobAlone(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	a := promptConfig(t, w)
	b := promptConfig(t, w)
	b.JobID, b.Allow, b.Timeout = "job-2", []string{"ls"}, 200*time.Millisecond
	ca, err := svc.Register(a)
	mustDo(t, err)
	cb, err := svc.Register(b)
	mustDo(t, err)
	if ca.Token == cb.Token || ca.URL != svc.URL() {
		t.Fatalf("child configs %+v %+v", ca, cb)
	}
	ls := question{ToolName: "Bash", Input: map[string]any{"command": "cat README"}}
	if code, ans := post(t, svc.URL(), ca.Token, ls); code != http.StatusOK || ans.Behavior != "allow" {
		t.Errorf("job-1's cat: %d %+v, want allowed by its rules", code, ans)
	}
	if code, ans := post(t, svc.URL(), cb.Token, ls); code != http.StatusOK || ans.Behavior == "allow" {
		// job-2's allow list has no cat: a human is asked, nobody answers.
		t.Errorf("job-2's cat: %d %+v", code, ans)
	}
	for name, tok := range map[string]string{"none": "", "unknown": strings.Repeat("0", 64), "another's prefix": ca.Token[:32]} {
		if code, _ := post(t, svc.URL(), tok, ls); code != http.StatusUnauthorized {
			t.Errorf("token %s: %d, want 401", name, code)
		}
	}
	svc.Unregister(a.JobID)
	if code, _ := post(t, svc.URL(), ca.Token, ls); code != http.StatusUnauthorized {
		t.Errorf("an ended job's token: %d, want 401", code)
	}
	// The service's mux has the one route: nothing else answers.
	for _, path := range []string{"/decide", "/approve/" + ca.Token, "/switches"} {
		resp, err := http.Post(strings.TrimSuffix(svc.URL(), ServicePath)+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// A question waiting for a human when the bridge stops is recorded as
// unanswered (event shutdown, no decision), its ledger says unanswered, and
// the harness gets a deny; a job's question cancelled by its end is a cancel.
func TestServiceCloseLeavesAPendingRequestUnanswered(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	cfg := promptConfig(t, w)
	cfg.Ledger = filepath.Join(t.TempDir(), "ledger.jsonl")
	pending := make(chan approvals.PendingRequest, 1)
	svc.Notify = func(pr approvals.PendingRequest) { pending <- pr }
	child, err := svc.Register(cfg)
	mustDo(t, err)
	got := make(chan Answer, 1)
	go func() {
		_, a := post(t, svc.URL(), child.Token, question{ToolName: "WebFetch", Input: map[string]any{"url": "https://example.com", "prompt": "x"}, ToolUseID: "tu1"})
		got <- a
	}()
	pr := <-pending
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mustDo(t, svc.Close(ctx))
	if a := <-got; a.Behavior != "deny" || !strings.Contains(a.Message, "the bridge stopped") {
		t.Errorf("answer at shutdown %+v", a)
	}
	recs, err := approvals.ReadAudit(statedir.Dir{Root: w.state}, true)
	mustDo(t, err)
	last := recs[len(recs)-1]
	if last.Event != approvals.EventShutdown || last.ID != pr.ID || last.Decision != "" || last.By != approvals.KindShutdown {
		t.Errorf("last audit record %+v, want the request left unanswered at shutdown", last)
	}
	b, err := os.ReadFile(cfg.Ledger)
	mustDo(t, err)
	var v policy.Verdict
	mustDo(t, json.Unmarshal(bytes.TrimSpace(b), &v))
	if v.ToolUseID != "tu1" || v.Verdict != policy.Unanswered {
		t.Errorf("ledger %+v, want unanswered", v)
	}
	if _, err := svc.Register(cfg); err == nil {
		t.Error("a closed service registered a job")
	}
}

// A job that asks more than maxInFlightPerJob questions at once gets the
// rest denied at once; the service goes on answering its other jobs.
func TestServiceBoundsAJobsQuestionsInFlight(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	cfg := promptConfig(t, w)
	queued := make(chan approvals.PendingRequest, maxInFlightPerJob)
	svc.Notify = func(pr approvals.PendingRequest) { queued <- pr }
	child, err := svc.Register(cfg)
	mustDo(t, err)
	other := promptConfig(t, w)
	other.JobID = "job-2"
	oc, err := svc.Register(other)
	mustDo(t, err)
	ask := question{ToolName: "WebFetch", Input: map[string]any{"url": "https://example.com", "prompt": "x"}}
	for range maxInFlightPerJob {
		go post(t, svc.URL(), child.Token, ask)
	}
	for range maxInFlightPerJob {
		<-queued
	}
	if _, a := post(t, svc.URL(), child.Token, ask); a.Behavior != "deny" || !strings.Contains(a.Message, "tool calls waiting") {
		t.Errorf("one question too many: %+v", a)
	}
	if _, a := post(t, svc.URL(), oc.Token, question{ToolName: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "a")}}); a.Behavior != "allow" {
		t.Errorf("another job's Read: %+v", a)
	}
}

// The child's verdict in the job's view can make the daemon's stricter and
// never looser: a Read the daemon allows is denied when the job's view says
// so (and the reason says where it was read), and a view's allow of a
// protected path changes nothing.
func TestServiceTakesTheStricterOfTheJobsView(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	child, err := svc.Register(promptConfig(t, w))
	mustDo(t, err)
	read := question{ToolName: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "l", "a")},
		View: &rules.Verdict{Decision: rules.Deny, Reason: "l/a resolves to /etc/a, outside the workspace"}}
	if _, a := post(t, svc.URL(), child.Token, read); a.Behavior != "deny" || !strings.Contains(a.Message, "in the job's view: l/a resolves to /etc/a") {
		t.Errorf("a Read the job's view denies: %+v", a)
	}
	read.View = nil
	if _, a := post(t, svc.URL(), child.Token, read); a.Behavior != "allow" {
		t.Errorf("the same Read without a view: %+v", a)
	}
	state := question{ToolName: "Write", Input: map[string]any{"file_path": filepath.Join(w.state, "approval-off"), "content": "x"},
		View: &rules.Verdict{Decision: rules.Allow, Reason: "inside the workspace"}}
	if _, a := post(t, svc.URL(), child.Token, state); a.Behavior != "deny" {
		t.Errorf("a view's allow of the state dir loosened the daemon's deny: %+v", a)
	}
}

// A job that asks in a loop is denied past the channel's rate, and what it
// is denied is not written to the audit log: the log grows by at most the
// burst, however long the loop runs.
func TestServiceBoundsAJobsQuestionRate(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	child, err := svc.Register(promptConfig(t, w))
	mustDo(t, err)
	ls := question{ToolName: "Bash", Input: map[string]any{"command": "cat README"}}
	denied := 0
	const asks = 2 * questionBurst
	for range asks {
		if _, a := post(t, svc.URL(), child.Token, ls); a.Behavior == "deny" {
			if !strings.Contains(a.Message, "tool calls a second") {
				t.Fatalf("deny %+v", a)
			}
			denied++
		}
	}
	recs, err := approvals.ReadAudit(statedir.Dir{Root: w.state}, true)
	mustDo(t, err)
	if denied == 0 || len(recs) >= 2*asks {
		t.Errorf("%d of %d questions denied, %d audit records", denied, asks, len(recs))
	}
}

// postRaw posts body as it is with token ("" for none) and returns the
// status and the answer (status 0 when the request failed).
func postRaw(t *testing.T, url, token string, body []byte) (int, Answer) {
	t.Helper()
	status, raw := postBody(t, url, token, body)
	var a Answer
	_ = json.Unmarshal([]byte(raw), &a)
	return status, a
}

// postBody is postRaw's request, with the answer as the bytes sent.
func postBody(t *testing.T, url, token string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// An attack review's forgery (a job's command holding the token): a
// question with a 2 MiB tool name, a 100 KiB tool_use_id, or an input of
// 200,000 tiny values is refused before anything is recorded, so the audit
// log stays readable by `bridgectl audit` and the job's real call after it
// keeps its verdict on the ledger.
func TestServiceRefusesQuestionsThatWouldFloodTheRecords(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	cfg := promptConfig(t, w)
	cfg.Ledger = filepath.Join(t.TempDir(), "ledger.jsonl")
	cfg.Timeout = 300 * time.Millisecond // what would reach a human times out
	child, err := svc.Register(cfg)
	mustDo(t, err)
	tiny := make([]any, 200_000)
	for i := range tiny {
		tiny[i] = "ab"
	}
	for name, q := range map[string]question{
		"a 2 MiB tool name":     {ToolName: "TodoWrite" + strings.Repeat("A", 2<<20), Input: map[string]any{}},
		"a 100 KiB tool_use_id": {ToolName: "TodoWrite", ToolUseID: strings.Repeat("f", 100<<10), Input: map[string]any{}},
		"200,000 tiny values":   {ToolName: "TodoWrite", Input: map[string]any{"todos": tiny}},
		"a view of 4 MiB": {ToolName: "Bash", Input: map[string]any{"command": "cat README"},
			View: &rules.Verdict{Decision: rules.Deny, Reason: strings.Repeat("r", 4<<20), Summary: strings.Repeat("s", 4<<20)}},
	} {
		body, _ := json.Marshal(q)
		if code, a := postRaw(t, svc.URL(), child.Token, body); code == http.StatusOK && a.Behavior != "deny" {
			t.Errorf("%s: %d %+v, want refused", name, code, a)
		}
	}
	if st, err := os.Stat(statedir.Dir{Root: w.state}.AuditLog()); err == nil && st.Size() > 64<<10 {
		t.Errorf("the audit log grew to %d bytes from refused questions", st.Size())
	}
	if _, a := post(t, svc.URL(), child.Token, question{ToolName: "Read", ToolUseID: "toolu_real", Input: map[string]any{"file_path": filepath.Join(w.ws, "a")}}); a.Behavior != "allow" {
		t.Fatalf("the real Read: %+v", a)
	}
	if _, err := approvals.ReadAudit(statedir.Dir{Root: w.state}, true); err != nil {
		t.Errorf("bridgectl audit cannot read the log: %v", err)
	}
	b, err := os.ReadFile(cfg.Ledger)
	mustDo(t, err)
	if !strings.Contains(string(b), `"tool_use_id":"toolu_real"`) || len(b) > 4<<10 {
		t.Errorf("ledger (%d bytes): %.300s", len(b), b)
	}
}

// Bodies in flight are bounded across the daemon, not only per job: a
// question that does not fit what is left is denied unread.
func TestServiceBoundsBytesInFlight(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	svc.inFlight = semaphore.NewWeighted(1 << 10)
	child, err := svc.Register(promptConfig(t, w))
	mustDo(t, err)
	big := question{ToolName: "Write", Input: map[string]any{"file_path": filepath.Join(w.ws, "a"), "content": strings.Repeat("x", 4<<10)}}
	if _, a := post(t, svc.URL(), child.Token, big); a.Behavior != "deny" || !strings.Contains(a.Message, "reading too many") {
		t.Errorf("a question over the daemon's budget: %+v", a)
	}
	if _, a := post(t, svc.URL(), child.Token, question{ToolName: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "a")}}); a.Behavior != "allow" {
		t.Errorf("a small question: %+v", a)
	}
}

// A question waiting for a person holds none of the budget of bodies being
// read: another one the same size is read and answered meanwhile.
func TestServiceWaitingQuestionHoldsNoBudget(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	queued := make(chan approvals.PendingRequest, 1)
	svc.Notify = func(pr approvals.PendingRequest) { queued <- pr }
	child, err := svc.Register(promptConfig(t, w))
	mustDo(t, err)
	ask := question{ToolName: "WebFetch", Input: map[string]any{"url": "https://example.com", "prompt": "xxxxxxxxxxxxxxx"}}
	read := question{ToolName: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "a")}}
	ab, _ := json.Marshal(ask)
	rb, _ := json.Marshal(read)
	svc.inFlight = semaphore.NewWeighted(int64(max(len(ab), len(rb))))
	go post(t, svc.URL(), child.Token, ask)
	<-queued
	if _, a := post(t, svc.URL(), child.Token, read); a.Behavior != "allow" {
		t.Errorf("a Read while a question waits for a person: %+v", a)
	}
}

// A second question for the same tool_use_id is refused: a forged one
// cannot write the ledger's verdict (the first line of an id wins) for a
// real call still waiting for a human.
func TestServiceRefusesASecondQuestionForOneCall(t *testing.T) {
	w := newWorld(t)
	svc := newService(t, w)
	cfg := promptConfig(t, w)
	cfg.Ledger = filepath.Join(w.root, "ledger.jsonl")
	child, err := svc.Register(cfg)
	mustDo(t, err)
	read := question{ToolName: "Read", ToolUseID: "toolu_1", Input: map[string]any{"file_path": filepath.Join(w.ws, "a")}}
	if _, a := post(t, svc.URL(), child.Token, read); a.Behavior != "allow" {
		t.Fatalf("the first question: %+v", a)
	}
	if _, a := post(t, svc.URL(), child.Token, read); a.Behavior != "deny" || !strings.Contains(a.Message, "already asked") {
		t.Fatalf("the second question for toolu_1: %+v", a)
	}
	ledger, _ := os.ReadFile(cfg.Ledger)
	if n := strings.Count(string(ledger), `"toolu_1"`); n != 1 {
		t.Errorf("the ledger has %d lines for toolu_1, want 1:\n%s", n, ledger)
	}
	audit, _ := os.ReadFile(filepath.Join(w.state, "audit.log"))
	if !strings.Contains(string(audit), "refused a second question for tool_use_id toolu_1") {
		t.Errorf("no refused record in the audit log:\n%s", audit)
	}
	// An allow echoes the input as sent: "<" is one byte, not \u003c.
	html := question{ToolName: "Read", ToolUseID: "toolu_2", Input: map[string]any{"file_path": filepath.Join(w.ws, "<b>")}}
	b, _ := json.Marshal(html)
	if status, raw := postBody(t, svc.URL(), child.Token, b); status != 200 || !strings.Contains(raw, "<b>") {
		t.Errorf("the answer escaped the input: %d %s", status, raw)
	}
}

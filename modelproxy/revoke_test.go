package modelproxy

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// Revoke kills the token at once — the next request is 401 — while the call
// in flight at that moment is cut and still counted; Close later returns
// that usage.
func TestRevokeIsImmediateAndKeepsInFlightUsage(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeEvent(w, turnEvents(usageBlock{Input: 555, Output: 1}, 0, "")[0])
		<-r.Context().Done() // never finishes on its own
	})
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q %v", line, err)
	}

	p.Revoke("job-1")
	p.Revoke("job-unknown") // ignored
	a := call(t, p, "/v1/messages", "bearer", token, msgBody)
	if typ, msg := anthropicError(t, a.body); a.status != http.StatusUnauthorized || typ != "authentication_error" || msg != msgBadToken {
		t.Fatalf("request after Revoke: %d %s", a.status, a.body)
	}
	var rest strings.Builder
	br.WriteTo(&rest) // ends: Revoke cut the call
	if strings.Contains(rest.String(), "message_stop") {
		t.Fatalf("stream went on after Revoke: %q", rest.String())
	}
	u, err := p.Close("job-1")
	if err != nil || u.InputTokens != 555 || u.Requests != 1 {
		t.Fatalf("Close after Revoke = %+v, %v; want the cut call's usage", u, err)
	}
	if d := p.DailyUsage(); d.InputTokens != 555 {
		t.Fatalf("daily %+v", d)
	}
}

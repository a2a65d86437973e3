package modelproxy

import (
	"net/http"
	"strings"
	"testing"
)

// Revoke kills the token at once — the next request is 401 — while the call
// in flight at that moment is cut and still counted; Close later returns
// that usage.
func TestRevokeIsImmediateAndKeepsInFlightUsage(t *testing.T) {
	up := newUpstream(t, stalledStream(555))
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")
	br := openStream(t, p, token)

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

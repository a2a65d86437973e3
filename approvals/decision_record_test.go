package approvals

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
)

// A request is allowed only with an allow on record. The approval queue is
// writable from the job's jail (the approval child needs it), so a decision
// file can appear there that Decide never wrote and whose human record
// therefore never was: written by a file tool write redirected through a
// swapped symlink, or by any other process of the user. The approval child
// takes any well-formed file of kind "human" and allows the call, writing
// nothing: the audit log then holds the request's pending record and no
// allow at all, though the call ran.
func TestApprovalWithoutItsRecordIsRecordedByTheChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, dir := newQueue(t)
		pr, res := submitAsync(t, q, t.Context(), "job1", 5*time.Minute)

		body := fmt.Sprintf(`{"version":1,"id":%q,"approved":true,"reason":"looks fine","by":"alice","kind":"human","decided":%q}`, pr.ID, time.Now().UTC().Format(time.RFC3339Nano))
		if err := os.WriteFile(filepath.Join(dir.Approvals(), pr.ID+".decision.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if !r.d.Approved {
			return // held: not applied
		}
		recs, err := ReadAudit(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.ID == pr.ID && rec.Decision == rules.Allow {
				return // held: the allow is on record
			}
		}
		t.Errorf("request %s was allowed (by %q) with no allow record in the audit log: %v", pr.ID, r.d.By, auditEvents(t, dir))
	})
}

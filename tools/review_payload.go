package tools

import (
	"fmt"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// ReviewPayload is a review job's part of the payload.
type ReviewPayload struct {
	Scope   string   `json:"scope" jsonschema:"the scope reviewed: uncommitted, base:<ref>, commit:<sha> or paths:<files>"`
	Files   int      `json:"files" jsonschema:"how many files the scope holds"`
	LeftOut []string `json:"left_out,omitempty" jsonschema:"secret files and deny paths of the scope, named and never read"`
	review.Result
}

// reviewPending is the verdict of a review that has not ended, and
// reviewNone of one that ended without an answer.
const (
	reviewPending = "pending"
	reviewNone    = "none"
)

func reviewPayload(s jobs.Snapshot) *ReviewPayload {
	sc := s.Review.Scope
	p := &ReviewPayload{Scope: sc.Spec.String(), Files: len(sc.Files) + sc.FilesUnlisted, LeftOut: sc.LeftOut}
	switch {
	case s.Status.Done():
		p.Result = review.Read(s.Result, sc, s.Workspace)
	case s.Status.Final():
		p.Result = review.Result{Verdict: reviewNone, Findings: []review.Finding{}, Error: "the review ended " + string(s.Status) + " without an answer"}
	default:
		p.Result = review.Result{Verdict: reviewPending, Findings: []review.Finding{}}
	}
	return p
}

// writeReview is the review's part of the text: the verdict and each
// finding, most urgent first as the reviewer listed them.
func writeReview(b *strings.Builder, r *ReviewPayload) {
	if r == nil || r.Verdict == reviewPending {
		return
	}
	fmt.Fprintf(b, "\nReview of %s (%d files): %s", r.Scope, r.Files, r.Verdict)
	if r.Summary != "" {
		b.WriteString(" — " + r.Summary)
	}
	for _, f := range r.Findings {
		ctx := ""
		if f.Context {
			ctx = ", outside the changed lines"
		}
		fmt.Fprintf(b, "\n- [P%d, %.0f%%] %s:%d-%d%s: %s", f.Priority, f.Confidence*100, f.File, f.LineStart, f.LineEnd, ctx, f.Title)
	}
	if r.Dropped > 0 {
		fmt.Fprintf(b, "\n%d finding(s) dropped: %s", r.Dropped, strings.Join(r.DroppedWhy, "; "))
	}
	if r.Error != "" {
		b.WriteString("\nThe findings could not be read: " + r.Error)
	}
	if len(r.LeftOut) > 0 {
		b.WriteString("\nLeft out of the scope (secret or denied, never read): " + strings.Join(r.LeftOut, ", "))
	}
}

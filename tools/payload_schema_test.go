package tools

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// What the agent tools return matches the outputSchema they declare, in
// every status and with every field of the handoff filled — a client that
// validates structuredContent (the TypeScript SDK's does) accepts it.
func TestAgentPayloadMatchesItsOutputSchema(t *testing.T) {
	tool, _ := AgentPollTool(&fakeJobs{}, AgentToolOptions{})
	raw, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("out.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("out.json")
	if err != nil {
		t.Fatal(err)
	}
	ms, old := int64(1500), int64(3)
	for _, st := range []jobs.Status{jobs.StatusQueued, jobs.StatusRunning, jobs.StatusWaitingApproval, jobs.StatusDone, jobs.StatusError, jobs.StatusCancelled, jobs.StatusInterrupted} {
		s := snap(st)
		if st.Final() {
			end := s.CreatedAt.Add(time.Second)
			s.EndedAt, s.StopReason, s.ModelError = &end, jobs.StopModelError, jobs.ModelOverload
			s.UnresolvedFailures = []string{"go test ./..."}
			s.Changes = []changes.Change{{Path: "a.txt", Change: changes.Modified, Size: 4, OldSize: &old, By: "command"},
				{Path: ".env", Change: changes.Created, Size: 9, Secret: true}, {Path: "x.bin", Change: changes.Deleted, Size: 2, Binary: true, Note: "n"}}
			s.ChangesUnlisted, s.ChangesNote, s.Diff, s.DiffTruncated = 2, "note", "--- a/a.txt\n", true
			s.Commands[0].DurationMS, s.Commands[0].OutputTail, s.Commands[0].Runs = &ms, "ok", 2
		}
		b, err := json.Marshal(Payload(s, s.CreatedAt))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: the payload does not match the outputSchema: %v\n%s", st, err, b)
		}
	}
}

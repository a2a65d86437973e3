package tools

import (
	"fmt"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Handoff is what a host's model needs to decide its next move: why the job
// stopped, what it changed on disk, what failed, and what to do now. It is
// in structuredContent as well as in the text, because some hosts (Claude
// Code) hand their model only the JSON and others only the text.
type Handoff struct {
	StopReason         string           `json:"stop_reason,omitempty" jsonschema:"why the job ended, set once it has: completed (done) · step_ceiling · time_ceiling · budget_ceiling · daily_budget · model_error · harness_failed · no_result · approval_timeout · process_limit · memory_limit · disk_limit (error) · cancelled_by_caller · cancelled_by_owner (cancelled) · interrupted_by_restart (interrupted)"`
	ModelError         string           `json:"model_error,omitempty" jsonschema:"for stop_reason model_error, DeepSeek's class: key_rejected, balance, rate_limit, overload, server_error, unreachable, stream_cut or bad_request"`
	UnresolvedFailures []string         `json:"unresolved_failures,omitempty" jsonschema:"commands that failed and were not followed by a success of the same command; a done job with any is done but not clean: say so and decide whether to accept it"`
	Changes            []changes.Change `json:"changes,omitempty" jsonschema:"files the job created, modified or deleted, seen on disk at its end (whoever made them); compare with files_written, which are only the file tools' claims"`
	ChangesUnlisted    int              `json:"changes_unlisted,omitempty" jsonschema:"changed files past the list's bound"`
	ChangesNote        string           `json:"changes_note,omitempty" jsonschema:"what the comparison of the workspace could not see or do"`
	ChangesRecord      string           `json:"changes_record,omitempty" jsonschema:"exact: the job wrote into an overlay and changes lists every byte it wrote; walk: no overlay could be had (macOS, BRIDGE_SANDBOX=off, a kernel without unprivileged overlayfs) and the list comes from a walk of the workspace, which can miss changes: say so"`
	ChangesRecordFile  string           `json:"changes_record_file,omitempty" jsonschema:"the file on the bridge's machine holding every change of an exact record with its status (bridgectl jobs ID --changes prints it)"`
	ChangesHeld        int              `json:"changes_held,omitempty" jsonschema:"changes held back, not in the workspace: a person does not read them in a diff (dotfiles, dependency folders, bytecode, binaries, git internals); each has a held reason; the owner promotes them with bridgectl jobs ID --promote PATH"`
	ChangesConflicts   int              `json:"changes_conflicts,omitempty" jsonschema:"files the owner changed during the job: the job's version did not land"`
	ChangesPending     int              `json:"changes_pending,omitempty" jsonschema:"changes waiting for the owner's review (policy land review): bridgectl jobs ID --apply lands them"`
	Diff               string           `json:"diff,omitempty" jsonschema:"unified diff of the changed text files, at most 64 KiB (secret and binary files are never shown)"`
	DiffTruncated      bool             `json:"diff_truncated,omitempty" jsonschema:"the diff was cut at 64 KiB; the owner sees all of it with bridgectl jobs ID --diff"`
	Summary            string           `json:"summary" jsonschema:"the job in one line"`
	NextStep           string           `json:"next_step" jsonschema:"what to do now, in words: poll again, quote the nonce with the result, ask the owner to approve, or why there is no result"`
}

// handoff is the Handoff of a snapshot.
func handoff(s jobs.Snapshot) Handoff {
	h := Handoff{
		StopReason: string(s.StopReason), ModelError: s.ModelError,
		UnresolvedFailures: s.UnresolvedFailures,
		Changes:            s.Changes, ChangesUnlisted: s.ChangesUnlisted, ChangesNote: s.ChangesNote,
		ChangesRecord: s.ChangesRecord, ChangesRecordFile: s.ChangesRecordFile,
		ChangesHeld: s.ChangesHeld, ChangesConflicts: s.ChangesConflicts, ChangesPending: s.ChangesPending,
		Diff: s.Diff, DiffTruncated: s.DiffTruncated,
	}
	if !s.Status.Final() {
		h.UnresolvedFailures = jobs.UnresolvedFailures(s.Commands)
	}
	h.NextStep = nextStep(s)
	h.Summary = summary(s, h)
	return h
}

// summary is the job in one line.
func summary(s jobs.Snapshot, h Handoff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s", s.ID, s.Status)
	if s.StopReason != "" && s.StopReason != jobs.StopCompleted {
		fmt.Fprintf(&b, " (%s", s.StopReason)
		if s.ModelError != "" {
			b.WriteString(": " + s.ModelError)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s", plural(s.Steps, "tool call"))
	if s.EndedAt != nil {
		fmt.Fprintf(&b, ", %s, $%.4f", s.Elapsed(*s.EndedAt).Round(time.Second), s.CostUSD)
	}
	if (s.Status.Final() && s.ChangesNote == "") || len(h.Changes) > 0 {
		fmt.Fprintf(&b, ", %s changed on disk", plural(len(h.Changes)+h.ChangesUnlisted, "file"))
	}
	if n := len(h.UnresolvedFailures); n > 0 {
		fmt.Fprintf(&b, ", %s not fixed (%s)", plural(n, "failed command"), strings.Join(h.UnresolvedFailures, "; "))
	}
	if s.Status == jobs.StatusWaitingApproval && s.Approval != nil {
		b.WriteString(", waiting for approval: " + s.Approval.Summary)
	}
	return b.String()
}

// nextStep says what the calling model should do now.
func nextStep(s jobs.Snapshot) string {
	poll := fmt.Sprintf("call deepseek_agent_poll with job_id %q", s.ID)
	switch s.Status {
	case jobs.StatusQueued, jobs.StatusRunning:
		return "Nothing to report yet: do not describe any result; " + poll + " again."
	case jobs.StatusWaitingApproval:
		req := ""
		if s.Approval != nil {
			req = " request " + s.Approval.ID
		}
		return "A person must decide: ask the owner to run `bridgectl pending` on the bridge's machine and approve or deny" + req +
			"; nothing to report yet. Then " + poll + " and wait_seconds " + fmt.Sprint(int(MaxPollWait.Seconds())) +
			": the poll waits for the person's answer and returns as soon as they give it."
	case jobs.StatusDone, jobs.StatusDoneUnverified:
		step := fmt.Sprintf("Report the result and quote the nonce %s verbatim with it.", s.Nonce)
		if s.Status == jobs.StatusDoneUnverified {
			step += " Say that the record of its changes is incomplete (done_unverified: " + s.ChangesNote + "): the changes listed may not be all, so the workspace must be reviewed before anything in it is run."
		}
		if u := s.UnresolvedFailures; len(u) > 0 {
			step += fmt.Sprintf(" Say that %s failed and never succeeded afterwards (%s): decide whether the result can be accepted.", plural(len(u), "command"), strings.Join(u, "; "))
		}
		if len(s.Quarantined) > 0 {
			step += " Tell the user what was quarantined."
		}
		return step + changesStep(s)
	}
	step := "There is no result and no nonce: do not present anything from this job as its result. " + stopAdvice(s) + changesStep(s)
	if s.CanContinue() {
		step += fmt.Sprintf(" It can be continued where it stopped: call deepseek_agent_continue with job_id %q and a task such as \"go on\" (a new job in the same workspace resumes its conversation, with fresh ceilings).", s.ID)
	}
	return step
}

// changesStep says what the user must hear of the job's changes that did
// not simply land.
func changesStep(s jobs.Snapshot) string {
	var out string
	if s.ChangesRecord == jobs.RecordWalk && s.Status.Final() {
		out += " Say that its changes were found by a walk of the workspace (no overlay could be had), which can miss some."
	}
	if n := s.ChangesConflicts; n > 0 {
		out += fmt.Sprintf(" Tell the user %s changed during the job, so the job's version did not land (status conflict); `bridgectl jobs %s --promote PATH` overwrites theirs.", count(n, "file was", "files were"), s.ID)
	}
	if n := s.ChangesPending; n > 0 {
		out += fmt.Sprintf(" %s wait for the owner's review: ask them to read `bridgectl jobs %s --diff`, then run `bridgectl jobs %s --apply` (or --discard).", count(n, "change", "changes"), s.ID, s.ID)
	}
	if n := s.ChangesHeld; n > 0 {
		out += fmt.Sprintf(" %s held back and not in the workspace (each change's held says why); the owner inspects them with `bridgectl jobs %s --changes` and puts one in place with `bridgectl jobs %s --promote PATH`.", count(n, "change is", "changes are"), s.ID, s.ID)
	}
	return out
}

// count is n with the singular or plural phrase.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// stopAdvice says what a host can do about a job that ended without a result.
func stopAdvice(s jobs.Snapshot) string {
	switch s.StopReason {
	case jobs.StopStepCeiling:
		return "It hit its step ceiling: continue it with a larger max_steps, or start a new job with a narrower task."
	case jobs.StopTimeCeiling:
		return "It hit its wall-clock ceiling: continue it with a larger timeout_seconds, or start a new job with a narrower task."
	case jobs.StopBudgetCeiling:
		return "It spent its budget: start a smaller job, or ask the owner to raise BRIDGE_JOB_MAX_COST_USD / BRIDGE_JOB_MAX_TOKENS."
	case jobs.StopDailyBudget:
		return "Today's spend limit is reached: wait for 00:00 UTC, or ask the owner about BRIDGE_DAILY_MAX_COST_USD."
	case jobs.StopModelError:
		switch s.ModelError {
		case jobs.ModelKeyRejected:
			return "DeepSeek refused the key: ask the owner to check DEEPSEEK_API_KEY."
		case jobs.ModelBalance:
			return "The DeepSeek account is out of credit: ask the owner to top it up."
		case jobs.ModelRateLimit, jobs.ModelOverload, jobs.ModelServerError, jobs.ModelUnreachable, jobs.ModelStreamCut:
			return "DeepSeek failed (" + s.ModelError + "): try again later."
		}
		return "DeepSeek refused a request (" + s.ModelError + "): tell the user."
	case jobs.StopCancelledByCaller:
		return "It was cancelled by a deepseek_agent_cancel call: start it again only if the user asks."
	case jobs.StopCancelledByOwner:
		return "The owner cancelled it (bridgectl job kill): do not start it again without asking the user."
	case jobs.StopInterruptedByRestart:
		if s.CanContinue() {
			return "The bridge stopped or restarted while it ran: if the user still wants it, continue it where it stopped."
		}
		return "The bridge stopped or restarted while it ran, before its agent began: start it again if the user still wants it."
	case jobs.StopApprovalTimeout:
		return "Nobody answered its approval request in time: ask the owner to watch `bridgectl approve --watch`, then start it again."
	case jobs.StopHarnessFailed:
		return "The agent harness failed: ask the owner to run `bridgectl doctor`."
	case jobs.StopNoResult:
		return "The agent ended without an answer: start a new job with a clearer task."
	}
	return "Tell the user why it ended."
}

// writeHandoff adds what the job changed, what failed and the next step to
// an ended job's text.
func writeHandoff(b *strings.Builder, p AgentJobPayload) {
	if len(p.UnresolvedFailures) > 0 {
		fmt.Fprintf(b, "\nUnresolved failures (failed, never followed by a success of the same command): %s", strings.Join(p.UnresolvedFailures, "; "))
	}
	if len(p.Changes) > 0 || p.ChangesUnlisted > 0 {
		b.WriteString("\nChanged on disk:")
		for _, c := range p.Changes {
			fmt.Fprintf(b, "\n- %s %s (%d bytes", c.Change, c.Path, c.Size)
			if c.By != "" {
				fmt.Fprintf(b, ", by %s", c.By)
			}
			switch {
			case c.Secret:
				b.WriteString(", secret: contents not shown")
			case c.Binary:
				b.WriteString(", binary")
			}
			b.WriteString(")")
			if c.Status != "" {
				b.WriteString(" " + c.Status)
			}
			if c.Held != "" {
				fmt.Fprintf(b, " (held back: %s)", c.Held)
			}
			if c.Note != "" {
				fmt.Fprintf(b, " [%s]", c.Note)
			}
		}
		if p.ChangesUnlisted > 0 {
			fmt.Fprintf(b, "\n- and %d more", p.ChangesUnlisted)
		}
	}
	if p.ChangesNote != "" {
		fmt.Fprintf(b, "\nChanges note: %s", p.ChangesNote)
	}
	if p.Diff != "" {
		// Carried once: in structuredContent, which Claude Code shows its model.
		fmt.Fprintf(b, "\nDiff: %d bytes, in structuredContent.diff", len(p.Diff))
		if p.DiffTruncated {
			b.WriteString(" (cut at 64 KiB)")
		}
		fmt.Fprintf(b, "; all of it: deepseek_agent_fetch {\"job_id\": %q, \"part\": \"diff\"}", p.JobID)
	}
	for _, o := range p.Omitted {
		fmt.Fprintf(b, "\nLeft out to fit this host (%d bytes of %s): %s", o.Bytes, o.Part, o.Fetch)
	}
	fmt.Fprintf(b, "\nNext step: %s", p.NextStep)
}

// commandEvidence is how a command ended, its duration, how often the job
// ran it, and the last line of its output.
func commandEvidence(c jobs.Command) string {
	out := c.Status()
	if c.DurationMS != nil {
		out += ", " + (time.Duration(*c.DurationMS) * time.Millisecond).Round(time.Millisecond).String()
	}
	if c.Runs > 1 {
		out += fmt.Sprintf(", run %d times", c.Runs)
	}
	if c.OutputTail != "" {
		lines := strings.Split(c.OutputTail, "\n")
		out += ", output ends: " + lines[len(lines)-1]
	}
	return out
}

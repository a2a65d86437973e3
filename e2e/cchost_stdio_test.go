package e2e

// The real Claude Code as a host that launches `bridge stdio`, registered
// with the block `bridgectl register cursor` prints (Claude Code's
// --mcp-config reads the same mcpServers JSON).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

const (
	stdioStartTool = "mcp__deepseek__deepseek_agent_start"
	stdioPollTool  = "mcp__deepseek__deepseek_agent_poll"
	stdioListTool  = "mcp__deepseek__deepseek_agent_list"
)

// A host session starts a job through `bridge stdio` (which starts the
// daemon itself, as bridgectl start does), polls it, and quits while it runs; the
// job goes on under the daemon; a second session finds it with
// deepseek_agent_list, polls it to done and quotes its nonce.
func TestClaudeCodeStdioHostJobOutlivesItsSession(t *testing.T) {
	jobModel := startDouble(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the double closes
	// The job's model holds its only turn until the first session is gone.
	jobModel.ScriptAnthropic(dt.Func(func(dt.Request) dt.Turn { <-release; return dt.Text("olleh") }))
	envFile, state, root := writeStdioEnv(t, jobModel, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "1000"})
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	mcpConfig := []byte(stdioCtl(t, envFile, "register", "cursor"))
	if !strings.Contains(string(mcpConfig), `"stdio"`) || strings.Contains(string(mcpConfig), testSecret) {
		t.Fatalf("register cursor:\n%s", mcpConfig)
	}

	// Session 1: load the tools, start, poll once, quit.
	var jobID string
	first := dt.New(dt.WithDefault(stdioHostBrain(func(calls []stdioHostCall) dt.Turn {
		switch len(calls) {
		case 0:
			return loadTool(stdioStartTool)
		case 1:
			return dt.ToolCalls(dt.Call(stdioStartTool, map[string]any{"workspace": ws, "task": "reverse the word hello"}))
		case 2:
			return loadTool(stdioPollTool)
		case 3:
			id, _ := stdioPayload(t, calls[1])["job_id"].(string)
			return dt.ToolCalls(dt.Call(stdioPollTool, map[string]any{"job_id": id, "wait_seconds": 1}))
		}
		p := stdioPayload(t, calls[3])
		return dt.Text(fmt.Sprintf("job %v is %v", p["job_id"], p["status"]))
	})))
	t.Cleanup(first.Close)
	r1 := runStdioHost(t, first, mcpConfig, "start a job", stdioStartTool, stdioPollTool)
	if _, err := fmt.Sscanf(r1.Result, "job %s is running", &jobID); err != nil || r1.IsError || !strings.HasSuffix(r1.Result, " is running") {
		t.Fatalf("first session ended with %q (is_error %v); want the job running\n%s", r1.Result, r1.IsError, r1.Output)
	}
	log, _ := os.ReadFile(filepath.Join(state, "bridge.log"))
	if !strings.Contains(string(log), "=== bridgectl start ") || !strings.Contains(string(log), " for bridge stdio pid ") {
		t.Errorf("bridge.log does not show the daemon started for bridge stdio:\n%s", log)
	}

	// The host is gone, and its bridge stdio with it; the job is not.
	if !poll.Until(10*time.Second, func() bool { return len(stdioProcs(envFile)) == 0 }) {
		t.Errorf("bridge stdio outlived its host: %v", stdioProcs(envFile))
	}
	dir := statedir.Dir{Root: state}
	if s, err := jobs.Load(dir, jobID); err != nil || s.Status != jobs.StatusRunning {
		t.Fatalf("job %s after its host quit: %+v, %v; want running", jobID, s.Status, err)
	}

	// Session 2: a new host finds the job in the list and polls it to its end.
	var listedID string
	second := dt.New(dt.WithDefault(stdioHostBrain(func(calls []stdioHostCall) dt.Turn {
		switch len(calls) {
		case 0:
			return loadTool(stdioListTool)
		case 1:
			return dt.ToolCalls(dt.Call(stdioListTool, map[string]any{"status": "running"}))
		case 2:
			var l struct {
				Jobs []struct {
					JobID string `json:"job_id"`
				} `json:"jobs"`
			}
			if json.Unmarshal([]byte(calls[1].Result), &l) == nil && len(l.Jobs) == 1 {
				listedID = l.Jobs[0].JobID
			}
			return loadTool(stdioPollTool)
		case 3: // the job's model answers now, while this session polls
			once.Do(func() { close(release) })
		}
		last := calls[len(calls)-1]
		if last.Name == stdioPollTool {
			p := stdioPayload(t, last)
			if st, _ := p["status"].(string); jobs.Status(st).Final() || len(calls) > 12 {
				return dt.Text(fmt.Sprintf("status %v, nonce %v: %v", p["status"], p["nonce"], p["result"]))
			}
		}
		return dt.ToolCalls(dt.Call(stdioPollTool, map[string]any{"job_id": listedID, "wait_seconds": 20}))
	})))
	t.Cleanup(second.Close)
	r2 := runStdioHost(t, second, mcpConfig, "how is my running job?", stdioListTool, stdioPollTool)
	if listedID != jobID {
		t.Fatalf("the second session's list showed %q, want the first session's job %s\n%s", listedID, jobID, r2.Output)
	}
	snap := assertSnapshotFile(t, dir, jobID, jobs.StatusDone)
	if want := fmt.Sprintf("status done, nonce %s: olleh", snap.Nonce); r2.Result != want || !hexNonce.MatchString(snap.Nonce) {
		t.Fatalf("second session ended with %q, want %q\n%s", r2.Result, want, r2.Output)
	}
	if !poll.Until(10*time.Second, func() bool { return len(stdioProcs(envFile)) == 0 }) {
		t.Errorf("bridge stdio outlived its host: %v", stdioProcs(envFile))
	}
}

// Two hosts launch `bridge stdio` at the same moment with no daemon running:
// one daemon comes up, and the job one host starts is in the other's
// deepseek_agent_list and is the other's to poll — one registry; a reload
// under their feet does not end their sessions.
func TestTwoStdioHostsShareOneRegistry(t *testing.T) {
	jobModel := startDouble(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	jobModel.ScriptAnthropic(dt.Func(func(dt.Request) dt.Turn { <-release; return dt.Text("shared") }))
	envFile, state, root := writeStdioEnv(t, jobModel, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "500"})
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := make([]*mcp.ClientSession, 2)
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); hosts[i] = stdioClient(t, envFile) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a, b := hosts[0], hosts[1]
	ctx := t.Context()
	started := callAgent(t, ctx, a, "deepseek_agent_start", map[string]any{"workspace": ws, "task": "say shared"}, nil)
	id := started.P.JobID
	if started.IsError || id == "" || started.P.Status != string(jobs.StatusRunning) {
		t.Fatalf("start on host A: %+v %s", started.P, started.Text)
	}
	listed, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_list", Arguments: map[string]any{"status": "running"}})
	if err != nil || listed.IsError {
		t.Fatalf("list on host B: %v %+v", err, listed)
	}
	raw, _ := json.Marshal(listed.StructuredContent)
	var list tools.AgentListOutput
	if err := json.Unmarshal(raw, &list); err != nil || list.Total != 1 || len(list.Jobs) != 1 || list.Jobs[0].JobID != id || list.Jobs[0].Workspace != ws {
		t.Fatalf("host B's list does not show host A's running job %s: %s (%v)", id, raw, err)
	}
	seen := callAgent(t, ctx, b, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	if seen.IsError || seen.P.JobID != id || seen.P.Status != string(jobs.StatusRunning) {
		t.Fatalf("host B polls host A's job: %+v %s", seen.P, seen.Text)
	}
	once.Do(func() { close(release) })
	done := pollUntil(t, b, id, 2*time.Minute, func(p tools.AgentJobPayload) bool { return jobs.Status(p.Status).Final() })
	if done.P.Status != string(jobs.StatusDone) || !hexNonce.MatchString(done.P.Nonce) || done.P.Result != "shared" {
		t.Fatalf("host B's last poll: %+v", done.P)
	}
	again := callAgent(t, ctx, a, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	if again.P.Nonce != done.P.Nonce || again.P.Status != string(jobs.StatusDone) {
		t.Fatalf("host A sees %+v, host B saw nonce %s", again.P, done.P.Nonce)
	}
	// A reload under the hosts' feet: their sessions go on with the new daemon.
	stdioCtl(t, envFile, "reload")
	after := callAgent(t, ctx, a, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	if after.IsError || after.P.Nonce != done.P.Nonce {
		t.Fatalf("host A after a reload: %+v %s", after.P, after.Text)
	}
	// One daemon: the lock's holder is the daemon.json every host reached.
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(filepath.Join(state, "daemon.json"), &info); err != nil {
		t.Fatal(err)
	}
	if holder, err := (statedir.Dir{Root: state}).LockHolder(); err != nil || holder != info.PID || info.Socket != filepath.Join(state, "daemon.sock") {
		t.Errorf("lock holder %d (%v), daemon.json %+v", holder, err, info)
	}
}

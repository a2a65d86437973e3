package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const module = "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge"

// build compiles the named packages of this module once per test process
// (testenv.Binary); it skips under -short.
func build(t *testing.T, pkgs map[string]string) map[string]string {
	t.Helper()
	testenv.Real(t, "built binaries")
	out := map[string]string{}
	for name, pkg := range pkgs {
		out[name] = testenv.Binary(t, module+"/"+pkg)
	}
	return out
}

func taskLine(t *testing.T, task string) string {
	b, err := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": task}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestStandin(t *testing.T) {
	bin := build(t, map[string]string{"standin": "bench/standin"})["standin"]

	t.Run("answers at once and records its start", func(t *testing.T) {
		ws := t.TempDir()
		cmd := exec.CommandContext(t.Context(), bin, "-p", "--output-format", "stream-json")
		cmd.Dir, cmd.Env = ws, []string{"BRIDGE_JOB_ID=job1"}
		cmd.Stdin = strings.NewReader(taskLine(t, "do something"))
		before := time.Now()
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		var result struct {
			Type, Subtype, Result string
			IsError               bool `json:"is_error"`
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if err := json.Unmarshal(sc.Bytes(), &result); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			types = append(types, result.Type+"/"+result.Subtype)
		}
		if strings.Join(types, ",") != "system/init,result/success" || result.IsError || result.Result == "" {
			t.Fatalf("lines %v, last %+v", types, result)
		}
		b, err := os.ReadFile(filepath.Join(ws, "standin-job1.start"))
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if st := time.Unix(0, ns); st.Before(before) || st.After(time.Now()) {
			t.Fatalf("start time %v outside [%v, now]", st, before)
		}
	})

	t.Run("sleep ends on SIGTERM without a result", func(t *testing.T) {
		ws := t.TempDir()
		cmd := exec.Command(bin)
		cmd.Dir, cmd.Env = ws, []string{"BRIDGE_JOB_ID=job2"}
		cmd.Stdin = strings.NewReader(taskLine(t, "sleep 60s"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		first, err := br.ReadString('\n') // system/init: it is running and has read nothing yet
		if err != nil || !strings.Contains(first, `"init"`) {
			t.Fatalf("first line %q, %v", first, err)
		}
		// The start file is written before the init line.
		if _, err := os.Stat(filepath.Join(ws, "standin-job2.start")); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(br)
		err = cmd.Wait()
		if err == nil || bytes.Contains(rest, []byte(`"result"`)) {
			t.Fatalf("after SIGTERM: err %v, output %q", err, rest)
		}
	})

	t.Run("refuses a sleep without a duration", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), bin)
		cmd.Dir, cmd.Env = t.TempDir(), []string{"BRIDGE_JOB_ID=job3"}
		cmd.Stdin = strings.NewReader(taskLine(t, "sleep forever"))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "want sleep DURATION") {
			t.Fatalf("err %v, output %q", err, out)
		}
	})
}

// TestRunSmall runs the whole bench, scaled down, against the real binaries.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bridge and runs it (-short)")
	}
	bins := build(t, map[string]string{"bridge": "cmd/bridge", "double": "cmd/deepseek-double", "standin": "bench/standin", "minproxy": "bench/minproxy"})
	o := Options{
		BridgeBin: bins["bridge"], DoubleBin: bins["double"], HarnessBin: bins["standin"], MinProxyBin: bins["minproxy"],
		Concurrency: []int{1, 4}, Warmup: 50 * time.Millisecond, CellDuration: 200 * time.Millisecond, CellMaxRequests: 1000,
		SaturationClients: 8, SaturationDuration: 200 * time.Millisecond,
		PollSamples: 50, SpawnSamples: 3, HeldPolls: 20, HeldWait: 20 * time.Second,
		IdleProcs: 50, JobCPUSamples: 2,
		ProfileDir: t.TempDir(),
	}
	procs := countProcs()
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Flash) != 2 {
		t.Fatalf("%d flash cells, want 2", len(rep.Flash))
	}
	for _, c := range rep.Flash {
		if len(c.MinProxy.Lat) == 0 || c.MinProxy.Errors != 0 || c.MinProxyCPU.MinProxy <= 0 && c.MinProxy.Done > 500 {
			t.Fatalf("cell %d: minimal proxy %d answers, %d errors, CPU %s", c.Clients, len(c.MinProxy.Lat), c.MinProxy.Errors, c.MinProxyCPU.MinProxy)
		}
	}
	for _, c := range append(rep.Flash, rep.Saturation) {
		if len(c.Bridge.Lat) == 0 || len(c.Floor.Lat) == 0 || c.Bridge.Errors+c.Floor.Errors != 0 {
			t.Fatalf("cell %d: %d/%d answers, %d/%d errors", c.Clients, len(c.Bridge.Lat), len(c.Floor.Lat), c.Bridge.Errors, c.Floor.Errors)
		}
		if c.BridgeCPU.Bridge <= 0 && c.Bridge.Done > 500 {
			t.Errorf("cell %d: no bridge CPU over %d calls", c.Clients, c.Bridge.Done)
		}
	}
	if rep.RSSIdle <= 0 || rep.RSSLoadPeak < rep.RSSIdle/2 || rep.GoroutinesBase.Total <= 0 || rep.GoroutinesPeak < rep.GoroutinesBase.Total {
		t.Fatalf("memory/goroutine figures: %+v", rep)
	}
	if len(rep.Poll) != 50 || len(rep.Spawn) != 3 || len(rep.SpawnFloor) != 3 || len(rep.Spawn5000) != 3 || len(rep.SpawnDone) != 3 || rep.JobsStarted != 13 {
		t.Fatalf("agent figures: %d polls, %d/%d/%d/%d spawns, %d jobs", len(rep.Poll), len(rep.Spawn), len(rep.SpawnFloor), len(rep.Spawn5000), len(rep.SpawnDone), rep.JobsStarted)
	}
	if _, err := exec.LookPath("bwrap"); err == nil && len(rep.SpawnBwrapFloor) != 3 {
		t.Errorf("%d stand-ins timed in a bubblewrap of their own, want 3", len(rep.SpawnBwrapFloor))
	}
	if j := rep.JobCPU; j == nil || j.Jobs != 2 || j.Busy < j.Procs+40 || j.Few <= 0 || j.Many <= 0 {
		t.Errorf("CPU per job with and without idle processes: %+v", rep.JobCPU)
	}
	if after := countProcs(); after > procs+25 { // the idle ones are gone (other tests may start a few)
		t.Errorf("%d processes on the machine after the run, %d before: the idle ones were left", after, procs)
	}
	// The bridge's own account of every start, read from its log.
	if len(rep.Stages) != 3 || len(rep.Stages5000) != 3 {
		t.Fatalf("spawn stages of %d and %d jobs, want 3 and 3", len(rep.Stages), len(rep.Stages5000))
	}
	for _, s := range append(rep.Stages, rep.Stages5000...) {
		if s.AcceptedToSpawned <= 0 || s.Prepare <= 0 || s.Spawn <= 0 || s.AcceptedToSpawned < s.Prepare || s.Spawned.Before(s.Sent) || s.Running.Before(s.Spawned) {
			t.Errorf("spawn stages out of order: %+v", s)
		}
	}
	h := rep.Held
	if h.Polls != 20 || h.Held != 20 || h.Cancelled != 20 || h.Failed != 0 || h.GoroutinesHeld <= h.GoroutinesBefore.Total {
		t.Fatalf("held polls: %+v", h)
	}
	if rep.BridgeExit != "exit status 0" {
		t.Fatalf("bridge serve ended %q on SIGTERM", rep.BridgeExit)
	}
	if len(rep.Profiles) != 4 { // CPU at the highest concurrency and during the jobs among idle processes, heap and goroutines held
		t.Fatalf("profiles %v, want 4", rep.Profiles)
	}
	for _, p := range rep.Profiles {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", p, err)
		}
	}
	var table bytes.Buffer
	rep.Text(&table)
	for _, want := range []string{"deepseek_flash p99, 4 client(s)", "held long-polls", "20 / 20 of 20",
		"CPU per call of the proxy process, 4 client(s)", "calls/s, 1 client(s)", "spawn inside the bridge", "secret-file walk", "spawned → harness running"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

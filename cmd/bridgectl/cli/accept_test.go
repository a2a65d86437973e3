package cli

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// accept says what is missing before it starts a job: a task it does not
// know, a daemon that does not run, roots that would refuse every workspace.
func TestAcceptPreconditions(t *testing.T) {
	te := newTestEnv(t)
	if _, errs, code := te.run("accept", "--only", "D"); code != 2 || !strings.Contains(errs, `accept --only "D": want A, B or C`) {
		t.Errorf("--only D: exit %d %s", code, errs)
	}
	if _, errs, code := te.run("accept"); code != 1 || !strings.Contains(errs, "no running daemon answers: `bridgectl start` first") {
		t.Errorf("no daemon: exit %d %s", code, errs)
	}
	te.must("start")
	if _, errs, code := te.run("accept", "--only", "a"); code != 1 || !strings.Contains(errs, "the daemon has no allowed roots") || !strings.Contains(errs, "`bridgectl allow DIR` first") {
		t.Errorf("no roots: exit %d %s", code, errs)
	}
}

// Task B without python3 fails with what to install, before any job starts.
func TestAcceptNamesAMissingPython(t *testing.T) {
	te := newTestEnv(t)
	for i, kv := range te.environ {
		if strings.HasPrefix(kv, "PATH=") {
			te.environ[i] = "PATH=" + te.pathDir // no python3 there
		}
	}
	te.must("allow", t.TempDir())
	te.must("start")
	out, errs, code := te.run("accept", "--only", "B")
	if code != 1 || !strings.Contains(out, "FAIL B (run a failing script, fix it, run it again): python3 is not installed here") || !strings.Contains(out, "sudo apt-get install python3") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// A loopback model endpoint is named, whichever of the two it is; a remote one is not.
func TestAcceptKnowsALoopbackModel(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		want string
	}{
		{"the real API", []string{"https://api.deepseek.com", "https://api.deepseek.com/anthropic"}, ""},
		{"127.0.0.1", []string{"http://127.0.0.1:8788"}, "http://127.0.0.1:8788"},
		{"anywhere in 127/8", []string{"https://api.deepseek.com", "http://127.9.9.9/anthropic"}, "http://127.9.9.9"},
		{"::1", []string{"http://[::1]:9000/v1"}, "http://[::1]:9000"},
		{"localhost", []string{"http://LocalHost:9000"}, "http://LocalHost:9000"},
		{"credentials left out", []string{"http://user:pw@127.0.0.1:1"}, "http://127.0.0.1:1"},
		{"a LAN address is not loopback", []string{"http://192.168.1.2:8000"}, ""},
		{"a name that only starts like one", []string{"https://localhost.example.com"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loopbackModel(tt.urls...); got != tt.want {
				t.Errorf("loopbackModel(%q) = %q, want %q", tt.urls, got, tt.want)
			}
		})
	}
}

// Against the project's DeepSeek double (a loopback URL) accept says, before
// and after the run, that its results are no verdict on DeepSeek; against
// the default API it says nothing of the kind.
func TestAcceptSaysALoopbackRunIsNoVerdict(t *testing.T) {
	double := deepseektest.New(deepseektest.WithKey(testKey))
	t.Cleanup(double.Close)
	for _, tt := range []struct {
		name  string
		extra []string
		note  bool
	}{
		{"the double", []string{"DEEPSEEK_BASE_URL=" + double.URL()}, true},
		{"the default API", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, tt.extra...)
			for i, kv := range te.environ {
				if strings.HasPrefix(kv, "PATH=") {
					te.environ[i] = "PATH=" + te.pathDir // no python3: task B stops before a job
				}
			}
			te.must("allow", t.TempDir())
			te.must("start")
			out, errs, code := te.run("accept", "--only", "B")
			if code != 1 {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			host := strings.TrimPrefix(double.URL(), "http://")
			for _, want := range []string{
				"note: the model endpoint http://" + host + " is a loopback address: a local double or proxy answers there, not DeepSeek, so this run is no verdict on DeepSeek (the project's double is chat-only and cannot pass",
				"0 of 1 passed; total cost $0.0000\nnot a verdict on DeepSeek: the model answered from http://" + host + ", a loopback address\n",
			} {
				if got := strings.Contains(out, want); got != tt.note {
					t.Errorf("output has %q: %v, want %v\n%s", want, got, tt.note, out)
				}
			}
			if !tt.note && strings.Contains(out, "verdict") {
				t.Errorf("a remote endpoint is called no verdict:\n%s", out)
			}
		})
	}
}

package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `doctor` says why the clock was not compared.
func TestDoctorSaysWhyTheClockWasNotCompared(t *testing.T) {
	noDate := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http adds one otherwise
		fmt.Fprint(w, `{"object":"list","data":[]}`)
	}))
	tests := []struct {
		name  string
		setup func(te *testEnv)
		want  string
	}{
		{"no key", func(te *testEnv) { te.dropEnvLine("DEEPSEEK_API_KEY=") }, "WARN clock: not compared: the API was not asked (no DEEPSEEK_API_KEY)"},
		{"refused", func(te *testEnv) { te.appendEnv("DEEPSEEK_BASE_URL=http://127.0.0.1:1") }, "WARN clock: not compared: the API at http://127.0.0.1:1 could not be reached"},
		{"no Date header", func(te *testEnv) { te.appendEnv("DEEPSEEK_BASE_URL=" + noDate) }, "WARN clock: not compared: the API gave no Date header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t)
			tt.setup(te)
			out, _, _ := te.run("doctor")
			if !strings.Contains(out, tt.want) {
				t.Errorf("doctor lacks %q:\n%s", tt.want, out)
			}
			if tt.name != "no Date header" && strings.Contains(out, "no Date header") {
				t.Errorf("doctor blames a Date header the API never sent:\n%s", out)
			}
		})
	}
}

// doctor names a .env whose directory is missing without telling the user
// to fix a value in it.
func TestDoctorEnvFileInAMissingDir(t *testing.T) {
	te := newTestEnv(t)
	path := filepath.Join(te.dir, "nodir", "x.env")
	out, _, code := te.run("--env", path, "doctor", "--dry")
	if code != 1 || !strings.Contains(out, "FAIL config: env file "+path+": its directory") || strings.Contains(out, "fix it in") {
		t.Errorf("doctor --env in a missing dir: exit %d\n%s", code, out)
	}
}

// doctor prints a WARN line for each configured root that holds a directory
// on the daemon's PATH — bridgectl's own while no daemon runs, the running
// daemon's once one does (also one that does not exist yet) — and still
// finds the roots OK.
func TestDoctorWarnsAboutRootsHoldingDaemonPathDirs(t *testing.T) {
	te := newTestEnv(t)
	dirs := te.mkdirs("projects/a/.venv/bin", "projects/plain")
	venvA, plain := dirs[0], dirs[1]
	projA := filepath.Dir(filepath.Dir(venvA))
	te.appendEnv("DEEPSEEK_ALLOWED_ROOTS=" + projA + string(os.PathListSeparator) + plain)
	te.setBridgectlPath(venvA, "/usr/bin", "/bin")

	out, _, _ := te.run("doctor", "--dry")
	if want := "WARN allowed root " + projA + ": " + pathWarned(venvA, ownPath) + "\n"; !strings.Contains(out, want) {
		t.Errorf("doctor lacks\n%s\n%s", want, out)
	}
	if strings.Count(out, "a job in this root could write") != 1 || !strings.Contains(out, "OK   allowed roots: "+projA+", "+plain) {
		t.Errorf("doctor, bridgectl's PATH holding %s:\n%s", venvA, out)
	}

	te.must("start")
	later := filepath.Join(plain, "later", "bin")
	te.setDaemonPath(later + string(os.PathListSeparator) + "/usr/bin")
	out, _, _ = te.run("doctor", "--dry")
	if want := "WARN allowed root " + plain + ": " + pathWarned(later, daemonPath) + "\n"; !strings.Contains(out, want) {
		t.Errorf("doctor lacks\n%s\n%s", want, out)
	}
	if strings.Count(out, "a job in this root could write") != 1 || !strings.Contains(out, "OK   allowed roots: ") {
		t.Errorf("doctor, the daemon's PATH holding %s:\n%s", later, out)
	}
}

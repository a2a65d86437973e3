package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A TypeScript bridge owner's ./.env is not read silently: doctor says so and
// offers --move-env, which moves it to the per-user .env (mode 0600); it
// never overwrites a per-user .env that exists.
func TestDoctorOffersToMoveALocalEnv(t *testing.T) {
	te := newTestEnv(t)
	te.unset("BRIDGE_ENV_FILE")
	proj := filepath.Join(te.dir, "ts-bridge")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "MCP_PATH_SECRET=" + testSecret + "\nBRIDGE_STATE_DIR=" + te.state + "\n# mine\n"
	local := filepath.Join(proj, ".env")
	if err := os.WriteFile(local, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	perUser := filepath.Join(te.home, ".config", "deepseek-mcp-bridge", ".env")

	out, _, _ := te.run("doctor", "--dry")
	if !strings.Contains(out, "WARN local .env: "+local+" is not read: the bridge reads "+perUser) || !strings.Contains(out, "bridgectl doctor --move-env") {
		t.Fatalf("doctor does not offer the move:\n%s", out)
	}
	if _, errs, _ := te.run("status"); !strings.Contains(errs, local+" is not read") {
		t.Errorf("status does not say ./.env is not read: %q", errs)
	}

	out, _, _ = te.run("doctor", "--dry", "--move-env")
	if !strings.Contains(out, "moved "+local+" to "+perUser) {
		t.Fatalf("doctor --move-env:\n%s", out)
	}
	b, err := os.ReadFile(perUser)
	fi, serr := os.Stat(perUser)
	if err != nil || string(b) != content || serr != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("per-user .env after the move: %q %v, mode %v", b, err, fi.Mode().Perm())
	}
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("./.env is still there: %v", err)
	}
	if out, _, _ := te.run("doctor", "--dry"); strings.Contains(out, "local .env") || !strings.Contains(out, "OK   env file: "+perUser) {
		t.Errorf("doctor after the move:\n%s", out)
	}

	// A second ./.env does not overwrite the per-user one.
	if err := os.WriteFile(local, []byte("MCP_PATH_SECRET=other-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, code := te.run("doctor", "--move-env")
	if code != 1 || !strings.Contains(errs, perUser+" exists already: merge") {
		t.Errorf("move over an existing per-user .env: exit %d %q", code, errs)
	}
	if b, _ := os.ReadFile(perUser); string(b) != content {
		t.Errorf("the per-user .env was overwritten: %q", b)
	}
}

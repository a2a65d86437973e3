package sandbox

import (
	"encoding/json"
	"errors"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestClaudeSettingsShape(t *testing.T) {
	deny := DefaultDenyRead("/home/u", "/home/u/.local/state/bridge", "/home/u/bridge/.env")
	s := ClaudeSettings(SettingsOptions{
		Sandbox:   true,
		DenyRead:  deny,
		DenyWrite: []string{"/home/u/.local/state/bridge", "/home/u/bridge/.env"},
	})
	// Round-trip through JSON: that is what the harness writes to --settings.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Sandbox struct {
			Enabled                  *bool `json:"enabled"`
			FailIfUnavailable        *bool `json:"failIfUnavailable"`
			AutoAllowBashIfSandboxed *bool `json:"autoAllowBashIfSandboxed"`
			AllowUnsandboxedCommands *bool `json:"allowUnsandboxedCommands"`
			Filesystem               struct {
				DenyRead  []string `json:"denyRead"`
				DenyWrite []string `json:"denyWrite"`
			} `json:"filesystem"`
			Network struct {
				AllowedDomains  []string `json:"allowedDomains"`
				StrictAllowlist bool     `json:"strictAllowlist"`
			} `json:"network"`
			Credentials struct {
				EnvVars []struct{ Name, Mode string } `json:"envVars"`
			} `json:"credentials"`
		} `json:"sandbox"`
		Permissions struct {
			Ask                          []string `json:"ask"`
			Deny                         []string `json:"deny"`
			DisableBypassPermissionsMode string   `json:"disableBypassPermissionsMode"`
		} `json:"permissions"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	sb := got.Sandbox
	for name, v := range map[string]*bool{"enabled": sb.Enabled, "failIfUnavailable": sb.FailIfUnavailable} {
		if v == nil || !*v {
			t.Errorf("sandbox.%s = %v, want true", name, v)
		}
	}
	for name, v := range map[string]*bool{"autoAllowBashIfSandboxed": sb.AutoAllowBashIfSandboxed, "allowUnsandboxedCommands": sb.AllowUnsandboxedCommands} {
		if v == nil || *v {
			t.Errorf("sandbox.%s = %v, want an explicit false", name, v)
		}
	}
	if !reflect.DeepEqual(sb.Filesystem.DenyRead, deny) {
		t.Errorf("denyRead = %v, want %v", sb.Filesystem.DenyRead, deny)
	}
	if len(sb.Filesystem.DenyWrite) != 2 {
		t.Errorf("denyWrite = %v", sb.Filesystem.DenyWrite)
	}
	if sb.Network.AllowedDomains == nil || len(sb.Network.AllowedDomains) != 0 || !sb.Network.StrictAllowlist {
		t.Errorf("network = %+v, want no domains and a strict allowlist", sb.Network)
	}
	if !strings.Contains(string(b), `"allowedDomains":[]`) {
		t.Errorf("allowedDomains must be an explicit empty list: %s", b)
	}
	var envs []string
	for _, e := range sb.Credentials.EnvVars {
		if e.Mode != "deny" {
			t.Errorf("env %s mode %q, want deny", e.Name, e.Mode)
		}
		envs = append(envs, e.Name)
	}
	if !slices.Contains(envs, "ANTHROPIC_AUTH_TOKEN") || !slices.Contains(envs, "DEEPSEEK_API_KEY") {
		t.Errorf("credentials.envVars = %v", envs)
	}
	for _, tool := range []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS", "Bash", "WebFetch", "WebSearch"} {
		if !slices.Contains(got.Permissions.Ask, tool) {
			t.Errorf("permissions.ask lacks %s: %v", tool, got.Permissions.Ask)
		}
	}
	if !slices.Equal(got.Permissions.Deny, DeniedTools) || !slices.Contains(got.Permissions.Deny, "EnterWorktree") {
		t.Errorf("permissions.deny = %v, want the denied tools %v and nothing else unless asked for", got.Permissions.Deny, DeniedTools)
	}
	if got.Permissions.DisableBypassPermissionsMode != "disable" {
		t.Errorf("disableBypassPermissionsMode = %q", got.Permissions.DisableBypassPermissionsMode)
	}

	off := ClaudeSettings(SettingsOptions{Sandbox: false, FileToolDenyRules: true, DenyWrite: []string{"/s"}})
	if off["sandbox"].(map[string]any)["enabled"] != false {
		t.Errorf("BRIDGE_SANDBOX=off must give sandbox.enabled=false: %v", off["sandbox"])
	}
	wantDeny := append(slices.Clone(DeniedTools), "Read(//s)", "Read(//s/**)", "Edit(//s)", "Edit(//s/**)")
	if d := off["permissions"].(map[string]any)["deny"]; !reflect.DeepEqual(d, wantDeny) {
		t.Errorf("permissions.deny = %v, want %v", d, wantDeny)
	}
}

func TestDefaultDenyRead(t *testing.T) {
	got := DefaultDenyRead("/home/u", "/var/state/", "/opt/bridge/.env")
	for _, want := range []string{"/var/state", "/opt/bridge/.env", "/home/u/.ssh", "/home/u/.aws", "/home/u/.config/gcloud",
		"/home/u/.docker", "/home/u/.netrc", "/home/u/.kube", "/home/u/.gnupg", "/home/u/.npmrc", "/home/u/.pypirc",
		"/home/u/.git-credentials", "/home/u/.config/gh", "/home/u/.azure"} {
		if !slices.Contains(got, want) {
			t.Errorf("DefaultDenyRead lacks %s", want)
		}
	}
	if got := DefaultDenyRead("", "", ""); len(got) != 0 {
		t.Errorf("DefaultDenyRead with nothing = %v", got)
	}
}

func TestAvailable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("bubblewrap is Linux only")
	}
	// look is a PATH of one dir, the way the daemon's is without the dirs a
	// job can write.
	lookIn := func(dir string) func(string) (string, error) {
		return func(name string) (string, error) { return exec.LookPath(filepath.Join(dir, name)) }
	}
	_, err := Available(lookIn(t.TempDir()))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap socat") || !strings.Contains(err.Error(), "BRIDGE_SANDBOX=off") {
		t.Fatalf("Available(missing) = %v, want ErrUnavailable with an install hint", err)
	}
	// A bwrap that exists but cannot sandbox.
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "bwrap"), []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755))
	if socat, err := exec.LookPath("socat"); err == nil {
		must(t, os.Symlink(socat, filepath.Join(dir, "socat")))
		if _, err := Available(lookIn(dir)); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Permission denied") {
			t.Fatalf("Available(broken bwrap) = %v", err)
		}
	}
	// The real one, installed by scripts/install.sh on this machine.
	bw := testenv.Bwrap(t)
	if _, err := exec.LookPath("socat"); err != nil {
		t.Fatal("socat is not installed: run scripts/install.sh apt")
	}
	if got, err := Available(exec.LookPath); err != nil || got != bw {
		t.Fatalf("Available = %q, %v; want %s", got, err, bw)
	}
}

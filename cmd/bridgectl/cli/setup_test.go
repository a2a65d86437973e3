package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

const newKey = "sk-test-setup-new-key"

// setupDouble is a double accepting key only, with a balance of total CNY.
func setupDouble(t *testing.T, key, total string) *deepseektest.Server {
	d := deepseektest.New(deepseektest.WithKey(key), deepseektest.WithBalance(total))
	t.Cleanup(d.Close)
	return d
}

// A key the API rejects, or one with an empty balance, is named in a clear
// line and not written; the .env stays byte for byte.
func TestSetupRefusesABadKey(t *testing.T) {
	for _, tt := range []struct {
		name, doubleKey, balance, want string
	}{
		{"rejected", "sk-some-other-key", "110.00", "key: rejected by "},
		{"empty balance", newKey, "0.00", "key: accepted, but the balance is empty: every call would fail with 402 — top up at platform.deepseek.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := setupDouble(t, tt.doubleKey, tt.balance)
			te := newTestEnv(t, "DEEPSEEK_BASE_URL="+d.URL())
			before, _ := os.ReadFile(te.envFile)
			out, errs, code := te.runIn(strings.NewReader(newKey+"\n"), "setup", "--yes", "--key-stdin")
			if code == 0 || !strings.Contains(out, tt.want) || !strings.Contains(errs, "key: not written") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if after, _ := os.ReadFile(te.envFile); string(after) != string(before) {
				t.Errorf(".env changed:\n%s", after)
			}
			if strings.Contains(out+errs, newKey) {
				t.Error("setup printed the key")
			}
		})
	}
}

// setup --yes takes its answers from flags and stdin, keeps every comment and
// unknown line of the .env, never prints the key, and prints the secret only
// with --show.
func TestSetupScripted(t *testing.T) {
	d := setupDouble(t, newKey, "110.00")
	te := newTestEnv(t, "DEEPSEEK_BASE_URL="+d.URL())
	root := t.TempDir()
	out, errs, _ := te.runIn(strings.NewReader(newKey+"\n"), "setup", "--yes", "--key-stdin", "--roots", root, "--approval", "off", "--show")
	for _, want := range []string{"key: accepted by " + d.URL() + ", balance 110.00 CNY", "secret: MCP_PATH_SECRET kept", "secret: " + testSecret, "roots: " + root, "approval: off", "-- claude:", "doctor:"} {
		if !strings.Contains(out, want) {
			t.Errorf("setup lacks %q:\nstdout:\n%s\nstderr:\n%s", want, out, errs)
		}
	}
	if strings.Contains(out+errs, newKey) {
		t.Error("setup printed the key")
	}
	b, err := os.ReadFile(te.envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, want := range []string{"# bridge settings for a test\nDEEPSEEK_API_KEY=" + newKey + "\n# the capability secret\nMCP_PATH_SECRET=" + testSecret + "\n",
		"UNKNOWN_SETTING=kept as is # with a comment\n", "DEEPSEEK_ALLOWED_ROOTS=" + root + "\n", "BRIDGE_CC_APPROVAL=off\n"} {
		if !strings.Contains(env, want) {
			t.Errorf(".env lacks %q:\n%s", want, env)
		}
	}

	// Without --show the secret is masked; the current key is kept.
	out, errs, _ = te.run("setup", "--yes")
	if strings.Contains(out+errs, testSecret) || strings.Contains(out+errs, newKey) || !strings.Contains(out, "secret: MCP_PATH_SECRET kept") {
		t.Errorf("second run:\n%s%s", out, errs)
	}

	// Neither a terminal nor --yes: say how to script it.
	if _, errs, code := te.run("setup"); code != 2 || !strings.Contains(errs, "stdin is not a terminal — answer with flags and --yes") {
		t.Errorf("setup without a terminal: exit %d %s", code, errs)
	}
}

// --systemd writes a user unit that runs this bridgectl on this .env;
// --tunnel quick starts the tunnel after the daemon.
func TestSetupSystemdAndQuickTunnel(t *testing.T) {
	d := setupDouble(t, testKey, "110.00")
	te := newTestEnv(t, "DEEPSEEK_BASE_URL="+d.URL(), "FAKE_CLOUDFLARED_PROXY_FILE="+t.TempDir()+"/proxy")
	out, errs, _ := te.run("setup", "--yes", "--systemd", "--tunnel", "quick")
	unit := te.home + "/.config/systemd/user/deepseek-bridge.service"
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatalf("no unit: %v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
	}
	if want := "ExecStart=" + te.dir + "/no-such-bridgectl --env " + te.envFile + " start --foreground\n"; !strings.Contains(string(b), want) || !strings.Contains(string(b), "WantedBy=default.target") {
		t.Errorf("unit lacks %q:\n%s", want, b)
	}
	if !strings.Contains(out, "systemd: wrote "+unit) || !strings.Contains(out, "systemctl --user daemon-reload && systemctl --user enable --now deepseek-bridge") {
		t.Errorf("setup does not say how to enable the unit:\n%s", out)
	}
	if !strings.Contains(out, "public endpoint: https://") || !strings.Contains(out, ".trycloudflare.com/mcp/test…") {
		t.Errorf("no quick tunnel:\n%s\n%s", out, errs)
	}
}

// --claude install runs the project's scripts/install.sh claude of the
// checkout the bridge binary is in, and then finds the pinned install.
func TestSetupInstallsClaudeWithTheProjectScript(t *testing.T) {
	d := setupDouble(t, testKey, "110.00")
	checkout := t.TempDir()
	for _, dir := range []string{"bin", "scripts"} {
		if err := os.Mkdir(filepath.Join(checkout, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(fakeBridge(t), filepath.Join(checkout, "bin", "bridge")); err != nil {
		t.Fatal(err)
	}
	// The stand-in script does what the real one does for `claude`: the
	// pinned binary at .cache/bin/claude of the checkout.
	script := "#!/bin/sh\nset -e\n[ \"$1\" = claude ]\ncd \"$(dirname \"$0\")/..\"\nmkdir -p .cache/bin\n" +
		"printf '#!/bin/sh\\necho \"2.1.328 (Claude Code)\"\\n' > .cache/bin/claude\nchmod +x .cache/bin/claude\necho installed the stand-in\n"
	if err := os.WriteFile(filepath.Join(checkout, "scripts", "install.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	te := newTestEnv(t, "DEEPSEEK_BASE_URL="+d.URL(), "BRIDGE_BIN="+filepath.Join(checkout, "bin", "bridge"))
	out, errs, _ := te.run("setup", "--yes", "--claude", "install")
	pinned := filepath.Join(checkout, "bin", "..", ".cache", "bin", "claude")
	for _, want := range []string{"claude: running " + filepath.Join(checkout, "scripts", "install.sh") + " claude", "installed the stand-in",
		"claude: 2.1.328 (Claude Code) (" + pinned + ", the project's pinned install)"} {
		if !strings.Contains(out, want) {
			t.Errorf("setup lacks %q:\nstdout:\n%s\nstderr:\n%s", want, out, errs)
		}
	}
}

// setup writes the base URL it probed the key on into the .env, so every
// later start uses that endpoint; when the API cannot be reached (a closed
// loopback port) it writes nothing, unless --keep-unprobed keeps the key and
// goes on with the other steps.
func TestSetupBaseURL(t *testing.T) {
	d := setupDouble(t, newKey, "110.00")
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) // nothing listens there
	for _, tt := range []struct {
		name, base string
		extra      []string
		wantOut    []string
		wantEnv    string // "" : the .env is unchanged
	}{
		{"probed", d.URL(), nil, []string{"key: accepted by " + d.URL() + ", balance 110.00 CNY", "doctor:"}, "DEEPSEEK_BASE_URL=" + d.URL() + "\n"},
		{"unreachable", closed, nil, []string{"key: cannot reach " + closed}, ""},
		{"unreachable, kept", closed, []string{"--keep-unprobed"}, []string{"key: cannot reach " + closed, "key: kept unprobed, with DEEPSEEK_BASE_URL=" + closed, "roots: ", "doctor:"}, "DEEPSEEK_BASE_URL=" + closed + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t)
			before, _ := os.ReadFile(te.envFile)
			out, errs, _ := te.runIn(strings.NewReader(newKey+"\n"), append([]string{"setup", "--yes", "--key-stdin", "--base-url", tt.base + "/"}, tt.extra...)...)
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("setup lacks %q:\nstdout:\n%s\nstderr:\n%s", want, out, errs)
				}
			}
			after, _ := os.ReadFile(te.envFile)
			if tt.wantEnv == "" {
				if string(after) != string(before) || !strings.Contains(errs, "key: not written") || !strings.Contains(errs, "--keep-unprobed") {
					t.Errorf(".env changed, or no advice:\n%s\nstderr:\n%s", after, errs)
				}
				return
			}
			// Byte for byte: the old lines with the key replaced, the base URL added.
			if want := strings.Replace(string(before), "DEEPSEEK_API_KEY="+testKey, "DEEPSEEK_API_KEY="+newKey, 1) + tt.wantEnv; string(after) != want {
				t.Errorf(".env:\n%s\nwant:\n%s", after, want)
			}
			if strings.Contains(out+errs, newKey) {
				t.Error("setup printed the key")
			}
		})
	}
}

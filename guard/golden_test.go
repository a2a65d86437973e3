package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/prepare/*")

// goldenJob is the job id of every golden case.
const goldenJob = "0123456789abcdef0123456789abcdef"

// goldenWorkspace is the fixture workspace: secret files (one under a
// directory whose name holds glob characters), a template, deny_paths
// targets for a literal entry, a relative glob, a glob of any depth and an
// absolute glob, what runs later (a git dir with config, hooks and info, rc
// files, a hook dir, one under the glob-named directory), and write_paths
// targets.
var goldenWorkspace = map[string]string{
	".env":                  "KEY=test-secret-0123456789abcdef\n",
	"sub/.env.local":        "KEY=test-secret-0123456789abcdef\n",
	".env.example":          "KEY=\n",
	"app/[slug]/.env":       "KEY=test-secret-0123456789abcdef\n",
	"app/[slug]/page.tsx":   "export default 1\n",
	"app/[slug]/.npmrc":     "fund=false\n",
	"main.go":               "package main\n",
	"private/notes.txt":     "private\n",
	"secrets/key.txt":       "key\n",
	"secrets/sub/deep.txt":  "deep\n",
	"a.pem":                 "pem\n",
	"src/b.pem":             "pem\n",
	"src/ok.go":             "package src\n",
	"gen/x.key":             "key\n",
	"gen/y.txt":             "y\n",
	".git/HEAD":             "ref: refs/heads/main\n",
	".git/config":           "[core]\n",
	".git/hooks/pre-commit": "#!/bin/sh\n",
	".git/info/exclude":     "\n",
	".git/objects/.keep":    "",
	".git/refs/heads/.keep": "",
	".npmrc":                "fund=false\n",
	".vscode/settings.json": "{}\n",
	".vscode/tasks.json":    "{}\n",
	"out/old.txt":           "old\n",
	"out/sub/.keep":         "", // exists before the job: the jail creates no write_paths dir while the runs-later walk counts
	"build/.keep":           "",
}

// goldenCase is one guard and one job: the golden files in
// testdata/prepare/<name> are what Prepare wrote for them.
type goldenCase struct {
	name     string
	env      map[string]string // the guard's config, over the fixture's
	jail     bool              // bubblewrap found: the job runs in a jail
	runtime  bool              // BRIDGE_RUNTIME_ROOTS: the home's .cargo, which holds a credential store
	denyAbs  bool              // deny_paths adds an absolute literal path outside the workspace and an absolute glob
	floor    *policy.Policy
	caller   *policy.Policy
	noPolicy bool
}

var goldenCases = []goldenCase{
	{name: "jailed-policy", jail: true, runtime: true, denyAbs: true,
		caller: &policy.Policy{DenyPaths: []string{"private", "secrets/**", "**/*.pem"}, WritePaths: []string{"out/**", "build/*.txt"}}},
	{name: "floor-and-caller-write-paths", jail: true,
		floor:  &policy.Policy{WritePaths: []string{"out/**"}, DenyPaths: []string{"secrets/**"}},
		caller: &policy.Policy{WritePaths: []string{"out/sub/**", "src/**"}, DenyPaths: []string{"private"}}},
	{name: "read-only-no-jail", caller: &policy.Policy{WritePaths: []string{}, DenyPaths: []string{"a.pem"}}},
	{name: "sandbox-off-approval-off", env: map[string]string{"BRIDGE_SANDBOX": "off", "BRIDGE_CC_APPROVAL": "off"}, noPolicy: true},
}

// Prepare writes, for the same guard, job and workspace, the same bytes:
// the approval config, the MCP config, the settings, the record of what
// runs later, the start record of the job's changes (but its time and git's
// answer), the jail's arguments (but the host's system dirs) and the spec's
// fields. The fixture covers every source of a path on a deny, hide or
// protect list. Rewrite with -update after a reviewed change.
func TestPrepareGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := runGoldenCase(t, tc)
			dir := filepath.Join("testdata", "prepare", tc.name)
			if *updateGolden {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, b := range got {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("%v (run with -update to write the golden files)", err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			var gotNames []string
			for name := range got {
				gotNames = append(gotNames, name)
			}
			slices.Sort(gotNames)
			if !slices.Equal(names, gotNames) {
				t.Errorf("golden files %v, written %v", names, gotNames)
			}
			for _, name := range gotNames {
				want, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Error(err)
					continue
				}
				if !bytes.Equal(got[name], want) {
					t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, filepath.Join(dir, name), got[name], want)
				}
			}
		})
	}
}

// runGoldenCase builds the fixture under a fresh base dir, runs Prepare and
// returns the files it wrote with the base dir written as $BASE.
func runGoldenCase(t *testing.T, tc goldenCase) map[string][]byte {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	ws := filepath.Join(root, "ws")
	home := filepath.Join(base, "home")
	env := filepath.Join(base, "daemon", ".env")
	claude := filepath.Join(base, "claude", "bin", "claude")
	stamp := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):         "key\n",
		filepath.Join(home, ".cargo", "credentials.toml"): "token\n",
		filepath.Join(home, ".cargo", "bin", "cargo"):     "#!/bin/sh\n",
		env:    "BRIDGE_LOG_LEVEL=debug\n",
		claude: "#!/bin/sh\n",
	}
	for rel, body := range goldenWorkspace {
		files[filepath.Join(ws, filepath.FromSlash(rel))] = body
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{
		"BRIDGE_STATE_DIR":           filepath.Join(base, "state"),
		"DEEPSEEK_ALLOWED_ROOTS":     root,
		"BRIDGE_APPROVAL_TIMEOUT_MS": "60000",
		"BRIDGE_APPROVE_ALLOW":       "ls,cat,echo",
	}
	if tc.runtime {
		vars["BRIDGE_RUNTIME_ROOTS"] = filepath.Join(home, ".cargo")
	}
	cfg := configtest.New(t, mergeMaps(vars, tc.env))
	cfg.EnvFile = env
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Config: cfg, Dir: dir, Exe: "/opt/bridge/bin/bridge", HarnessBin: claude, Home: home,
		SandboxAvailable: func() (string, error) { return "/usr/bin/bwrap", nil }, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !tc.jail {
		g.bwrap = ""
	} else if g.bwrap == "" {
		t.Skip("no jail off Linux")
	}
	spec := harness.Spec{JobID: goldenJob, Workspace: ws, ConfigDir: dir.HarnessDir(goldenJob)}
	if !tc.noPolicy {
		var floor, caller policy.Policy
		if tc.floor != nil {
			floor = *tc.floor
		}
		if tc.caller != nil {
			caller = *tc.caller
		}
		if tc.denyAbs {
			caller.DenyPaths = append(slices.Clone(caller.DenyPaths), filepath.Join(base, "outside", "secret.txt"), filepath.Join(ws, "gen", "*.key"))
		}
		floorFile := ""
		if tc.floor != nil {
			floorFile = "/etc/bridge/floor.json"
		}
		e := policy.Merge(floor, caller, floorFile)
		spec.Policy = &e
	}
	if err := g.Prepare(t.Context(), &spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spec.CloseWrapFiles)

	out := map[string][]byte{}
	hd := dir.HarnessDir(goldenJob)
	for _, name := range []string{approvalConfigFile, mcpConfigFile, settingsFile, baselineFile} {
		b, err := os.ReadFile(filepath.Join(hd, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	// The child's config names the service by a port and the job by a
	// token, both new each run; the service's own config of the job is
	// what decides.
	svc := g.ApprovalService()
	child, err := prompt.LoadChildConfig(filepath.Join(hd, approvalConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	out[approvalConfigFile] = bytes.ReplaceAll(bytes.ReplaceAll(out[approvalConfigFile], []byte(child.Token), []byte("$TOKEN")), []byte(svc.URL()), []byte("$URL"))
	jobCfg, ok := svc.Config(goldenJob)
	if !ok {
		t.Fatal("the job is not registered with the approval service")
	}
	svcFile := filepath.Join(t.TempDir(), "approval-service.json")
	if err := prompt.WriteConfig(svcFile, jobCfg); err != nil {
		t.Fatal(err)
	}
	if out["approval-service.json"], err = os.ReadFile(svcFile); err != nil {
		t.Fatal(err)
	}
	out["changes-record.json"] = goldenRecord(t, dir.ChangesDir(goldenJob))
	var sb strings.Builder
	fmt.Fprintf(&sb, "SettingsFile %s\nMCPConfigFile %s\nPermissionPromptTool %s\nPermissionMode %s\nAllowedTools %q\n",
		spec.SettingsFile, spec.MCPConfigFile, spec.PermissionPromptTool, spec.PermissionMode, spec.AllowedTools)
	for _, f := range spec.WrapFiles {
		fmt.Fprintf(&sb, "WrapFile %s\n", f.Name())
	}
	out["spec.txt"] = []byte(sb.String())
	if len(spec.Wrap) > 0 {
		out["wrap.txt"] = []byte(strings.Join(goldenWrap(t, spec.Wrap, filepath.Join(spec.ConfigDir, jailTmpDir)), "\n") + "\n")
	}
	for name, b := range out {
		out[name] = bytes.ReplaceAll(b, []byte(base), []byte("$BASE"))
	}
	return out
}

// goldenRecord is the start record of the job's changes without its time
// and git's answer (the fixture's .git is a git dir's shape only, and what
// git says of it depends on its version), indented.
func goldenRecord(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "start.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "taken")
	if _, ok := m["git"]; ok {
		m["git"] = "(git's answer)"
	}
	// The copies of the text files, by their hash.
	if pack, err := os.ReadFile(filepath.Join(dir, "copies.pack")); err == nil {
		m["(copies.pack sha256)"] = fmt.Sprintf("%x", sha256.Sum256(pack))
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// goldenWrap is the jail's argv, one per line, with the host's system dirs
// and secrets (between /dev and the private /tmp) as one placeholder.
func goldenWrap(t *testing.T, wrap []string, tmp string) []string {
	t.Helper()
	from, to := -1, -1
	for i := range wrap {
		if i+1 < len(wrap) && wrap[i] == "--dev" && wrap[i+1] == "/dev" && from < 0 {
			from = i + 2
		}
		if i+2 < len(wrap) && wrap[i] == "--bind" && wrap[i+1] == tmp && wrap[i+2] == "/tmp" {
			to = i
		}
	}
	if from < 0 || to < from {
		t.Fatalf("the jail's arguments have no system part: %q", wrap)
	}
	return slices.Concat(wrap[:from], []string{"(the host's system dirs and secrets)"}, wrap[to:])
}

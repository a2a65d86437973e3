package guard

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// planBase is a guard with a state dir and its own binary and nothing
// else (no .env, home, Claude Code, runtime root or jail), and a job with
// no policy. None of these paths exists: the plan reads nothing.
func planBase() planInputs {
	return planInputs{
		Dir: statedir.Dir{Root: "/state"}, Exe: "/opt/bridge", Allow: []string{"ls"}, Timeout: time.Minute,
		Approval: true, Sandbox: true,
		JobID: "job1", Workspace: "/ws", ConfigDir: "/state/harness/job1",
	}
}

// planLists are every list of paths a job's plan holds.
type planLists struct {
	Protected  []string // the approval rules': no tool call may name them
	DenyRead   []string // the OS sandbox's: commands cannot read them
	DenyWrite  []string // nor write these
	HideFiles  []string // Claude Code's file tools are denied these files
	HideDirs   []string // and these dirs with what is below them
	RecordDeny []string // the start record of the job's changes never copies them
	Jail       *jailLists
}

// jailLists are the jail's (nil: no jail).
type jailLists struct {
	ReadOnly          []string // bound read-only
	ReadWrite         []string // bound read-write
	Hide              []string // covered by an empty file or dir
	Writable          []string // write_paths dirs bound read-write over the workspace
	WorkspaceReadOnly bool
}

func listsOf(p jobPlan, s settingsPlan) planLists {
	l := planLists{Protected: p.Approval.Protected, DenyRead: s.DenyRead, DenyWrite: s.DenyWrite,
		HideFiles: s.HideFiles, HideDirs: s.HideDirs, RecordDeny: p.RecordDeny}
	if p.Jail != nil {
		o := p.Jail.Options
		l.Jail = &jailLists{ReadOnly: o.ReadOnly, ReadWrite: o.ReadWrite, Hide: o.Hide, Writable: p.Jail.Writable,
			WorkspaceReadOnly: o.WorkspaceReadOnly}
	}
	return l
}

func (l planLists) diff(want planLists) []string {
	var out []string
	eq := func(name string, got, want []string) {
		if !slices.Equal(got, want) {
			out = append(out, name+":\n  got  "+strings.Join(got, " ")+"\n  want "+strings.Join(want, " "))
		}
	}
	eq("Protected", l.Protected, want.Protected)
	eq("DenyRead", l.DenyRead, want.DenyRead)
	eq("DenyWrite", l.DenyWrite, want.DenyWrite)
	eq("HideFiles", l.HideFiles, want.HideFiles)
	eq("HideDirs", l.HideDirs, want.HideDirs)
	eq("RecordDeny", l.RecordDeny, want.RecordDeny)
	switch {
	case (l.Jail == nil) != (want.Jail == nil):
		out = append(out, "Jail: got "+jailState(l.Jail)+", want "+jailState(want.Jail))
	case l.Jail != nil:
		eq("Jail.ReadOnly", l.Jail.ReadOnly, want.Jail.ReadOnly)
		eq("Jail.ReadWrite", l.Jail.ReadWrite, want.Jail.ReadWrite)
		eq("Jail.Hide", l.Jail.Hide, want.Jail.Hide)
		eq("Jail.Writable", l.Jail.Writable, want.Jail.Writable)
		if l.Jail.WorkspaceReadOnly != want.Jail.WorkspaceReadOnly {
			out = append(out, "Jail.WorkspaceReadOnly differs")
		}
	}
	return out
}

func jailState(j *jailLists) string {
	if j == nil {
		return "none"
	}
	return "one"
}

func enforced(floor, caller policy.Policy) *policy.Enforced {
	e := policy.Merge(floor, caller, "")
	return &e
}

// Each source of a path on a list of the plan puts it on exactly the lists
// it belongs on: the owner's protected paths (the state dir, the .env, the
// credential stores, the two binaries), the workspace's secret files, each
// kind of deny_paths entry, what runs later, write_paths and a read-only
// job, the runtime roots, with and without the jail and the sandbox.
func TestPlanPutsEachSourceOnItsLists(t *testing.T) {
	var (
		base      = []string{"/state"}
		baseWrite = []string{"/state", "/opt/bridge"}
		prot      = []string{"/state", "/opt/bridge"} // the rules': the state dir and the bridge binary
		procSys   = []string{"/proc", "/sys"}
		// The jail's read-only binds without a Claude Code or runtime root:
		// the bridge, the switches and the four harness files.
		harnessFiles = []string{"/state/harness/job1/approval.json", "/state/harness/job1/mcp-config.json",
			"/state/harness/job1/settings.json", "/state/harness/job1/runs-later.json"}
		jailRO = slices.Concat([]string{"/opt/bridge"}, harnessFiles)
		jailRW []string                                     // nothing of the state dir: the approval child asks the daemon over loopback
		stores = sandbox.DefaultDenyRead("/home/u", "", "") // the credential stores under the home
	)
	for _, tc := range []struct {
		name  string
		in    func(*planInputs)
		w     walked   // but its Globs
		files []string // the secret walk's, which the deny_paths globs are expanded over
		want  planLists
	}{
		{
			name: "the state dir and the bridge binary alone",
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys},
		},
		{
			name: "the daemon's .env",
			in:   func(in *planInputs) { in.EnvFile = "/etc/bridge/.env" },
			want: planLists{Protected: []string{"/state", "/etc/bridge/.env", "/opt/bridge"}, DenyRead: []string{"/state", "/etc/bridge/.env"},
				DenyWrite: []string{"/state", "/etc/bridge/.env", "/opt/bridge"}, HideDirs: procSys},
		},
		{
			name: "the credential stores under the home",
			in:   func(in *planInputs) { in.Home = "/home/u" },
			want: planLists{Protected: slices.Concat(base, stores, []string{"/opt/bridge"}), DenyRead: slices.Concat(base, stores), DenyWrite: baseWrite, HideDirs: procSys},
		},
		{
			name: "the Claude Code binary",
			in:   func(in *planInputs) { in.HarnessBin = "/opt/claude/bin/claude" },
			want: planLists{Protected: []string{"/state", "/opt/bridge", "/opt/claude/bin/claude"}, DenyRead: base, DenyWrite: []string{"/state", "/opt/bridge", "/opt/claude/bin/claude"}, HideDirs: procSys},
		},
		{
			name: "the Claude Code binary, jailed",
			in:   func(in *planInputs) { in.HarnessBin = "/opt/claude/bin/claude"; in.Bwrap = "/usr/bin/bwrap" },
			want: planLists{Protected: []string{"/state", "/opt/bridge", "/opt/claude/bin/claude"}, DenyRead: base, DenyWrite: []string{"/state", "/opt/bridge", "/opt/claude/bin/claude"}, HideDirs: procSys,
				Jail: &jailLists{ReadOnly: slices.Concat([]string{"/opt/bridge", "/opt/claude/bin"}, harnessFiles), ReadWrite: jailRW}},
		},
		{
			name:  "the workspace's secret files, one under a dir named like a glob",
			w:     walked{Secrets: []string{"/ws/.env", "/ws/app/[slug]/.env"}},
			files: []string{".env", "app/[slug]/.env", "main.go"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/.env", "/ws/app/?slug?/.env"}, DenyWrite: baseWrite,
				HideFiles: []string{"/ws/.env", "/ws/app/?slug?/.env"}, HideDirs: procSys},
		},
		{
			name: "deny_paths: literal relative entries",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"private", "docs/../notes.txt"}})
			},
			files: []string{"private/a.txt", "notes.txt"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/private", "/ws/notes.txt"},
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/private", "/ws/notes.txt"},
				HideFiles: []string{"/ws/private", "/ws/notes.txt"}, HideDirs: procSys, RecordDeny: []string{"private", "docs/../notes.txt"}},
		},
		{
			name: "deny_paths: a literal absolute entry outside the workspace",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"/srv/data/key.txt"}})
			},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/srv/data/key.txt"}, DenyWrite: []string{"/state", "/opt/bridge", "/srv/data/key.txt"},
				HideFiles: []string{"/srv/data/key.txt"}, HideDirs: procSys, RecordDeny: []string{"/srv/data/key.txt"}},
		},
		{
			name: "deny_paths: the floor's and the caller's entries",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{DenyPaths: []string{"floor.txt"}}, policy.Policy{DenyPaths: []string{"caller.txt"}})
			},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/floor.txt", "/ws/caller.txt"},
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/floor.txt", "/ws/caller.txt"},
				HideFiles: []string{"/ws/floor.txt", "/ws/caller.txt"}, HideDirs: procSys, RecordDeny: []string{"floor.txt", "caller.txt"}},
		},
		{
			name: "deny_paths: a glob matching files",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"**/*.pem"}})
			},
			files: []string{"a.pem", "src/b.pem", "src/ok.go"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/a.pem", "/ws/src/b.pem"},
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/a.pem", "/ws/src/b.pem"},
				HideFiles: []string{"/ws/a.pem", "/ws/src/b.pem"}, HideDirs: procSys, RecordDeny: []string{"**/*.pem"}},
		},
		{
			name: "deny_paths: a glob matching a dir",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets/**"}})
			},
			files: []string{"secrets/key.txt", "secrets/sub/deep.txt", "main.go"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/secrets"}, DenyWrite: []string{"/state", "/opt/bridge", "/ws/secrets"},
				HideDirs: []string{"/proc", "/sys", "/ws/secrets"}, RecordDeny: []string{"secrets/**"}},
		},
		{
			name: "deny_paths: a glob matching a file under a dir named like a glob",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"app/*/page.tsx"}})
			},
			files: []string{"app/[slug]/page.tsx", "app/[slug]/layout.tsx"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/app/?slug?/page.tsx"},
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/app/?slug?/page.tsx"},
				HideFiles: []string{"/ws/app/?slug?/page.tsx"}, HideDirs: procSys, RecordDeny: []string{"app/*/page.tsx"}},
		},
		{
			name: "deny_paths: an absolute glob inside the workspace",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"/ws/gen/*.key"}})
			},
			files: []string{"gen/x.key", "gen/y.txt"},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/gen/x.key"}, DenyWrite: []string{"/state", "/opt/bridge", "/ws/gen/x.key"},
				HideFiles: []string{"/ws/gen/x.key"}, HideDirs: procSys, RecordDeny: []string{"/ws/gen/*.key"}},
		},
		{
			name: "deny_paths: a glob the walk's files do not match",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"**/*.pem"}})
			},
			files: []string{"main.go"},
			want:  planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys, RecordDeny: []string{"**/*.pem"}},
		},
		{
			// The git dir itself stays writable; a covered path is left out
			// for the dir that covers it. A runs-later path is not made a
			// literal pattern as the other lists' workspace paths are: the
			// plan keeps Prepare's behaviour, in which app/[slug]/.npmrc is
			// written to denyWrite as it is named.
			name: "what runs later",
			w: walked{RunsLater: sandbox.RunsLaterScan{Items: map[string]sandbox.Planted{
				".git":                  {Path: ".git", What: "git dir"},
				".git/config":           {Path: ".git/config", What: "git config", Sum: "c1"},
				".git/hooks":            {Path: ".git/hooks", What: "git hook"},
				".git/hooks/pre-commit": {Path: ".git/hooks/pre-commit", What: "git hook", Sum: "h1"},
				".npmrc":                {Path: ".npmrc", What: "runs-later file", Sum: "n1"},
				".vscode":               {Path: ".vscode", What: "hook file", Sum: "d"},
				".vscode/tasks.json":    {Path: ".vscode/tasks.json", What: "hook file", Sum: "t1"},
				"app/[slug]/.npmrc":     {Path: "app/[slug]/.npmrc", What: "runs-later file", Sum: "n2"},
			}}},
			want: planLists{Protected: prot, DenyRead: base,
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/.git/config", "/ws/.git/hooks", "/ws/.npmrc", "/ws/.vscode", "/ws/app/[slug]/.npmrc"},
				HideDirs:  procSys},
		},
		{
			name: "write_paths, jailed: the workspace read-only but for their dirs",
			in: func(in *planInputs) {
				in.Bwrap = "/usr/bin/bwrap"
				in.Policy = enforced(policy.Policy{}, policy.Policy{WritePaths: []string{"out/**", "build/*.txt"}})
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys,
				Jail: &jailLists{ReadOnly: jailRO, ReadWrite: jailRW, Writable: []string{"out", "build"}, WorkspaceReadOnly: true}},
		},
		{
			name: "write_paths of the floor and the caller, jailed: the dirs both reach",
			in: func(in *planInputs) {
				in.Bwrap = "/usr/bin/bwrap"
				in.Policy = enforced(policy.Policy{WritePaths: []string{"out/**"}}, policy.Policy{WritePaths: []string{"out/sub/**", "src/**"}})
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys,
				Jail: &jailLists{ReadOnly: jailRO, ReadWrite: jailRW, Writable: []string{"out/sub"}, WorkspaceReadOnly: true}},
		},
		{
			name: "write_paths without a jail: held by the rules alone",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{WritePaths: []string{"out/**"}})
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys},
		},
		{
			name: "a read-only job (write_paths: []), jailed",
			in: func(in *planInputs) {
				in.Bwrap = "/usr/bin/bwrap"
				in.Policy = enforced(policy.Policy{}, policy.Policy{WritePaths: []string{}})
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: []string{"/state", "/opt/bridge", "/ws"}, HideDirs: procSys,
				Jail: &jailLists{ReadOnly: jailRO, ReadWrite: jailRW, WorkspaceReadOnly: true}},
		},
		{
			name: "a read-only floor under a caller's write_paths, without a jail",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{WritePaths: []string{}}, policy.Policy{WritePaths: []string{"out/**"}})
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: []string{"/state", "/opt/bridge", "/ws"}, HideDirs: procSys},
		},
		{
			// The workspace comes after what runs later and the literal
			// deny paths, before the glob dirs.
			name: "a read-only job with every kind of deny path and what runs later",
			in: func(in *planInputs) {
				in.Policy = enforced(policy.Policy{}, policy.Policy{WritePaths: []string{}, DenyPaths: []string{"private", "secrets/**", "*.pem"}})
			},
			files: []string{"secrets/k", "a.pem"},
			w: walked{RunsLater: sandbox.RunsLaterScan{Items: map[string]sandbox.Planted{
				".npmrc": {Path: ".npmrc", What: "runs-later file", Sum: "n1"}}}},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/private", "/ws/a.pem", "/ws/secrets"},
				DenyWrite: []string{"/state", "/opt/bridge", "/ws/.npmrc", "/ws/private", "/ws/a.pem", "/ws", "/ws/secrets"},
				HideFiles: []string{"/ws/private", "/ws/a.pem"}, HideDirs: []string{"/proc", "/sys", "/ws/secrets"},
				RecordDeny: []string{"private", "secrets/**", "*.pem"}},
		},
		{
			name: "runtime roots, jailed: read-only, and a credential store inside one hidden",
			in: func(in *planInputs) {
				in.Bwrap = "/usr/bin/bwrap"
				in.Home = "/home/u"
				in.Runtime = []string{"/opt/venv", "/home/u/.cargo"}
				in.Stores = []string{"/home/u/.ssh", "/home/u/.cargo/credentials.toml"}
			},
			want: planLists{Protected: slices.Concat(base, stores, []string{"/opt/bridge"}), DenyRead: slices.Concat(base, stores), DenyWrite: baseWrite, HideDirs: procSys,
				Jail: &jailLists{ReadOnly: slices.Concat([]string{"/opt/bridge", "/opt/venv", "/home/u/.cargo"}, harnessFiles),
					ReadWrite: jailRW, Hide: []string{"/home/u/.cargo/credentials.toml"}}},
		},
		{
			name: "runtime roots without a jail: on no list",
			in: func(in *planInputs) {
				in.Runtime = []string{"/opt/venv"}
			},
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys},
		},
		{
			name: "the sandbox off: the same lists (the settings drop the sandbox's)",
			in:   func(in *planInputs) { in.Sandbox = false },
			w:    walked{Secrets: []string{"/ws/.env"}},
			want: planLists{Protected: prot, DenyRead: []string{"/state", "/ws/.env"}, DenyWrite: baseWrite, HideFiles: []string{"/ws/.env"}, HideDirs: procSys},
		},
		{
			name: "approval off: the same lists",
			in:   func(in *planInputs) { in.Approval = false },
			want: planLists{Protected: prot, DenyRead: base, DenyWrite: baseWrite, HideDirs: procSys},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := planBase()
			if tc.in != nil {
				tc.in(&in)
			}
			w := tc.w
			w.Globs = expandDenyGlobs(in.Workspace, in.Policy, tc.files) // as the secret walk's goroutine does
			got := listsOf(plan(in), planSettings(in, w))
			for _, d := range got.diff(tc.want) {
				t.Error(d)
			}
		})
	}
}

// The approval and MCP configs and the jail are decided with the harness
// files' paths; the approval mode and Jailed follow the guard's switches.
func TestPlanConfigsAndJail(t *testing.T) {
	in := planBase()
	in.Bwrap = "/usr/bin/bwrap"
	in.Approval = false
	in.Policy = enforced(policy.Policy{}, policy.Policy{Commands: []string{"go test"}})
	p := plan(in)
	hd := "/state/harness/job1"
	if p.HarnessDir != hd || p.ApprovalFile != hd+"/approval.json" || p.MCPFile != hd+"/mcp-config.json" ||
		p.SettingsFile != hd+"/settings.json" || p.RunsLaterFile != hd+"/runs-later.json" {
		t.Errorf("files %+v", p)
	}
	a := p.Approval
	if a.JobID != "job1" || a.Workspace != "/ws" || a.StateDir != "/state" || !slices.Equal(a.Allow, []string{"ls"}) ||
		a.Timeout != time.Minute || a.ApprovalMode != approvals.ModeOff || a.Policy != in.Policy || a.Ledger != "/state/ledgers/job1/ledger.jsonl" || !a.Jailed {
		t.Errorf("approval config %+v", a)
	}
	in.Allow[0] = "rm"
	if a.Allow[0] != "ls" {
		t.Error("the approval config shares the guard's allow list")
	}
	mcp, err := json.Marshal(p.MCP)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mcpServers":{"bridge":{"args":["approval-prompt","--config","` + hd + `/approval.json"],"command":"/opt/bridge","env":{},"type":"stdio"}}}`; string(mcp) != want {
		t.Errorf("MCP config %s, want %s", mcp, want)
	}
	j := p.Jail
	if j == nil {
		t.Fatal("no jail with bubblewrap")
	}
	if o := j.Options; o.Bwrap != "/usr/bin/bwrap" || o.Workspace != "/ws" || o.ConfigDir != hd || o.Tmp != hd+"/tmp" ||
		o.WorkspaceReadOnly || o.BindFDs != nil || o.WritableDirs != nil || o.ReadWrite != nil {
		t.Errorf("jail %+v", j)
	}
	in.Bwrap = ""
	if p := plan(in); p.Jail != nil || p.Approval.Jailed {
		t.Errorf("without bubblewrap: jail %+v, jailed %v", p.Jail, p.Approval.Jailed)
	}
}

// The settings carry the plan's lists; with the sandbox off they have no
// sandbox section, and the file tools' deny rules for the workspace's
// secret files, the deny paths and /proc remain.
func TestPlanSettings(t *testing.T) {
	for _, on := range []bool{true, false} {
		in := planBase()
		in.Sandbox = on
		in.Policy = enforced(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets/**"}})
		w := walked{Secrets: []string{"/ws/.env"}, Globs: expandDenyGlobs(in.Workspace, in.Policy, []string{"secrets/k"})}
		s := planSettings(in, w).settings()
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Sandbox *struct {
				Enabled    bool `json:"enabled"`
				Filesystem struct {
					DenyRead  []string `json:"denyRead"`
					DenyWrite []string `json:"denyWrite"`
				} `json:"filesystem"`
			} `json:"sandbox"`
			Permissions struct {
				Deny []string `json:"deny"`
			} `json:"permissions"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		wantDeny := slices.Concat(sandbox.DeniedTools, []string{"Read(//ws/.env)", "Edit(//ws/.env)",
			"Read(//proc)", "Read(//proc/**)", "Edit(//proc)", "Edit(//proc/**)",
			"Read(//sys)", "Read(//sys/**)", "Edit(//sys)", "Edit(//sys/**)",
			"Read(//ws/secrets)", "Read(//ws/secrets/**)", "Edit(//ws/secrets)", "Edit(//ws/secrets/**)"})
		if !slices.Equal(st.Permissions.Deny, wantDeny) {
			t.Errorf("sandbox %v: permissions.deny %q, want %q", on, st.Permissions.Deny, wantDeny)
		}
		switch {
		case !on && st.Sandbox != nil:
			t.Errorf("sandbox off, yet a sandbox section: %s", b)
		case on && (st.Sandbox == nil || !st.Sandbox.Enabled ||
			!slices.Equal(st.Sandbox.Filesystem.DenyRead, []string{"/state", "/ws/.env", "/ws/secrets"}) ||
			!slices.Equal(st.Sandbox.Filesystem.DenyWrite, []string{"/state", "/opt/bridge", "/ws/secrets"})):
			t.Errorf("sandbox on: %s", b)
		}
	}
}

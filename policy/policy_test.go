package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMergeOnlyNarrows(t *testing.T) {
	floor := Policy{
		Tools: []string{"Read", "Grep", "Glob", "Write"}, DenyPaths: []string{"secrets/**"},
		WritePaths: []string{"out/**", "build/**"}, Commands: []string{"go", "make"},
		OnOtherCommands: Deny, MaxSteps: 5, TimeoutSeconds: 600, MaxCostUSD: 0.5,
	}
	caller := Policy{
		Tools: []string{"Bash", "Read", "Write"}, DenyPaths: []string{"private/*"},
		WritePaths: []string{"out/**", "src/**"}, Commands: []string{"go test ./...", "cp"},
		OnOtherCommands: Ask, Network: Ask, MaxSteps: 50, TimeoutSeconds: 60,
	}
	e := Merge(floor, caller, "/etc/floor.json")
	if !slices.Equal(e.Tools, []string{"Read", "Write"}) {
		t.Errorf("tools = %v, want the intersection [Read Write] (the floor removes Bash)", e.Tools)
	}
	if !slices.Equal(e.DenyPaths, []string{"secrets/**", "private/*"}) {
		t.Errorf("deny_paths = %v, want both joined", e.DenyPaths)
	}
	if e.MaxSteps != 5 || e.TimeoutSeconds != 60 || e.MaxCostUSD != 0.5 {
		t.Errorf("caps = %d %v %v, want the minimum of each (5, 60, 0.5)", e.MaxSteps, e.TimeoutSeconds, e.MaxCostUSD)
	}
	if e.OnOtherCommands != Deny || e.Network != Ask || e.Floor != "/etc/floor.json" {
		t.Errorf("modes %q %q floor %q", e.OnOtherCommands, e.Network, e.Floor)
	}
	for rel, want := range map[string]bool{"out/a.txt": true, "src/a.go": false, "build/x": false, "out/deep/er": true} {
		if got := e.MayWrite(rel); got != want {
			t.Errorf("MayWrite(%s) = %v, want %v (must pass both lists)", rel, got, want)
		}
	}
	for _, c := range []struct {
		line, prog string
		want       bool
	}{{"go test ./...", "go", true}, {"go  test   ./...", "go", true}, {"go vet", "go", false}, {"cp a b", "cp", false}, {"make", "make", false}} {
		if got := e.CommandListed(c.line, c.prog); got != c.want {
			t.Errorf("CommandListed(%q) = %v, want %v", c.line, got, c.want)
		}
	}
	// Without a floor the caller's policy is enforced as given.
	e = Merge(Policy{}, caller, "")
	if e.Floor != "none" || !slices.Equal(e.Tools, caller.Tools) || e.MaxSteps != 50 || e.FloorWritePaths != nil {
		t.Errorf("no floor: %+v", e)
	}
	// A floor alone applies to a caller who sets nothing.
	e = Merge(Policy{Tools: []string{"Read"}, MaxSteps: 5}, Policy{}, "f")
	if !slices.Equal(e.Tools, []string{"Read"}) || e.MaxSteps != 5 {
		t.Errorf("floor only: %+v", e)
	}
	// A caller cannot widen a floor's empty tool list.
	e = Merge(Policy{Tools: []string{}}, Policy{Tools: []string{"Bash"}}, "f")
	if len(e.Tools) != 0 || e.Tools == nil {
		t.Errorf("tools = %#v, want an empty (not nil) list", e.Tools)
	}
}

func TestReadOnlyAndWritableDirs(t *testing.T) {
	var p Policy
	if err := p.UnmarshalJSON([]byte(`{"write_paths":[]}`)); err != nil {
		t.Fatal(err)
	}
	e := Merge(Policy{}, p, "")
	if !e.ReadOnly() || e.MayWrite("a.txt") {
		t.Errorf("write_paths [] is not read-only: %+v", e)
	}
	if b, _ := e.Policy.MarshalJSON(); !strings.Contains(string(b), `"write_paths":[]`) {
		t.Errorf("an empty write_paths is lost in JSON: %s", b)
	}
	e = Merge(Policy{}, Policy{WritePaths: []string{"out/**", "docs/*.md", "a/b/c.txt", "*.log"}}, "")
	if got := e.WritableDirs(); !slices.Equal(got, []string{"out", "docs", "a/b"}) {
		t.Errorf("WritableDirs = %v", got)
	}
	if e.ReadOnly() || !e.MayWrite("docs/x.md") || e.MayWrite("docs/sub/x.md") || e.MayWrite("../out/x") {
		t.Errorf("MayWrite wrong for %+v", e)
	}
}

func TestDeniedPaths(t *testing.T) {
	e := Merge(Policy{}, Policy{DenyPaths: []string{"secrets", "**/*.pem", "/etc/passwd"}}, "")
	ws := "/w"
	for p, want := range map[string]bool{
		"/w/secrets": true, "/w/secrets/a": true, "/w/x/key.pem": true, "/w/key.pem": true,
		"/etc/passwd": true, "/w/src/a.go": false, "/other/secrets": false,
	} {
		if _, got := e.Denied(ws, p); got != want {
			t.Errorf("Denied(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestValidateSaysWhatToFix(t *testing.T) {
	for _, c := range []struct {
		json, want string
	}{
		{`{"tools":["Read","Delete"]}`, `tools: "Delete" is not a tool a job can be offered; choose from Bash`},
		{`{"write_paths":["/etc/**"]}`, `must be relative to the workspace`},
		{`{"write_paths":["../x/**"]}`, `must stay inside the workspace`},
		{`{"write_paths":["**"]}`, `names the whole workspace`},
		{`{"network":"allow"}`, `network: must be "ask" or "deny", not "allow"`},
		{`{"on_other_commands":"run"}`, `on_other_commands: must be "ask" or "deny"`},
		{`{"max_steps":-1}`, `max_steps: must be at least 1`},
		{`{"deny_paths":["a/[b"]}`, `is not a valid glob`},
	} {
		_, err := Decode(strings.NewReader(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%s) = %v, want it to say %q", c.json, err, c.want)
		}
	}
	if _, err := Decode(strings.NewReader(`{"tool":["Read"]}`)); err == nil || !strings.Contains(err.Error(), `unknown field "tool"`) {
		t.Errorf("an unknown field is not refused by name: %v", err)
	}
}

func TestLoadFloorNamesLineAndReason(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ body, want string }{
		{"{\n  \"tools\": [\"Read\"],\n  \"max_steps\": \"five\"\n}\n", "line 3"},
		{"{\n  \"tools\": [\"Read\",]\n}\n", "line 2"},
		{"{\n  \"tools\": [\"Read\"],\n  \"bash\": \"off\"\n}\n", `line 3, column 3: json: unknown field "bash"`},
		{`{"tools":["Sudo"]}`, `"Sudo" is not a tool`},
	} {
		p := write("floor.json", c.body)
		_, err := LoadFloor(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadFloor(%q) = %v, want the file and %q", c.body, err, c.want)
		}
	}
	p := write("ok.json", `{"tools":["Read","Grep","Glob"],"max_steps":5}`)
	f, err := LoadFloor(p)
	if err != nil || f.MaxSteps != 5 || len(f.Tools) != 3 {
		t.Fatalf("LoadFloor(valid) = %+v, %v", f, err)
	}
	if _, err := LoadFloor(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing floor: %v", err)
	}
}

func TestOffered(t *testing.T) {
	all := []string{"Bash", "Read", "WebFetch", "Write"}
	if got := Merge(Policy{}, Policy{}, "").Offered(all); !slices.Equal(got, all) {
		t.Errorf("no policy offers %v", got)
	}
	if got := Merge(Policy{}, Policy{Tools: []string{"Read", "Grep", "Glob"}}, "").Offered(all); !slices.Equal(got, []string{"Read", "Grep", "Glob"}) {
		t.Errorf("read-only offers %v", got)
	}
	if got := Merge(Policy{Network: Deny}, Policy{}, "").Offered(all); slices.Contains(got, "WebFetch") {
		t.Errorf("network deny still offers %v", got)
	}
}

// The enforced policy survives the snapshot file and the payload: the floor's
// name and lists, and an empty write_paths, come back as they were.
func TestEnforcedJSONRoundTrip(t *testing.T) {
	e := Merge(Policy{WritePaths: []string{}, Commands: []string{"go"}}, Policy{WritePaths: []string{"out/**"}, Commands: []string{"go test"}, Tools: []string{"Read"}}, "/f.json")
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"floor":"/f.json"`, `"floor_write_paths":[]`, `"floor_commands":["go"]`, `"write_paths":["out/**"]`, `"tools":["Read"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Enforced
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Floor != "/f.json" || back.FloorWritePaths == nil || len(back.FloorWritePaths) != 0 || !back.ReadOnly() || !slices.Equal(back.FloorCommands, []string{"go"}) {
		t.Errorf("round trip = %+v", back)
	}
}

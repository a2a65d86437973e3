package policy

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// The jail is the only barrier for a script's own writes (the rules hold
// file tools and the commands they can read), so every dir it binds
// read-write must be one both write_paths lists allow: a floor of out/**
// and a caller's src/** leave nothing writable.
func TestWritableDirsStayInsideTheFloor(t *testing.T) {
	for _, tc := range []struct {
		name          string
		floor, caller []string
		want          []string
	}{
		{"disjoint lists of one entry", []string{"out/**"}, []string{"src/**"}, nil},
		{"caller wider than the floor", []string{"src/gen/**"}, []string{"src/**"}, []string{"src/gen"}},
		{"floor wider than the caller", []string{"src/**"}, []string{"src/gen/**"}, []string{"src/gen"}},
		{"caller shorter than the floor", []string{"out/**", "docs/**"}, []string{"src/**"}, nil},
		{"one shared dir of several", []string{"out/**", "docs/**"}, []string{"docs/*.md", "src/**"}, []string{"docs"}},
		{"a prefix of a name is not a parent", []string{"out/**"}, []string{"output/**"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Merge(Policy{WritePaths: tc.floor}, Policy{WritePaths: tc.caller}, "floor.json")
			for _, d := range e.WritableDirs() {
				if !matchAny(tc.floor, d+"/x") {
					t.Errorf("floor %v, caller %v: the jail makes %s/ writable, outside the floor (WritableDirs = %v)",
						tc.floor, tc.caller, d, e.WritableDirs())
				}
			}
			if got := e.WritableDirs(); !slices.Equal(got, tc.want) {
				t.Errorf("WritableDirs = %v, want %v", got, tc.want)
			}
		})
	}
}

// The approval child reads the job's policy back from the approval config
// the daemon wrote (Enforced's JSON). An empty commands list — "no command
// runs unattended", in the floor or the caller's policy — must arrive as
// an empty list, not as none (which lets every allow-listed command run).
func TestAnEmptyCommandsListSurvivesTheApprovalConfig(t *testing.T) {
	for name, e := range map[string]Enforced{
		"floor commands []":  Merge(Policy{Commands: []string{}}, Policy{}, "floor.json"),
		"caller commands []": Merge(Policy{}, Policy{Commands: []string{}}, ""),
	} {
		if !e.ListsCommands() {
			t.Fatalf("%s: the daemon's policy lists no commands", name)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back Enforced
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !back.ListsCommands() {
			t.Errorf("%s: written as %s, read back without a commands list: allow-listed commands run unattended", name, b)
		}
	}
}

// Every list of a policy, and of the floor beside it, comes back from JSON
// as it was: absent as nil, empty as empty, full as full. The field list is
// taken from the types, so a new list field is checked too.
func TestEveryPolicyListRoundTripsThroughJSON(t *testing.T) {
	type lists map[string][]string
	listFields := func(v reflect.Value) lists {
		out := lists{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type == reflect.TypeOf([]string(nil)) {
				out[f.Name] = v.Field(i).Interface().([]string)
			}
		}
		return out
	}
	set := func(v reflect.Value, l []string) {
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Type == reflect.TypeOf([]string(nil)) {
				v.Field(i).Set(reflect.ValueOf(slices.Clone(l)))
			}
		}
	}
	for _, l := range [][]string{nil, {}, {"Read"}} {
		var e Enforced
		set(reflect.ValueOf(&e.Policy).Elem(), l)
		set(reflect.ValueOf(&e).Elem(), l)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back Enforced
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, pair := range [][2]lists{
			{listFields(reflect.ValueOf(e.Policy)), listFields(reflect.ValueOf(back.Policy))},
			{listFields(reflect.ValueOf(e)), listFields(reflect.ValueOf(back))},
		} {
			if len(pair[0]) == 0 {
				t.Fatal("found no list fields")
			}
			for name, want := range pair[0] {
				got := pair[1][name]
				if (got == nil) != (want == nil) || !slices.Equal(got, want) {
					t.Errorf("%s %#v: written as %s, read back as %#v", name, want, b, got)
				}
			}
		}
		// A single layer too: the caller's policy as a job's payload shows it.
		var p Policy
		if err := json.Unmarshal(must(json.Marshal(e.Policy)), &p); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(listFields(reflect.ValueOf(p)), listFields(reflect.ValueOf(e.Policy))) {
			t.Errorf("Policy %#v read back as %#v", e.Policy, p)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A deny_paths glob is expanded over a walk's file list into the highest
// matching dir (so a file made there later is covered) or the file; an
// absolute glob is matched against the workspace's absolute paths, and
// literal entries are left to the caller.
func TestDenyGlobMatches(t *testing.T) {
	e := Merge(Policy{DenyPaths: []string{"/ws/x/*", "/other/*"}}, Policy{DenyPaths: []string{"secrets/**", "**/*.pem", "private"}}, "f")
	dirs, files := e.DenyGlobMatches("/ws", []string{
		"secrets/a", "secrets/b/c", "a.pem", "src/b.pem", "src/ok.go", "x/y", "x/z/w", "private/p", "other/q",
	})
	if want := []string{"secrets", "x/z"}; !slices.Equal(dirs, want) {
		t.Errorf("dirs = %v, want %v", dirs, want)
	}
	if want := []string{"a.pem", "src/b.pem", "x/y"}; !slices.Equal(files, want) {
		t.Errorf("files = %v, want %v", files, want)
	}
	if d, f := Merge(Policy{}, Policy{DenyPaths: []string{"private"}}, "").DenyGlobMatches("/ws", []string{"private/p"}); d != nil || f != nil {
		t.Errorf("a literal entry expanded to %v %v", d, f)
	}
}

package tools

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps/*.json")

// TestToolSnaps keeps what hosts see of every tool a reviewed diff:
// go test ./tools -run TestToolSnaps -update rewrites testdata/toolsnaps.
func TestToolSnaps(t *testing.T) {
	list := List(Options{Flash: &fakeFlash{}, Jobs: noJobs{}})
	if len(list) != 10 {
		t.Fatalf("%d tools, want deepseek_flash, deepseek_models, the seven agent tools and deepseek_review", len(list))
	}
	for _, st := range list {
		tool := st.Tool
		t.Run(tool.Name, func(t *testing.T) {
			a := tool.Annotations
			if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Fatalf("annotations not all set explicitly: %+v", a)
			}
			got, err := json.MarshalIndent(tool, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "toolsnaps", tool.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./tools -run TestToolSnaps -update to create it)", err)
			}
			if string(want) != string(got) {
				t.Fatalf("tool %s changed; review the diff and run go test ./tools -run TestToolSnaps -update:\n%s", tool.Name, got)
			}
		})
	}
}

func TestFlashToolAnnotations(t *testing.T) {
	tool, _ := FlashTool(&fakeFlash{}, builtinCatalog(""))
	a := tool.Annotations
	if !*a.ReadOnlyHint || *a.DestructiveHint || *a.IdempotentHint || !*a.OpenWorldHint {
		t.Errorf("annotations = %+v", a)
	}
	if tool.OutputSchema.Type != "object" || tool.OutputSchema.Properties["usage"] == nil {
		t.Errorf("outputSchema = %+v", tool.OutputSchema)
	}
}

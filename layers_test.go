package bridge_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge"

// layers ranks every package of the module: a package may import only
// packages of a lower rank, so no arrow runs back up
// (server → jobs → guard → approvals, harness → sandbox). The longest
// matching prefix decides; a package the table does not place fails the test,
// so a new package is placed on purpose.
var layers = map[string]int{
	"ids":                   10,
	"backoff":               10,
	"internal":              10,
	"statedir":              10,
	"config":                10,
	"config/configtest":     11, // test configs from an injected environment
	"policy":                12, // job policies, the floor merge (pure)
	"logging":               10,
	"envfile":               12, // edits .env files atomically (statedir)
	"mcpsock":               15, // the client side of the daemon's unix socket
	"sandbox":               20,
	"harness":               20,
	"deepseek":              20,
	"deepseek/deepseektest": 20,
	"changes":               25, // what a job changed on disk (uses the sandbox's walk)
	"review":                27, // deepseek_review's policy, prompt and findings (over changes' scope)
	"approvals/rules":       30, // the pure rules
	"approvals":             32, // the queue and audit log
	"approvals/prompt":      34, // the approval child: rules + queue
	"modelproxy":            30,
	"guard":                 40,
	"jobs":                  50,
	"tools":                 55, // the MCP tools, each a constructor; server registers them
	"server":                60,
	"daemon":                70,
	"daemonctl":             75, // the daemon's lifecycle from outside (bridgectl, bridge stdio)
	"bench":                 80,
	"bench/minproxy":        85, // the bench's minimal proxy, a thin main over bench
	"cmd":                   90,
	"cmd/bridgectl/cli":     85, // bridgectl's commands, under its thin main
	"cmd/bridge-demo/demo":  85,
	"e2e":                   90,
	"":                      100, // the root package: repository-wide tests only
}

func rank(pkg string) (int, bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	best, r, ok := -1, 0, false
	for prefix, n := range layers {
		if rel == prefix || prefix == "" && rel == "" || prefix != "" && strings.HasPrefix(rel, prefix+"/") {
			if len(prefix) > best {
				best, r, ok = len(prefix), n, true
			}
		}
	}
	return r, ok
}

// TestImportsPointDown fails when a package imports one at its own rank or
// above (tests excluded: they may reach sideways to build fixtures).
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from, ok := rank(p.ImportPath)
		if !ok {
			t.Errorf("package %s has no layer: add it to layers in layers_test.go", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to, ok := rank(imp)
			if !ok {
				continue // reported as its own package
			}
			if to >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", rel(p.ImportPath), from, rel(imp), to)
			}
		}
	}
}

func rel(pkg string) string { return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/") }

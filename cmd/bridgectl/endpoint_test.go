package main

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// A daemon started with DEEPSEEK_BASE_URL exported calls that endpoint;
// status and doctor run from a shell without it say so — doctor probes the
// daemon's endpoint (not the .env's, which would contradict it) and says the
// .env names another, which a reload applies.
func TestStatusAndDoctorShowTheDaemonsEndpoint(t *testing.T) {
	w := newWorld(t)
	other := deepseektest.New(deepseektest.WithKey(testKey))
	t.Cleanup(other.Close)
	if out, errs, code := runCtl(t, append(w.environ, "DEEPSEEK_BASE_URL="+other.URL()), "", "start"); code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errs)
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"status", []string{"status"}, []string{"deepseek:  " + other.URL() + " (from the environment, reported by the daemon)\n"}},
		{"doctor", []string{"doctor"}, []string{
			"API endpoint: the running daemon calls " + other.URL() + " (from the environment, reported by the daemon); " + w.envFile + " says " + w.double.URL() + " — `bridgectl reload` applies it",
			"OK   API key: present and accepted by " + other.URL() + "\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, _ := w.ctl(tt.args...)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("%s lacks %q:\n%s%s", tt.name, want, out, errs)
				}
			}
			if strings.Contains(out, "cannot reach") {
				t.Errorf("%s contradicts the daemon:\n%s", tt.name, out)
			}
		})
	}
}

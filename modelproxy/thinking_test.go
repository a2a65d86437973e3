package modelproxy

import (
	"encoding/json"
	"testing"
)

func TestWithoutThinking(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"m","thinking":{"type":"adaptive"},"output_config":{"effort":"high"}}`: `{"model":"m","thinking":{"type":"disabled"}}`,
		`{"model":"m","output_config":{"effort":"high","format":{"type":"json"}}}`:       `{"model":"m","output_config":{"format":{"type":"json"}},"thinking":{"type":"disabled"}}`,
		`{"model":"m"}`: `{"model":"m","thinking":{"type":"disabled"}}`,
		`not json`:      `not json`,
	} {
		got := withoutThinking([]byte(in))
		if !jsonEqual(got, []byte(want)) {
			t.Errorf("withoutThinking(%s) = %s, want %s", in, got, want)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ab, _ := json.Marshal(x)
	bb, _ := json.Marshal(y)
	return string(ab) == string(bb)
}

package statedir

import (
	"bytes"
	"encoding/json"
)

// Salvage reads what it can of a damaged JSON object — one cut short by a
// full disk, say: the top-level fields that were whole before the damage,
// each as its raw JSON. A reader says which file is damaged and shows these
// as what is still known. Nothing is returned when b is not an object.
func Salvage(b []byte) map[string]json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, ok := t.(string)
		if !ok {
			break
		}
		var v json.RawMessage
		// A number at the very end may have lost digits: a value counts only
		// when something follows it.
		if err := dec.Decode(&v); err != nil || len(bytes.TrimSpace(b[dec.InputOffset():])) == 0 {
			break
		}
		out[key] = v
	}
	return out
}

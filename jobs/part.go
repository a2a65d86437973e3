package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
)

// Parts are the parts of a job a caller can fetch whole, in pages
// (deepseek_agent_fetch), when a payload leaves them out to fit its host:
// the whole diff (its file in the state dir, past the payload's 64 KiB),
// the result, and, one JSON object a line, the changes, the ledger, the
// commands with their output tails, and the trace.
var Parts = []string{"diff", "result", "changes", "ledger", "commands", "trace"}

// Part returns one part of job id as the bytes a page is cut from.
func (r *Registry) Part(id, part string) ([]byte, error) {
	if !slices.Contains(Parts, part) {
		return nil, fmt.Errorf("%w: part %q: want one of %v", ErrBadInput, part, Parts)
	}
	s, err := r.Get(id)
	if err != nil {
		return nil, err
	}
	switch part {
	case "diff":
		b, err := os.ReadFile(filepath.Join(r.opts.Dir.ChangesDir(id), changes.DiffFile))
		if errors.Is(err, os.ErrNotExist) {
			return []byte(s.Diff), nil // no file (yet): what the snapshot holds
		}
		return b, err
	case "result":
		if !s.Status.Done() {
			return nil, fmt.Errorf("%w: job %s is %s: a result exists only once it is done", ErrBadInput, id, s.Status)
		}
		return []byte(s.Result), nil
	case "changes":
		return jsonLines(s.Changes)
	case "ledger":
		return jsonLines(s.Ledger)
	case "commands":
		return jsonLines(s.Commands)
	}
	return jsonLines(s.Trace)
}

// jsonLines is one JSON object a line.
func jsonLines[T any](items []T) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

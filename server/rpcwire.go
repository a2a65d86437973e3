package server

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
)

// Two things about a JSON-RPC body are settled here, before mcp-go reads it.
//
// Depth: encoding/json refuses more than 10,000 levels with an error mcp-go
// answers as "request body is not valid json", which is wrong for valid JSON
// and says nothing useful. No MCP message the bridge takes needs more than a
// handful of levels, so deeper bodies are refused at MaxJSONDepth, saying so.
//
// Ids: mcp-go v1.2.1 decodes a request's id into `any` (request_handler.go,
// HandleMessage: baseMessage.ID; streamable_http.go, handlePost: requestID),
// so a number becomes a float64 and is echoed as one: 9007199254740993 comes
// back as 9007199254740992, 1.0 as 1, and the reply matches no request.
// _meta.progressToken takes the same path (mcp.Meta.UnmarshalJSON). Such a
// value is swapped for a string of ours before mcp-go reads the body, and the
// literal the client sent is put back in every byte written in answer.

// MaxJSONDepth is how deeply arrays and objects may nest in a request body.
const MaxJSONDepth = 64

// nestedDeeper reports whether b nests arrays and objects more than limit
// levels deep. Strings are skipped; b need not be valid JSON.
func nestedDeeper(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// idSwap is one value mcp-go would not echo byte for byte: the string that
// stands in for it (quoted, as it appears in JSON) and the literal sent.
type idSwap struct{ stand, literal []byte }

// exactIDs returns body with the id and _meta.progressToken of a single
// message swapped where mcp-go would change them, and the swaps to undo in
// the answer (nil: body is returned as it is).
func exactIDs(body []byte) ([]byte, []idSwap) {
	var head struct { // one pass over the body for the common case: nothing to swap
		ID     json.RawMessage `json:"id"`
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &head) // a field of another type: what was read still counts
	if !changedByMCPGo(head.ID) && !changedByMCPGo(head.Params.Meta.ProgressToken) {
		return body, nil
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body, nil // not one JSON object: mcp-go answers it
	}
	var swaps []idSwap
	swap := func(lit json.RawMessage) json.RawMessage {
		if !changedByMCPGo(lit) {
			return lit
		}
		stand, _ := json.Marshal("bridge-rpc-id-" + rand.Text())
		swaps = append(swaps, idSwap{stand: stand, literal: bytes.TrimSpace(lit)})
		return stand
	}
	if id, ok := msg["id"]; ok {
		msg["id"] = swap(id)
	}
	var params, meta map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) == nil && json.Unmarshal(params["_meta"], &meta) == nil {
		if tok, ok := meta["progressToken"]; ok {
			meta["progressToken"] = swap(tok)
			params["_meta"], _ = json.Marshal(meta)
			msg["params"], _ = json.Marshal(params)
		}
	}
	if swaps == nil {
		return body, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(msg) != nil {
		return body, nil
	}
	return out.Bytes(), swaps
}

// changedByMCPGo reports whether lit is a number that does not survive
// mcp-go's decode into `any` and encode back byte for byte. Strings keep
// their value either way.
func changedByMCPGo(lit json.RawMessage) bool {
	lit = bytes.TrimSpace(lit)
	if len(lit) == 0 || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
		return false
	}
	var v any
	if json.Unmarshal(lit, &v) != nil {
		return false
	}
	echo, err := json.Marshal(v)
	return err != nil || !bytes.Equal(echo, lit)
}

// idRestorer puts the literals back in everything written in answer. Every
// writer of an MCP answer writes each JSON-RPC message in one Write (mcp-go's
// writeSSEEvent and json.Encoder, sseWriter.event), so a stand-in is never
// split across two.
type idRestorer struct {
	http.ResponseWriter
	swaps []idSwap
}

func (w *idRestorer) Write(p []byte) (int, error) {
	out := p
	for _, s := range w.swaps {
		out = bytes.ReplaceAll(out, s.stand, s.literal)
	}
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *idRestorer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *idRestorer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Every tool's handler gets its arguments through withArgs: they are read
// against the tool's input schema — the one tools/list shows hosts — before
// the handler runs. A wrong type, a number out of range, a value outside an
// enum or a missing required argument is refused with an error result that
// names the argument and says what it needs; nothing is dropped or coerced on
// the way. An argument the schema does not name is refused with the names it
// does (every object schema says additionalProperties: false, or it does not
// compile), so a host never believes it chose something that was dropped.
// The check reads the schema itself, so a new argument (or a new tool) is
// checked by declaring it.

// argSchema is the part of JSON Schema the check understands. A schema with
// any other keyword does not compile (withArgs panics at construction), so a
// schema never promises a check that is not made.
type argSchema struct {
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Enum        []string        `json:"enum"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Default     json.RawMessage `json:"default"`
	Required    []string        `json:"required"`
	// AdditionalProperties must be false on every object: unknown names are refused.
	AdditionalProperties *bool                 `json:"additionalProperties"`
	Properties           map[string]*argSchema `json:"-"` // compiled one by one
	Items                *argSchema            `json:"-"`
}

// argKeywords are the keywords argSchema reads, each with the types it
// applies to (none: every type; description, title and default are notes).
var argKeywords = map[string][]string{
	"type": nil, "description": nil, "title": nil, "default": nil,
	"enum":    {"string"},
	"minimum": {"number", "integer"}, "maximum": {"number", "integer"},
	"properties": {"object"}, "required": {"object"}, "additionalProperties": {"object"},
	"items": {"array"},
}

// maxSafeInt is the largest whole number a float64 holds exactly; an integer
// argument is bounded by it even where its schema sets no bound.
const maxSafeInt = 1<<53 - 1

func compileArgSchema(raw []byte) (*argSchema, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var s argSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	for k := range keys {
		types, known := argKeywords[k]
		if !known || (types != nil && !slices.Contains(types, s.Type)) {
			return nil, fmt.Errorf("schema keyword %q on type %q is not checked by withArgs", k, s.Type)
		}
	}
	switch s.Type {
	case "string", "number", "integer", "boolean":
	case "array":
		if raw := keys["items"]; raw != nil {
			items, err := compileArgSchema(raw)
			if err != nil {
				return nil, fmt.Errorf("items: %w", err)
			}
			s.Items = items
		}
	case "object":
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			return nil, errors.New("an object schema must say additionalProperties: false (unknown arguments are refused)")
		}
		var props map[string]json.RawMessage
		if err := json.Unmarshal(keys["properties"], &props); keys["properties"] != nil && err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		s.Properties = map[string]*argSchema{}
		for name, raw := range props {
			p, err := compileArgSchema(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			s.Properties[name] = p
		}
		for _, name := range s.Required {
			if s.Properties[name] == nil {
				return nil, fmt.Errorf("required %q is not a property", name)
			}
		}
	default:
		return nil, fmt.Errorf("type %q is not checked by withArgs", s.Type)
	}
	return &s, nil
}

// toolArgSchema compiles the input schema tools/list shows for tool.
func toolArgSchema(tool mcp.Tool) (*argSchema, error) {
	raw := []byte(tool.RawInputSchema)
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(tool.InputSchema); err != nil {
			return nil, err
		}
	}
	s, err := compileArgSchema(raw)
	if err == nil && s.Type != "object" {
		err = fmt.Errorf("input schema is of type %q, not object", s.Type)
	}
	return s, err
}

// argsHandler is a tool handler that gets checked arguments.
type argsHandler func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error)

// withArgs is how every tool's handler is built: the arguments are checked
// against tool's input schema first, and a refusal is an error result for the
// calling model. It panics when the schema uses what the check cannot read.
func withArgs(tool mcp.Tool, h argsHandler) mcpserver.ToolHandlerFunc {
	s, err := toolArgSchema(tool)
	if err != nil {
		panic(fmt.Sprintf("server: tool %s: %v", tool.Name, err))
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := checkArgs(s, req.GetRawArguments())
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return h(ctx, req, a)
	}
}

// args are one call's arguments after the check: strings, float64 numbers,
// bools, []any and map[string]any, each of the type its schema declares.
// Absent arguments read as the schema's default.
type args struct {
	vals   map[string]any
	schema *argSchema
}

// checkArgs decodes raw (json.RawMessage from the wire, or a Go value) with
// every number kept as sent, and checks it against s. The error says every
// argument that is wrong, and how.
func checkArgs(s *argSchema, raw any) (args, error) {
	b, ok := raw.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(raw); err != nil {
			return args{}, fmt.Errorf("the arguments could not be read: %w", err)
		}
	}
	var v any = map[string]any{}
	if t := bytes.TrimSpace(b); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return args{}, fmt.Errorf("the arguments are not valid JSON: %w", err)
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return args{}, fmt.Errorf("the arguments must be an object of named arguments, not %s", kindOf(v))
	}
	var errs []string
	out := s.check("", v, &errs)
	if len(errs) > 0 {
		return args{}, errors.New(strings.Join(errs, "; "))
	}
	return args{vals: out.(map[string]any), schema: s}, nil
}

// check returns v in its checked form, appending what is wrong to errs.
func (s *argSchema) check(path string, v any, errs *[]string) any {
	fail := func(format string, a ...any) any {
		msg := path + " " + fmt.Sprintf(format, a...)
		if s.Description != "" {
			msg += ": " + s.Description
		}
		*errs = append(*errs, msg)
		return nil
	}
	switch s.Type {
	case "string":
		str, ok := v.(string)
		if !ok {
			return fail("must be a string, not %s", kindOf(v))
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) { // the list says it all: no description
			*errs = append(*errs, fmt.Sprintf("%s must be one of %s, not %s", path, strings.Join(s.Enum, ", "), short(strconv.Quote(str))))
			return nil
		}
		return str
	case "number", "integer":
		n, ok := v.(json.Number)
		if !ok {
			return fail("must be %s, not %s", wantOf(s.Type), kindOf(v))
		}
		f, err := strconv.ParseFloat(n.String(), 64) // ±Inf past float64: out of any range
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fail("must be %s, not %s", wantOf(s.Type), short(n.String()))
		}
		lo, hi := s.bounds()
		whole := s.Type != "integer" || f == math.Trunc(f)
		if !whole || (lo != nil && f < *lo) || (hi != nil && f > *hi) {
			return fail("must be %s%s, not %s", wantOf(s.Type), rangeText(lo, hi), short(n.String()))
		}
		return f
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return fail("must be true or false, not %s", kindOf(v))
		}
		return b
	case "array":
		list, ok := v.([]any)
		if !ok {
			return fail("must be an array, not %s", kindOf(v))
		}
		out := make([]any, len(list))
		for i, item := range list {
			if s.Items != nil {
				item = s.Items.check(fmt.Sprintf("%s[%d]", path, i), item, errs)
			}
			out[i] = item
		}
		return out
	default: // object
		obj, ok := v.(map[string]any)
		if !ok {
			return fail("must be an object, not %s", kindOf(v))
		}
		out := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			p, val := s.Properties[name], obj[name]
			if str, ok := val.(string); ok && strings.TrimSpace(str) == "" && p.Type == "string" {
				val = nil // a blank string says nothing: absent, or missing when required
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if val == nil {
				if slices.Contains(s.Required, name) {
					msg := sub + " is required"
					if p.Description != "" {
						msg += ": " + p.Description
					}
					*errs = append(*errs, msg)
				}
				continue
			}
			out[name] = p.check(sub, val, errs)
		}
		var unknown []string
		for name := range obj {
			if s.Properties[name] == nil {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			where := "this tool"
			if path != "" {
				where = path
			}
			for i, n := range unknown {
				unknown[i] = short(strconv.Quote(n))
			}
			*errs = append(*errs, fmt.Sprintf("unknown argument %s: %s takes %s", strings.Join(unknown, ", "), where, strings.Join(slices.Sorted(maps.Keys(s.Properties)), ", ")))
		}
		return out
	}
}

// bounds are the schema's minimum and maximum, an integer's held to what a
// float64 holds exactly.
func (s *argSchema) bounds() (lo, hi *float64) {
	lo, hi = s.Minimum, s.Maximum
	if s.Type == "integer" {
		safeLo, safeHi := float64(-maxSafeInt), float64(maxSafeInt)
		if lo == nil || *lo < safeLo {
			lo = &safeLo
		}
		if hi == nil || *hi > safeHi {
			hi = &safeHi
		}
	}
	return lo, hi
}

func rangeText(lo, hi *float64) string {
	f := func(p *float64) string { return strconv.FormatFloat(*p, 'f', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return " from " + f(lo) + " to " + f(hi)
	case lo != nil:
		return " of at least " + f(lo)
	case hi != nil:
		return " of at most " + f(hi)
	}
	return ""
}

func wantOf(typ string) string {
	if typ == "integer" {
		return "a whole number"
	}
	return "a number"
}

// kindOf names the JSON type of a decoded value, for an error.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// short keeps what an error quotes back from the caller short.
func short(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// String is a string argument, else its default, else "".
func (a args) String(name string) string {
	if v, ok := a.vals[name].(string); ok {
		return v
	}
	var d string
	if p := a.schema.Properties[name]; p != nil && p.Default != nil {
		_ = json.Unmarshal(p.Default, &d)
	}
	return d
}

// Number is a number argument, else its default; ok is false when it has neither.
func (a args) Number(name string) (float64, bool) {
	if v, ok := a.vals[name].(float64); ok {
		return v, true
	}
	var d float64
	if p := a.schema.Properties[name]; p != nil && p.Default != nil && json.Unmarshal(p.Default, &d) == nil {
		return d, true
	}
	return 0, false
}

// Int is an integer argument (whole and within ±2^53 by the check), else its
// default; ok is false when it has neither.
func (a args) Int(name string) (int, bool) {
	f, ok := a.Number(name)
	return int(f), ok
}

// Bool is a boolean argument, else its default; ok is false when it has neither.
func (a args) Bool(name string) (bool, bool) {
	if v, ok := a.vals[name].(bool); ok {
		return v, true
	}
	var d bool
	if p := a.schema.Properties[name]; p != nil && p.Default != nil && json.Unmarshal(p.Default, &d) == nil {
		return d, true
	}
	return false, false
}

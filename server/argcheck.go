package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Every tool's arguments are checked by mcp-go against the input schema
// tools/list shows (WithInputSchemaValidation, in New) before any middleware
// or handler runs, and every structuredContent against the output schema
// (WithOutputSchemaValidation). This file closes what mcp-go v1.2.1 leaves
// open (server/input_validation.go, output_validation.go, server.go):
//
//   - a schema that does not compile is skipped without a word, so its calls
//     would run unchecked: checkToolSchemas compiles every schema the way
//     mcp-go does, and New fails on one that does not compile;
//   - WithStrictInputSchemaDefault leaves a raw input schema (and every
//     nested object) as written: checkToolSchemas requires
//     additionalProperties: false on every object of every input schema, so
//     an unknown argument is always refused, never dropped;
//   - its refusal reads "input schema validation failed: /files: &{Got:array
//     Want:[string]}": refusalHook rewords it for the calling model, naming
//     the argument, what it needs (with the schema's description) and, for an
//     unknown argument, the ones the tool takes.
//
// Integers past 2^53 are refused by the schemas themselves: every integer
// argument has a maximum (TestIntegersAreBounded).

// mcpGoRefusal and mcpGoOutputRefusal begin the text of mcp-go's error
// result for arguments its input schema refuses, and for a result its output
// schema refuses.
const (
	mcpGoRefusal       = "input schema validation failed: "
	mcpGoOutputRefusal = "output schema validation failed: "
)

// toolSchema is one tool's compiled input schema and the same schema as
// plain JSON values, for descriptions and property names.
type toolSchema struct {
	in  *jsonschema.Schema
	raw any
}

// refusalHook rewords mcp-go's refusal of a call's arguments (an error
// result it answers before any middleware) for the calling model, and logs a
// result mcp-go withheld for not matching its output schema (a bug of ours).
// It runs as an after-call hook, on every transport, and changes nothing else.
func (s *Server) refusalHook() mcpserver.OnAfterCallToolFunc {
	return func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || res == nil || !res.IsError || len(res.Content) != 1 {
			return
		}
		tc, ok := res.Content[0].(mcp.TextContent)
		if ok && strings.HasPrefix(tc.Text, mcpGoOutputRefusal) {
			s.log.Error().Str("tool", req.Params.Name).Msg(tc.Text)
		}
		if !ok || !strings.HasPrefix(tc.Text, mcpGoRefusal) {
			return
		}
		ts, ok := s.schemas[req.Params.Name]
		if !ok {
			return
		}
		if text, ok := ts.refusal(req.GetRawArguments()); ok {
			res.Content = []mcp.Content{mcp.NewTextContent(text)}
		}
	}
}

// refusal checks raw (the arguments as sent, numbers as written) against the
// schema again and says what is wrong, one argument after another; ok is
// false when it finds nothing (mcp-go's words then stand).
func (s toolSchema) refusal(raw any) (string, bool) {
	v, err := decodeArgs(raw)
	if err != nil {
		return "", false
	}
	var verr *jsonschema.ValidationError
	if !errors.As(s.in.Validate(v), &verr) {
		return "", false
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(verr, &leaves)
	typed := map[string]bool{} // locations with a wrong type: nothing else is said of them
	for _, l := range leaves {
		if _, ok := l.ErrorKind.(*kind.Type); ok {
			typed[strings.Join(l.InstanceLocation, "/")] = true
		}
	}
	type problem struct {
		path    string
		unknown bool
		text    string
	}
	var ps []problem
	for _, l := range leaves {
		loc := strings.Join(l.InstanceLocation, "/")
		if _, isType := l.ErrorKind.(*kind.Type); typed[loc] && !isType {
			continue
		}
		at := locate(s.raw, v, l.InstanceLocation)
		switch k := l.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				ps = append(ps, problem{path: join(at.path, name), text: withDesc(join(at.path, name)+" is required", at.property(name))})
			}
		case *kind.AdditionalProperties:
			names := slices.Sorted(slices.Values(k.Properties))
			for i, n := range names {
				names[i] = short(strconv.Quote(n))
			}
			where := "this tool"
			if at.path != "" {
				where = at.path
			}
			takes := strings.Join(slices.Sorted(maps.Keys(at.properties())), ", ")
			if takes == "" {
				takes = "no arguments"
			}
			ps = append(ps, problem{path: at.path, unknown: true, text: fmt.Sprintf("unknown argument %s: %s takes %s", strings.Join(names, ", "), where, takes)})
		default:
			ps = append(ps, problem{path: at.path, text: at.say(l.ErrorKind, len(l.InstanceLocation) == 0)})
		}
	}
	if len(ps) == 0 {
		return "", false
	}
	slices.SortStableFunc(ps, func(a, b problem) int {
		if a.unknown != b.unknown {
			if a.unknown {
				return 1
			}
			return -1
		}
		return strings.Compare(a.path, b.path)
	})
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.text
	}
	return strings.Join(slices.Compact(texts), "; "), true
}

// decodeArgs reads a call's arguments as the schema checks them (numbers
// as written); absent or null arguments are an empty object, as for mcp-go.
func decodeArgs(raw any) (any, error) {
	b, ok := raw.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	var v any = map[string]any{}
	if t := bytes.TrimSpace(b); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(t)); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// check is what mcp-go's input validation does for a plain call, for a
// call mcp-go does not check (a task's): "" when raw passes the schema,
// otherwise the refusal the calling model reads.
func (s toolSchema) check(raw any) string {
	v, err := decodeArgs(raw)
	if err != nil {
		return "the arguments could not be read as JSON: " + err.Error()
	}
	if s.in.Validate(v) == nil {
		return ""
	}
	if text, ok := s.refusal(raw); ok {
		return text
	}
	return "the arguments do not match this tool's input schema"
}

func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// spot is one place in the arguments: its path as the model wrote it
// (policy.tools[1]), the value there and the schema that describes it.
type spot struct {
	path   string
	value  any
	schema map[string]any
}

// locate walks the value and the schema along an instance location.
func locate(schema, value any, loc []string) spot {
	sp := spot{value: value}
	sp.schema, _ = schema.(map[string]any)
	for _, seg := range loc {
		switch v := sp.value.(type) {
		case []any:
			i, _ := strconv.Atoi(seg)
			sp.path += "[" + seg + "]"
			sp.value = nil
			if i >= 0 && i < len(v) {
				sp.value = v[i]
			}
			sp.schema, _ = sp.schema["items"].(map[string]any)
		default:
			obj, _ := v.(map[string]any)
			sp.path = join(sp.path, seg)
			sp.value = obj[seg]
			sp.schema = sp.property(seg)
		}
	}
	return sp
}

func (sp spot) properties() map[string]any {
	props, _ := sp.schema["properties"].(map[string]any)
	return props
}

func (sp spot) property(name string) map[string]any {
	p, _ := sp.properties()[name].(map[string]any)
	return p
}

// say words one problem with the value at sp.
func (sp spot) say(k jsonschema.ErrorKind, root bool) string {
	switch k := k.(type) {
	case *kind.Type:
		if root {
			return "the arguments must be an object of named arguments, not " + kindOf(k.Got)
		}
		if slices.Equal(k.Want, []string{"integer"}) && k.Got == "number" { // a fraction
			return sp.outOfRange()
		}
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = wantOf(w)
		}
		return withDesc(fmt.Sprintf("%s must be %s, not %s", sp.path, strings.Join(want, " or "), kindOf(k.Got)), sp.schema)
	case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum:
		return sp.outOfRange()
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s must be one of %s, not %s", sp.path, strings.Join(want, ", "), sp.literal())
	}
	return withDesc(fmt.Sprintf("%s does not meet its schema's %s", sp.path, strings.Join(k.KeywordPath(), "/")), sp.schema)
}

// outOfRange says a number is not what the schema allows, with its bounds.
func (sp spot) outOfRange() string {
	typ, _ := sp.schema["type"].(string)
	text := fmt.Sprintf("%s must be %s%s, not %s", sp.path, wantOf(typ), rangeText(sp.schema["minimum"], sp.schema["maximum"]), sp.literal())
	return withDesc(text, sp.schema)
}

// literal quotes the value back as the caller wrote it, cut short.
func (sp spot) literal() string {
	switch v := sp.value.(type) {
	case string:
		return short(strconv.Quote(v))
	case json.Number:
		return short(v.String())
	}
	b, _ := json.Marshal(sp.value)
	return short(string(b))
}

func withDesc(text string, schema map[string]any) string {
	if d, _ := schema["description"].(string); d != "" {
		return text + ": " + d
	}
	return text
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func rangeText(lo, hi any) string {
	f := func(v any) string {
		switch n := v.(type) {
		case json.Number:
			return n.String()
		case *big.Rat:
			return n.RatString()
		}
		return fmt.Sprint(v)
	}
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

// wantOf and kindOf name JSON types for a refusal: what the schema wants,
// and what the caller sent.
func wantOf(typ string) string {
	switch typ {
	case "integer":
		return "a whole number"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "string":
		return "a string"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return typ
}

func kindOf(got string) string {
	switch got {
	case "null":
		return "null"
	case "integer", "number":
		return "a number"
	case "boolean":
		return "a boolean"
	case "array", "object":
		return "an " + got
	}
	return "a " + got
}

// short keeps what a refusal quotes back from the caller short.
func short(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The tools' schemas as registered: each compiled the way mcp-go compiles
// it, checked to refuse unknown names, and each input schema held as its
// JSON (argcheck.go says why the checks are needed).

// checkToolSchemas compiles the input and output schemas of every tool as
// registered (after WithStrictInputSchemaDefault), with the compiler mcp-go
// uses, and checks that every object of every input schema refuses unknown
// names. It returns the input schemas by tool name.
func checkToolSchemas(tools map[string]*mcpserver.ServerTool) (map[string]toolSchema, error) {
	out := map[string]toolSchema{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		tool := tools[name].Tool
		in, ok := inputSchemaJSON(tool)
		if !ok {
			errs = append(errs, fmt.Errorf("tool %s: no input schema: mcp-go would not check its arguments", name))
			continue
		}
		compiled, raw, err := compileSchema(name, "input", in)
		if err == nil {
			err = strictObjects(raw, "")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %s: input schema: %w", name, err))
			continue
		}
		out[name] = toolSchema{in: compiled, raw: raw}
		if o, ok := outputSchemaJSON(tool); ok {
			if _, _, err := compileSchema(name, "output", o); err != nil {
				errs = append(errs, fmt.Errorf("tool %s: output schema: %w", name, err))
			}
		}
	}
	return out, errors.Join(errs...)
}

// rawInputSchemas gives each tool its input schema as JSON, once: mcp-go
// checks a call's arguments against the schema's bytes, and for a schema
// held as a struct it marshals them again on every call (schemaJSONFor: 7%
// of the bridge's CPU at 64 clients). The bytes are what tools/list showed
// (WithStrictInputSchemaDefault's additionalProperties: false included, as
// mcp-go skips a raw schema), so nothing a host or a check sees changes.
func rawInputSchemas(list []mcpserver.ServerTool) ([]mcpserver.ServerTool, error) {
	out := make([]mcpserver.ServerTool, len(list))
	for i, st := range list {
		if len(st.Tool.RawInputSchema) == 0 {
			if st.Tool.InputSchema.AdditionalProperties == nil {
				st.Tool.InputSchema.AdditionalProperties = false
			}
			b, err := json.Marshal(st.Tool.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", st.Tool.Name, err)
			}
			st.Tool.RawInputSchema, st.Tool.InputSchema = b, mcp.ToolInputSchema{}
		}
		out[i] = st
	}
	return out, nil
}

// inputSchemaJSON and outputSchemaJSON pick the schema mcp-go checks
// (schemaJSONFor and outputSchemaJSONFor in mcp-go); false: it checks none.
func inputSchemaJSON(tool mcp.Tool) ([]byte, bool) {
	if len(tool.RawInputSchema) > 0 {
		return tool.RawInputSchema, true
	}
	s := tool.InputSchema
	if s.Type == "" && len(s.Properties) == 0 && len(s.Required) == 0 && s.AdditionalProperties == nil {
		return nil, false
	}
	b, err := json.Marshal(s)
	return b, err == nil
}

func outputSchemaJSON(tool mcp.Tool) ([]byte, bool) {
	if len(tool.RawOutputSchema) > 0 {
		return tool.RawOutputSchema, true
	}
	s := tool.OutputSchema
	if s.Type == "" && len(s.Properties) == 0 && len(s.Required) == 0 {
		return nil, false
	}
	b, err := json.Marshal(s)
	return b, err == nil
}

// compileSchema is mcp-go's compileSchema: the same decoder, a fresh
// compiler (draft 2020-12 unless $schema says otherwise) and an in-memory
// URL, so what compiles here compiles there.
func compileSchema(tool, which string, schemaJSON []byte) (*jsonschema.Schema, any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	url := fmt.Sprintf("mem:///mcp-go/tools/%s/%s-schema.json", tool, which)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, fmt.Errorf("register: %w", err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("compile: %w", err)
	}
	return compiled, doc, nil
}

// strictObjects fails unless every object schema within s (properties,
// items, $defs and the combinators) says additionalProperties: false.
func strictObjects(s any, at string) error {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	if isObjectSchema(m) && m["additionalProperties"] != false {
		where := at
		if where == "" {
			where = "the arguments"
		}
		return fmt.Errorf("%s: an object schema must say additionalProperties: false, or an unknown name would pass unchecked", where)
	}
	var errs []error
	for _, key := range []string{"properties", "$defs", "definitions"} {
		sub, _ := m[key].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(sub)) {
			errs = append(errs, strictObjects(sub[name], join(at, name)))
		}
	}
	errs = append(errs, strictObjects(m["items"], at+"[]"))
	for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		list, _ := m[key].([]any)
		for _, sub := range list {
			errs = append(errs, strictObjects(sub, at))
		}
	}
	return errors.Join(errs...)
}

func isObjectSchema(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return m["properties"] != nil
}

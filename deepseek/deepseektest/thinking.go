package deepseektest

import (
	"fmt"
	"slices"
)

// DeepSeek's thinking controls (its thinking-mode guide): thinking mode is
// on by default; {"thinking":{"type":"enabled"|"disabled"}} turns it on or
// off in both formats, and the effort is reasoning_effort (OpenAI format) or
// output_config.effort (Anthropic format). Requested efforts map onto low,
// high and max; the double accepts the names the guide lists and refuses
// others with a 400, as a parameter error.
var (
	thinkingTypes    = []string{"enabled", "disabled"}
	anthropicTypes   = []string{"enabled", "disabled", "adaptive"} // Claude Code sends adaptive
	effortNames      = []string{"minimal", "low", "medium", "high", "xhigh", "max", "ultra"}
	effortMapsTo     = map[string]string{"minimal": "low", "low": "low", "medium": "high", "high": "high", "xhigh": "high", "max": "max", "ultra": "max"}
	thinkingDisabled = "disabled"
)

// Thinking is the thinking type a request set ("" when it set none).
func (r Request) Thinking() string {
	t, _ := r.JSON["thinking"].(map[string]any)
	s, _ := t["type"].(string)
	return s
}

// Effort is the effort a request asked for, in either format ("" when none).
func (r Request) Effort() string {
	if s, ok := r.JSON["reasoning_effort"].(string); ok {
		return s
	}
	oc, _ := r.JSON["output_config"].(map[string]any)
	s, _ := oc["effort"].(string)
	return s
}

// ThinksAt is the effort the model thinks at for r, as DeepSeek maps it:
// "off" when thinking is disabled, else low, high or max (high by default).
func (r Request) ThinksAt() string {
	if r.Thinking() == thinkingDisabled {
		return "off"
	}
	if e, ok := effortMapsTo[r.Effort()]; ok {
		return e
	}
	return "high"
}

// badThinking says what is wrong with a request's thinking controls.
func badThinking(r Request, side Side) string {
	if raw, ok := r.JSON["thinking"]; ok {
		types := thinkingTypes
		if side == SideAnthropic {
			types = anthropicTypes
		}
		if _, isObj := raw.(map[string]any); !isObj || !slices.Contains(types, r.Thinking()) {
			return fmt.Sprintf("thinking.type must be one of %v", types)
		}
	}
	if e := r.Effort(); e != "" && !slices.Contains(effortNames, e) {
		return fmt.Sprintf("effort %q is not one of %v", e, effortNames)
	}
	if _, ok := r.JSON["reasoning_effort"]; ok && r.Effort() == "" {
		return "reasoning_effort must be a string"
	}
	return ""
}

// ModelIDs are the model ids the double serves, as GET /models lists them.
func (s *Server) ModelIDs() []string {
	ids := make([]string, 0, len(s.models))
	for id := range s.models {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

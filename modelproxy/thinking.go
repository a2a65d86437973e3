package modelproxy

import "encoding/json"

// DisableThinking makes every later model call of jobID run with DeepSeek's
// thinking mode off. Claude Code cannot ask for that itself: with
// MAX_THINKING_TOKENS=0 (2.1.328) it leaves the thinking block out, and
// DeepSeek then thinks by default. The proxy sets
// {"thinking":{"type":"disabled"}}, the switch DeepSeek's Anthropic format
// documents. Unknown ids are ignored.
func (p *Proxy) DisableThinking(jobID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, ok := p.jobs[jobID]; ok {
		j.noThinking = true
	}
}

// withoutThinking returns body with thinking disabled and without a
// thinking effort (Claude Code sends output_config.effort high regardless);
// a body that is not a JSON object is returned as it is (the upstream
// refuses it).
func withoutThinking(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	m["thinking"] = json.RawMessage(`{"type":"disabled"}`)
	var oc map[string]json.RawMessage
	if raw, ok := m["output_config"]; ok && json.Unmarshal(raw, &oc) == nil && oc != nil {
		delete(oc, "effort")
		if len(oc) == 0 {
			delete(m, "output_config")
		} else if b, err := json.Marshal(oc); err == nil {
			m["output_config"] = b
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

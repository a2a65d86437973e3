package deepseektest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// record reads and records a request; the returned index is its slot.
func (s *Server) record(side Side, r *http.Request) (Request, int, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	req := Request{
		Side: side, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Time: time.Now(),
	}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		req.JSON = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := 0
	if side == SideAnthropic {
		s.anthropicReqs = append(s.anthropicReqs, req)
		idx = len(s.anthropicReqs) - 1
	} else {
		s.openaiReqs = append(s.openaiReqs, req)
		idx = len(s.openaiReqs) - 1
	}
	if s.reqLog != nil {
		s.logRequestLocked(req)
	}
	if err == nil && len(body) > maxBody {
		err = errors.New("request body too large")
	}
	return req, idx, err
}

// take pops the next turn of a side (or a default) and marks the recorded
// request accordingly.
func (s *Server) take(side Side, idx int, sideRequest bool) Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.openaiQ
	reqs := s.openaiReqs
	if side == SideAnthropic {
		q, reqs = &s.anthropicQ, s.anthropicReqs
	}
	if sideRequest {
		reqs[idx].SideRequest = true
		return s.sideTurn
	}
	if len(*q) == 0 {
		return s.defaultTurn
	}
	t := (*q)[0]
	*q = (*q)[1:]
	reqs[idx].Scripted = true
	return t
}

// resolve runs a Func turn outside the lock.
func resolve(t Turn, r Request) Turn {
	if t.Func != nil {
		t = t.Func(r)
		t.Func = nil
	}
	return t
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s%06d", prefix, s.nextID)
}

// logRequestLocked writes the request-log line; s.mu is held.
func (s *Server) logRequestLocked(r Request) {
	h := map[string]string{}
	for k, v := range r.Header {
		switch strings.ToLower(k) {
		case "authorization", "x-api-key":
			h[k] = "[redacted]"
		default:
			h[k] = strings.Join(v, ", ")
		}
	}
	var tools []string
	ts, _ := r.JSON["tools"].([]any)
	for _, t := range ts {
		tm, _ := t.(map[string]any)
		if n, ok := tm["name"].(string); ok {
			tools = append(tools, n)
		}
	}
	line := mustJSON(map[string]any{
		"time": r.Time.UTC().Format(time.RFC3339Nano), "side": r.Side, "path": r.Path, "query": r.RawQuery,
		"model": r.Model(), "stream": r.Stream(), "max_tokens": r.MaxTokens(), "tools": tools,
		"messages": len(r.Messages()), "bytes": len(r.Body), "headers": h,
	})
	_, _ = io.WriteString(s.reqLog, line+"\n")
}

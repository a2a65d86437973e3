package deepseektest

import (
	"fmt"
	"net"
	"net/http"
)

// deepseekError is DeepSeek's error body (used on both sides: the Anthropic
// endpoint answers errors in the same shape).
// The field order is DeepSeek's: message, type, param, code.
func deepseekError(message, typ string) errorBody {
	return errorBody{Error: errorDetail{Message: message, Type: typ, Code: "invalid_request_error"}}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    string `json:"code"`
}

// documentedError is the body DeepSeek sends for status.
func documentedError(status int) errorBody {
	switch status {
	case 400:
		return deepseekError("Invalid request: the request body has an invalid format", "invalid_request_error")
	case 401:
		return deepseekError("Authentication Fails, Your api key: ****-key is invalid", "authentication_error")
	case 402:
		return deepseekError("Insufficient Balance", "unknown_error")
	case 422:
		return deepseekError("Invalid parameters: max_tokens must be a positive integer", "invalid_request_error")
	case 429:
		return deepseekError("Rate Limit Reached: you are sending requests too quickly, please slow down", "rate_limit_error")
	case 500:
		return deepseekError("Server Error: the server had an internal error, please retry after a brief wait", "server_error")
	case 503:
		return deepseekError("Server Overloaded: the server is overloaded due to high traffic, please retry after a brief wait", "server_error")
	}
	return deepseekError(http.StatusText(status), "unknown_error")
}

// MissingReasoningBody is the exact 400 body DeepSeek sends when an assistant
// tool-call message comes back without its reasoning_content.
const MissingReasoningBody = `{"error":{"message":"The reasoning_content in the thinking mode must be passed back to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`

// writeErrorTurn answers an error turn.
func writeErrorTurn(w http.ResponseWriter, t Turn) {
	if t.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(t.RetryAfter))
	}
	if t.ErrorBody != "" {
		writeRaw(w, t.Status, t.ErrorBody)
		return
	}
	writeJSON(w, t.Status, documentedError(t.Status))
}

// reset drops the connection with a TCP RST and no response.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("deepseektest: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// cut flushes what was written and closes the connection mid-body.
func cut(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	_ = conn.Close()
}

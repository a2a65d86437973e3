package deepseektest

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// admit records a messages request of a side and makes the checks both
// endpoints make, in DeepSeek's order: the key (401), the body size (413), the
// JSON (400), the model (400, modelOK decides) and a non-empty messages list
// (400). ok is false when it has answered the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, side Side, modelOK func(string) bool) (req Request, idx int, ok bool) {
	req, idx, err := s.record(side, r)
	if ok, msg := s.authorized(r, side); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return req, idx, false
	}
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, deepseekError(err.Error(), "invalid_request_error"))
		return req, idx, false
	}
	if req.JSON == nil {
		writeJSON(w, http.StatusBadRequest, deepseekError("Failed to deserialize the JSON body into the target type", "invalid_request_error"))
		return req, idx, false
	}
	if !modelOK(req.Model()) {
		writeJSON(w, http.StatusBadRequest, deepseekError("Model Not Exist", "invalid_request_error"))
		return req, idx, false
	}
	if len(req.Messages()) == 0 {
		writeJSON(w, http.StatusBadRequest, deepseekError("messages: must not be empty", "invalid_request_error"))
		return req, idx, false
	}
	if msg := badThinking(req, side); msg != "" {
		writeJSON(w, http.StatusUnprocessableEntity, deepseekError(msg, "invalid_request_error"))
		return req, idx, false
	}
	return req, idx, true
}

// handleModels answers GET /models as DeepSeek does: the accepted model ids,
// sorted, as an OpenAI-style list (what `bridgectl doctor` uses to check a
// key). A wrong key gets the same 401 as the chat endpoint.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if ok, msg := s.authorized(r, SideOpenAI); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	ids := slices.Sorted(maps.Keys(s.models)) // fixed once the server runs
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, len(ids))}
	for i, id := range ids {
		list.Data[i] = model{ID: id, Object: "model", OwnedBy: "deepseek"}
	}
	writeJSON(w, http.StatusOK, list)
}

// handleBalance answers GET /user/balance in DeepSeek's documented shape.
func (s *Server) handleBalance(w http.ResponseWriter, r *http.Request) {
	if ok, msg := s.authorized(r, SideOpenAI); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return
	}
	type info struct {
		Currency        string `json:"currency"`
		TotalBalance    string `json:"total_balance"`
		GrantedBalance  string `json:"granted_balance"`
		ToppedUpBalance string `json:"topped_up_balance"`
	}
	writeJSON(w, http.StatusOK, struct {
		IsAvailable  bool   `json:"is_available"`
		BalanceInfos []info `json:"balance_infos"`
	}{IsAvailable: s.balance != "0.00", BalanceInfos: []info{{Currency: "CNY", TotalBalance: s.balance, GrantedBalance: "0.00", ToppedUpBalance: s.balance}}})
}

// authorized checks the key. Anthropic side also accepts x-api-key.
func (s *Server) authorized(r *http.Request, side Side) (ok bool, msg string) {
	if side == SideAnthropic {
		if k := r.Header.Get("x-api-key"); k != "" {
			return s.keyMatches(k)
		}
	}
	h := r.Header.Get("Authorization")
	k, found := strings.CutPrefix(h, "Bearer ")
	if !found || k == "" {
		return false, "Authentication Fails (auth header format should be Bearer sk-...)"
	}
	return s.keyMatches(k)
}

func (s *Server) keyMatches(k string) (bool, string) {
	if k == s.key {
		return true, ""
	}
	tail := k
	if len(tail) > 4 {
		tail = tail[len(tail)-4:]
	}
	return false, "Authentication Fails, Your api key: ****" + tail + " is invalid"
}

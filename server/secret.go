package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// SecretReloadRoute is the socket's route that makes the daemon read its
// path secret again (Options.ReloadSecret) and admit only the new one from
// then on. It is on the unix socket alone, whose file mode is the owner's
// credential; the answer never holds the secret.
const SecretReloadRoute = "/secret/reload"

// SecretReload is the route's answer. Changed is false when the secret read
// again is the one already served (MCP_PATH_SECRET set in the daemon's
// environment wins over its .env).
type SecretReload struct {
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
}

// setSecret swaps the secret the HTTP endpoint admits: one atomic store, so a
// request is checked against the old secret or the new one, never a mix,
// and the old one is refused from the moment the store returns.
func (s *Server) setSecret(secret string) {
	if secret == "" {
		s.secretHash.Store(nil)
		return
	}
	h := sha256.Sum256([]byte(secret))
	s.secretHash.Store(&h)
}

// secretOK compares in constant time; hashing first makes the time
// independent of the length of the guess too.
func (s *Server) secretOK(got string) bool {
	want := s.secretHash.Load()
	if got == "" || want == nil {
		return false
	}
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], want[:]) == 1
}

func (s *Server) secretRoutes(r chi.Router) {
	if s.o.ReloadSecret != nil {
		r.Post(SecretReloadRoute, s.reloadSecret)
	}
}

// reloadSecret is POST /secret/reload on the socket. Calls already admitted
// and agent jobs are untouched: only what the next request must present changes.
func (s *Server) reloadSecret(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	secret, err := s.o.ReloadSecret()
	if err != nil {
		s.log.Warn().Err(err).Msg("path secret not reloaded")
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(SecretReload{Error: err.Error()})
		return
	}
	changed := !s.secretOK(secret)
	s.setSecret(secret)
	s.log.Info().Bool("changed", changed).Msg("path secret reloaded: the old URL is refused from now on")
	json.NewEncoder(w).Encode(SecretReload{Changed: changed})
}

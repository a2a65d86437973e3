package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// POST /secret/reload on the socket swaps the secret at once: the old URL is
// a 404 from the answer on, the new one is served; a secret the daemon
// cannot read keeps the old one; the TCP router has no such route; and
// requests checked while the secret swaps see the old or the new one, never
// neither (run with -race).
func TestReloadSecretSwapsAtOnce(t *testing.T) {
	const newSecret = "new-secret-fedcba9876543210"
	next, nextErr := newSecret, error(nil)
	var mu sync.Mutex
	te := newTestEnv(t, Options{ReloadSecret: func() (string, error) { mu.Lock(); defer mu.Unlock(); return next, nextErr }})
	sock := httptest.NewServer(te.srv.socket)
	t.Cleanup(sock.Close)
	reload := func() (int, SecretReload) {
		r := post(t, sock.URL+SecretReloadRoute, "", nil)
		var ans SecretReload
		json.Unmarshal(r.body, &ans)
		return r.status, ans
	}
	for _, tt := range []struct {
		name       string
		secret     string
		err        error
		wantStatus int
		wantAns    SecretReload
		admitted   string
		refused    string
	}{
		{"a bad secret keeps the old one", "", errors.New("MCP_PATH_SECRET is 5 characters"), http.StatusConflict, SecretReload{Error: "MCP_PATH_SECRET is 5 characters"}, testSecret, newSecret},
		{"new secret", newSecret, nil, http.StatusOK, SecretReload{Changed: true}, newSecret, testSecret},
		{"the same again", newSecret, nil, http.StatusOK, SecretReload{Changed: false}, newSecret, testSecret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			next, nextErr = tt.secret, tt.err
			mu.Unlock()
			if code, ans := reload(); code != tt.wantStatus || ans != tt.wantAns {
				t.Fatalf("reload: %d %+v, want %d %+v", code, ans, tt.wantStatus, tt.wantAns)
			}
			base := te.http.URL + "/mcp/"
			if r := post(t, base+tt.refused, initializeBody(1), nil); r.status != http.StatusNotFound {
				t.Errorf("refused secret: %d, want 404", r.status)
			}
			if r := post(t, base+tt.admitted, initializeBody(1), nil); r.status != http.StatusOK {
				t.Errorf("admitted secret: %d %s", r.status, r.body)
			}
		})
	}
	if r := post(t, te.http.URL+SecretReloadRoute, "", nil); r.status != http.StatusNotFound {
		t.Errorf("the TCP router answers %s: %d, want 404", SecretReloadRoute, r.status)
	}
	if strings.Contains(te.logs.String(), newSecret) {
		t.Error("the log holds the new secret")
	}

	// Checks while the secret swaps back and forth: no data race (-race).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // owner: this test; joined below
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			te.srv.setSecret([]string{testSecret, newSecret}[i%2])
		}
	}()
	for range 2000 {
		te.srv.secretOK(testSecret)
	}
	close(stop)
	wg.Wait()
}

package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestServeDebugRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		t.Run(addr, func(t *testing.T) {
			var logBuf bytes.Buffer
			stop := ServeDebug(t.Context(), addr, zerolog.New(&logBuf))
			stop()
			if !strings.Contains(logBuf.String(), "debug listener not started") {
				t.Fatalf("no refusal logged for %q: %s", addr, logBuf.String())
			}
			if strings.Contains(logBuf.String(), "debug_addr") {
				t.Fatalf("a listener was reported for %q: %s", addr, logBuf.String())
			}
		})
	}
}

func TestServeDebugOffWhenEmpty(t *testing.T) {
	var logBuf bytes.Buffer
	ServeDebug(t.Context(), "", zerolog.New(&logBuf))()
	if logBuf.Len() != 0 {
		t.Fatalf("empty addr logged: %s", logBuf.String())
	}
}

func TestServeDebugServesRuntimeAndProfiles(t *testing.T) {
	var logBuf bytes.Buffer
	stop := ServeDebug(t.Context(), "127.0.0.1:0", zerolog.New(&logBuf))
	t.Cleanup(stop)
	var line struct {
		Addr string `json:"debug_addr"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(logBuf.Bytes()), &line); err != nil || line.Addr == "" {
		t.Fatalf("no debug_addr in the log line %q: %v", logBuf.String(), err)
	}
	base := "http://" + line.Addr

	resp, err := http.Get(base + "/debug/runtime")
	if err != nil {
		t.Fatal(err)
	}
	var st RuntimeStats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/debug/runtime: status %d, %v", resp.StatusCode, err)
	}
	if st.Goroutines < 2 || st.HeapInuse == 0 || st.Sys == 0 {
		t.Fatalf("implausible stats %+v", st)
	}

	cases := []struct {
		path     string
		status   int
		contains string
	}{
		{"/debug/pprof/goroutine?debug=1", 200, "goroutine profile:"},
		{"/debug/pprof/heap", 200, ""},
		{"/debug/pprof/nosuch", 404, ""},
		{"/debug/pprof/profile?seconds=0", 400, "seconds"},
		{"/debug/pprof/profile?seconds=61", 400, "seconds"},
		{"/debug/runtime/x", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			resp, err := http.Get(base + c.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !bytes.Contains(body, []byte(c.contains)) {
				t.Fatalf("status %d body %.200q, want %d containing %q", resp.StatusCode, body, c.status, c.contains)
			}
		})
	}

	stop()
	if c, err := net.Dial("tcp", line.Addr); err == nil {
		c.Close()
		t.Fatalf("debug listener still accepts after stop")
	}
}

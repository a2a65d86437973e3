package main

import (
	"net"
	"os"
	"strings"
	"testing"
)

// appendEnv adds lines to the world's .env file.
func (w *world) appendEnv(lines ...string) {
	w.t.Helper()
	f, err := os.OpenFile(w.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		w.t.Fatal(err)
	}
}

// deadURL is a loopback URL nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// smoke against a dead upstream prints each failed attempt as it comes, not
// only the verdict after the last retry.
func TestSmokeShowsEachAttempt(t *testing.T) {
	w := newWorld(t)
	w.appendEnv("DEEPSEEK_BASE_URL="+deadURL(t), "DEEPSEEK_TIMEOUT_MS=4000")
	w.must("start")
	out, _, code := w.ctl("smoke")
	if code == 0 || !strings.Contains(out, "FAIL deepseek_flash") {
		t.Fatalf("smoke against a dead upstream: exit %d\n%s", code, out)
	}
	t.Logf("smoke:\n%s", out)
	if n := strings.Count(out, "deepseek_flash: attempt "); n < 2 {
		t.Fatalf("%d attempt lines, want one per retry:\n%s", n, out)
	}
	if !strings.Contains(out, "deepseek_flash: attempt 1 failed (") || !strings.Contains(out, "); retrying in ") {
		t.Fatalf("attempt lines:\n%s", out)
	}
}

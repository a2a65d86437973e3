// Command fakecloudflared stands in for cloudflared in bridgectl's tests: it
// prints the log lines the real binary prints for a quick or named tunnel
// (the trycloudflare URL box, "Registered tunnel connection", edge errors),
// optionally forwards HTTP to the origin on a loopback port the way the edge
// would (Host = the public hostname), and stops on SIGTERM.
//
// Environment knobs:
//
//	FAKE_CLOUDFLARED_MODE        ok (default) | edge-error (never registers) |
//	                             api-error (quick tunnel request fails, exit 1) |
//	                             no-url (registers, prints no URL)
//	FAKE_CLOUDFLARED_DELAY_MS    pause between log lines (default 30)
//	FAKE_CLOUDFLARED_PROXY_FILE  if set: serve a loopback reverse proxy to the
//	                             origin and write its address to this file
//	FAKE_CLOUDFLARED_ORIGIN      origin for a named tunnel (its ingress lives at Cloudflare)
//	FAKE_CLOUDFLARED_RECORD      if set: write argv and environment to this file (JSON)
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && (args[0] == "--version" || args[0] == "version") {
		fmt.Println("cloudflared version 2025.11.1 (built 2025-11-07-16:59 UTC)")
		return
	}
	if f := os.Getenv("FAKE_CLOUDFLARED_RECORD"); f != "" {
		b, _ := json.Marshal(map[string]any{"args": args, "env": os.Environ()})
		os.WriteFile(f, b, 0o600)
	}
	delay := 30 * time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("FAKE_CLOUDFLARED_DELAY_MS")); err == nil {
		delay = time.Duration(v) * time.Millisecond
	}
	origin, tokenFile, named := "", "", false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--url":
			if i+1 < len(args) {
				origin = args[i+1]
				i++
			}
		case "--token-file":
			if i+1 < len(args) {
				tokenFile = args[i+1]
				i++
			}
		case "run":
			named = true
		}
	}
	if len(args) == 0 || args[0] != "tunnel" {
		fmt.Fprintln(os.Stderr, "fakecloudflared: want `tunnel --url URL` or `tunnel run --token-file FILE`")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)

	l := &logger{delay: delay}
	mode := os.Getenv("FAKE_CLOUDFLARED_MODE")
	host := ""
	if named {
		tok, err := os.ReadFile(tokenFile)
		if err != nil || strings.TrimSpace(string(tok)) == "" {
			l.log("ERR", "Provided Tunnel token is not valid.")
			os.Exit(1)
		}
		origin = os.Getenv("FAKE_CLOUDFLARED_ORIGIN")
		l.log("INF", "Starting tunnel tunnelID=6ff42ae2-765d-4adf-8112-31c55c1551ef")
	} else {
		if origin == "" {
			l.log("ERR", "the --url flag is required for a quick tunnel")
			os.Exit(1)
		}
		l.log("INF", "Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee, are subject to the Cloudflare Online Services Terms of Use (https://www.cloudflare.com/website-terms/), and Cloudflare reserves the right to investigate your use of Tunnels for violations of such terms. If you intend to use Tunnels in production you should use a pre-created named tunnel by following: https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/do-more-with-tunnels/local-management/create-local-tunnel/")
		l.log("INF", "Requesting new quick Tunnel on trycloudflare.com...")
		if mode == "api-error" {
			l.log("ERR", `Error requesting new quick Tunnel error="failed to request quick Tunnel: Post \"https://api.trycloudflare.com/tunnel\": dial tcp: lookup api.trycloudflare.com on 127.0.0.53:53: server misbehaving"`)
			l.log("INF", "failed to request quick Tunnel")
			os.Exit(1)
		}
		host = quickName() + ".trycloudflare.com"
		if mode != "no-url" {
			box := "+" + strings.Repeat("-", 92) + "+"
			l.log("INF", box)
			l.log("INF", "|  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |")
			l.log("INF", fmt.Sprintf("|  %-88s  |", "https://"+host))
			l.log("INF", box)
		}
	}
	l.log("INF", "Cannot determine default configuration path. No file [config.yml config.yaml] in [~/.cloudflared ~/.cloudflare-warp ~/cloudflare-warp /etc/cloudflared /usr/local/etc/cloudflared]")
	l.log("INF", "Version 2025.11.1 (Checksum 5b0e1c1f4b4f0c3e9a1f8a7d2f6f1d0b0d2a0f3e4c6b8a9d0e1f2a3b4c5d6e7f)")
	l.log("INF", "GOOS: linux, GOVersion: go1.24.9, GoArch: amd64")
	l.log("INF", fmt.Sprintf("Settings: map[ha-connections:1 no-autoupdate:true protocol:quic url:%s]", origin))
	l.log("INF", "cloudflared will not automatically update if installed by a package manager.")
	l.log("INF", "Generated Connector ID: 0f4c2b8e-3d1a-4e5f-9a7b-6c8d9e0f1a2b")
	l.log("INF", "Initial protocol quic")
	l.log("INF", "Starting metrics server on 127.0.0.1:20241/metrics")

	if p := os.Getenv("FAKE_CLOUDFLARED_PROXY_FILE"); p != "" && origin != "" {
		if err := serveProxy(p, origin, host); err != nil {
			l.log("ERR", "fake edge proxy: "+err.Error())
			os.Exit(1)
		}
	}

	ips := []string{"198.41.200.13", "198.41.192.227", "198.41.200.233", "198.41.192.107"}
	if mode == "edge-error" {
		go func() {
			for i := 0; ; i++ {
				ip := ips[i%len(ips)]
				l.log("ERR", fmt.Sprintf(`Failed to dial a quic connection error="failed to dial to edge with quic: timeout: no recent network activity" connIndex=0 event=0 ip=%s`, ip))
				l.log("INF", fmt.Sprintf("Retrying connection in up to %ds connIndex=0 event=0 ip=%s", 1<<min(i, 5), ip))
				l.log("ERR", fmt.Sprintf(`Unable to establish connection with Cloudflare edge error="DialContext error: dial tcp %s:7844: i/o timeout" connIndex=0 event=0 ip=%s`, ip, ip))
				time.Sleep(20 * delay)
			}
		}()
	} else {
		locs := []string{"ams01", "fra08", "ams16", "fra19"}
		for i := 0; i < 4; i++ {
			l.log("INF", fmt.Sprintf("Registered tunnel connection connIndex=%d connection=%s event=0 ip=%s location=%s protocol=quic", i, uuid(), ips[i], locs[i]))
		}
	}
	sig := <-sigs
	l.delay = 0
	l.log("INF", fmt.Sprintf("Initiating graceful shutdown due to signal %s ...", sig))
	if mode != "edge-error" {
		for i := 0; i < 4; i++ {
			l.log("INF", fmt.Sprintf("Unregistered tunnel connection connIndex=%d event=0 ip=%s", i, ips[i]))
		}
	}
	l.log("INF", "Tunnel server stopped")
	l.log("INF", "Metrics server stopped")
}

type logger struct{ delay time.Duration }

func (l *logger) log(level, msg string) {
	time.Sleep(l.delay)
	fmt.Fprintf(os.Stderr, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339), level, msg)
}

// serveProxy forwards loopback HTTP to origin as the edge would: the request
// keeps its path and carries the public hostname as Host.
func serveProxy(addrFile, origin, host string) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		if host != "" {
			r.Host = host
		}
	}
	rp.FlushInterval = -1
	go http.Serve(ln, bufferBody(rp))
	return os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600)
}

// maxEdgeBody is the largest request body the fake edge forwards (Cloudflare's
// upload limit on the free plan).
const maxEdgeBody = 100 << 20

// bufferBody reads the whole request body before next forwards it: when the
// origin answers fast, net/http (HTTP/1.1) closes a streamed request body
// while the proxy's Transport may still read it, and the origin connection
// and the response are cut; a body held in memory has no such race.
// (golang/go#40747: the HTTP/1 server does not support reading the inbound
// body once the response has begun.)
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxEdgeBody+1))
			if err != nil {
				http.Error(w, "fake edge: reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			if len(body) > maxEdgeBody {
				http.Error(w, "fake edge: request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		next.ServeHTTP(w, r)
	})
}

var words = []string{"quiet", "river", "amber", "falcon", "gentle", "harbor", "maple", "orbit", "cedar", "lunar", "meadow", "signal"}

func quickName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%s-%s-%s", words[int(b[0])%len(words)], words[int(b[1])%len(words)], words[int(b[2])%len(words)], hex.EncodeToString(b[3:]))
}

func uuid() string {
	h, _ := ids.Hex(16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

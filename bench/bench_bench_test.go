package bench

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// The Go benchmarks run client, bridge handler and double in one process:
// B/op and allocs/op count all three. Their difference (bridge − floor) is
// what a deepseek_flash call through the bridge allocates beyond a direct
// call; `make bench` prints them before the table.

func BenchmarkFlashThroughBridge(b *testing.B) {
	mcpURL, _ := bridgeUnderTestB(b)
	c := NewClient(mcpURL, &http.Client{Transport: newTransport(1)})
	if err := c.Initialize(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := flashCall(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFlashFloor(b *testing.B) {
	_, d := bridgeUnderTestB(b)
	f, err := NewFloorClient(d.URL(), d.Key(), deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, flashTask, &http.Client{Transport: newTransport(1)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Do(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFlashThroughMinimalProxy(b *testing.B) {
	_, d := bridgeUnderTestB(b)
	mp, err := NewMinimalProxy(d.URL(), d.Key(), deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, &http.Client{})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(mp)
	b.Cleanup(hs.Close)
	c := NewClient(hs.URL, &http.Client{Transport: newTransport(1)})
	if err := c.Initialize(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := flashCall(b.Context(), c); err != nil {
			b.Fatal(err)
		}
	}
}

package bench

import (
	"net/http"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// The Go benchmarks run client, bridge handler and double in one process:
// B/op and allocs/op count all three. Their difference (bridge − floor) is
// what a deepseek_flash call through the bridge allocates beyond a direct
// call; `make bench` prints them before the table.

func BenchmarkFlashThroughBridge(b *testing.B) {
	mcpURL, _ := bridgeUnderTestB(b)
	benchFlashCalls(b, mcpURL)
}

// benchFlashCalls initializes one MCP client of url and times its
// deepseek_flash calls.
func benchFlashCalls(b *testing.B, url string) {
	c := NewClient(url, &http.Client{Transport: newTransport(1)})
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
	benchFlashCalls(b, minimalProxyUnderTest(b, d))
}

// Package e2e holds the end-to-end tests of the bridge: real `bridge serve`
// processes on loopback, driven by MCP clients no one here wrote (the official
// Go SDK, the TypeScript SDK under Node, the MCP conformance suite), with the
// DeepSeek double standing in for the API.
//
// The package has no non-test code. Its helpers (see main_test.go) are the API
// every e2e test builds on:
//
//	binary(t, "bridge")                  // built once per `go test` run
//	d := startDouble(t)                  // *deepseektest.Server, closed in t.Cleanup
//	b := startBridge(t, doubleEnv(d))    // real process, PORT=0, temp state dir
//	cs := goSDKClient(t, b.URL())        // *mcp.ClientSession (official Go SDK)
package e2e

// Package bridge is the root of deepseek-mcp-bridge: it holds only repository-wide
// tests (such as the package-doc check). The daemon lives in cmd/bridge, the
// owner's CLI in cmd/bridgectl; see docs/ARCHITECTURE.md.
package bridge

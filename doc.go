// Package bridge is the root of deepseek-mcp-bridge: it holds only repository-wide
// tests (package docs, file sizes, import layers). The daemon is package
// daemon, run by cmd/bridge; the owner's CLI is cmd/bridgectl; see
// docs/ARCHITECTURE.md.
package bridge

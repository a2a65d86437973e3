#!/usr/bin/env bash
# Proves the tests never touch the bridge of whoever runs them. It makes an
# owner's HOME, runs `bridgectl setup` there against a DeepSeek double on a
# base URL no test uses, leaves that daemon serving, runs the given command
# (default: make test) with HOME pointing at the owner's HOME, and then checks
# the daemon is the same process, still answering, never told to stop, and
# that the owner's double got no request from the tests.
#
# Usage: scripts/owner-check.sh [COMMAND...]     e.g. scripts/owner-check.sh make check
# OWNER_PORT (default 8787, the bridge's default) is the owner daemon's port.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -gt 0 ] || set -- make test
port=${OWNER_PORT:-8787}

log() { printf 'owner-check: %s\n' "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

make --no-print-directory build >/dev/null
# The owner's daemon runs agent jobs with the project's pinned Claude Code
# (doctor, run by setup, fails without one).
scripts/install.sh claude
owner=$(mktemp -d /tmp/bridge-owner-XXXXXX)
double_pid=""
cleanup() {
  HOME="$owner/home" "$root/bin/bridgectl" stop >/dev/null 2>&1 || true
  [ -n "$double_pid" ] && kill "$double_pid" 2>/dev/null || true
  rm -rf "$owner"
}
trap cleanup EXIT

mkdir -p "$owner/home" "$owner/work"
# Go's caches stay the runner's: an owner's HOME is theirs, not a cold cache.
export GOCACHE GOMODCACHE GOPATH GOENV
GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH) GOENV=$(go env GOENV)
# The owner's shell: no XDG overrides, no bridge settings of the runner's.
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_DATA_HOME BRIDGE_STATE_DIR BRIDGE_ENV_FILE
for v in $(compgen -e | grep -E '^(DEEPSEEK_|BRIDGE_|MCP_)' || true); do unset "$v"; done
export HOME="$owner/home"

"$root/bin/deepseek-double" --key sk-owner-check-not-a-key --log "$owner/double.log" >"$owner/double.out" 2>&1 &
double_pid=$!
for _ in $(seq 100); do grep -q '^listening ' "$owner/double.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^listening //p' "$owner/double.out")
[ -n "$base" ] || fail "the double did not start: $(cat "$owner/double.out")"

cfg="$HOME/.config/deepseek-mcp-bridge"
mkdir -p "$cfg" && chmod 700 "$cfg"
printf 'DEEPSEEK_BASE_URL=%s\nPORT=%s\n' "$base" "$port" >"$cfg/.env"
chmod 600 "$cfg/.env"
echo sk-owner-check-not-a-key | "$root/bin/bridgectl" setup --yes --key-stdin --roots "$owner/work" --approval on --tunnel none \
  >"$owner/setup.out" 2>&1 || fail "bridgectl setup: $(tail -20 "$owner/setup.out")"

state="$HOME/.local/state/deepseek-mcp-bridge"
pid_of() { { sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$state/daemon.json" 2>/dev/null || true; } | head -1; }
pid=$(pid_of)
[ -n "$pid" ] && kill -0 "$pid" || fail "no owner daemon after setup: $(tail -20 "$owner/setup.out")"
curl -fsS "http://127.0.0.1:$port/health" >/dev/null || fail "the owner daemon does not answer on :$port"
requests_before=$(wc -l <"$owner/double.log")
log "owner daemon pid $pid on :$port, state $state; running: $*"

rc=0
"$@" || rc=$?

now=$(pid_of)
[ "$now" = "$pid" ] || fail "daemon.json names pid ${now:-none}, was $pid"
kill -0 "$pid" 2>/dev/null || fail "the owner daemon (pid $pid) is gone"
curl -fsS "http://127.0.0.1:$port/health" >/dev/null || fail "the owner daemon stopped answering on :$port"
if grep -q 'shutting down\|reloading' "$state/bridge.log" 2>/dev/null; then
  fail "the owner daemon was told to stop or reload: $(grep 'shutting down\|reloading' "$state/bridge.log" | head -3)"
fi
requests_after=$(wc -l <"$owner/double.log")
[ "$requests_after" = "$requests_before" ] || fail "the owner's DeepSeek got $((requests_after - requests_before)) requests during the run"
[ $rc -eq 0 ] || fail "'$*' exited $rc (the owner daemon is untouched)"
log "passed: '$*' ran with the owner's HOME; daemon pid $pid untouched and answering"

#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 10s), one
# after the other (`go test -fuzz` takes one target and one package at a time).
# Targets are discovered from `func FuzzXxx(f *testing.F)` in *_test.go files.
# Usage: scripts/fuzz.sh [FUZZTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
found=0
while IFS= read -r dir; do
  for name in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/' | sort -u); do
    found=$((found + 1))
    echo "fuzz: ./$dir $name for $fuzztime"
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "./$dir"
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . \
           | grep -v '^./.cache/' | xargs -r -n1 dirname | sed 's|^\./||' | sort -u)
echo "fuzz: $found target(s) ran for $fuzztime each"

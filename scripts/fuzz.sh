#!/usr/bin/env bash
# Runs every fuzz target of the module, one after the other (`go test -fuzz`
# takes one target and one package at a time). Targets are discovered from
# `func FuzzXxx(f *testing.F)` in *_test.go files.
#
# Usage: scripts/fuzz.sh [BUDGET]
#   BUDGET is what `go test -fuzztime` takes: a count of executions per target
#   (`100000x`, the default, what `make test` uses) or a duration (`2m`).
#
# Why a count by default: with a duration, Go's fuzz coordinator (up to at
# least go1.26.8) can fail a target with a bare "context deadline exceeded"
# right at the end of the window, having found nothing (go.dev/issue/75804:
# it compares the parent context's error with the child's before the child
# is cancelled). A count sets no deadline, so a loaded CI machine is only
# slower, never red. For a duration budget that message alone — no
# "Failing input written to", no new file under testdata/fuzz — is reported
# as that race, and the target's corpus is replayed to make sure nothing
# reproducible was found; any other failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-100000x}
case $budget in
  *x) kind=count ;;
  *) kind=duration ;;
esac

corpus_snapshot() { # dir name
  find "$1/testdata/fuzz/$2" -type f 2>/dev/null | sort || true
}

found=0
raced=0
while IFS= read -r dir; do
  for name in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/' | sort -u); do
    found=$((found + 1))
    echo "fuzz: ./$dir $name for $budget"
    before=$(corpus_snapshot "$dir" "$name")
    log=$(mktemp)
    rc=0
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$budget" "./$dir" 2>&1 | tee "$log" || rc=$?
    if [ "$rc" -ne 0 ]; then
      after=$(corpus_snapshot "$dir" "$name")
      if [ "$kind" = duration ] && grep -q 'context deadline exceeded' "$log" \
         && ! grep -q 'Failing input written to' "$log" && [ "$before" = "$after" ]; then
        echo "fuzz: $name ended with Go's fuzztime race (go.dev/issue/75804), no input found; replaying its corpus"
        go test -count=1 -run="^${name}\$" "./$dir"
        raced=$((raced + 1))
      else
        rm -f "$log"
        echo "fuzz: $name FAILED (see above; a failing input is under ./$dir/testdata/fuzz/$name)" >&2
        exit 1
      fi
    fi
    rm -f "$log"
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . \
           | grep -v '^./.cache/' | xargs -r -n1 dirname | sed 's|^\./||' | sort -u)
if [ "$found" -eq 0 ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi
summary="fuzz: $found target(s) ran for $budget each"
if [ "$raced" -gt 0 ]; then
  summary="$summary ($raced ended by Go's fuzztime race, corpus replayed clean)"
fi
echo "$summary"

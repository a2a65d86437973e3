# deepseek-mcp-bridge — `make demo` and `make test` are the two commands a newcomer needs.
#
#   make build   bin/bridge, bin/bridgectl, bin/deepseek-double, bin/bridge-demo
#   make demo    the whole path on loopback with the DeepSeek double (no key needed):
#                a deepseek_flash call, then an agent job through the real Claude Code
#   make check   the fast loop: gofmt, vet and `go test -short ./...` (no installs, no network,
#                no real Claude Code or bubblewrap; about a minute and a half on 2 cores)
#   make test    install test deps, gofmt, vet, cross-builds, unit tests (-race),
#                end-to-end tests (Go SDK, TypeScript SDK, conformance, Claude Code), short fuzz runs
#   make vet     gofmt check, go vet (default and conformance tags), darwin/windows builds
#   make fuzz    every fuzz target for FUZZTIME each (default 2m; a count such as 1000000x also works)
#   make bench   what the bridge itself costs beside the floor (Go benchmarks, then the bridge-bench table)
#   make release dist/: bridge and bridgectl for linux, darwin and windows (amd64, arm64), one
#                archive each with VERSION stamped in, and SHA256SUMS (scripts/release.sh)
#   make clean   remove bin/, dist/ and test caches (keeps .cache/, the heavy installs)

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
BIN := bin
# Packages whose tests run under the race detector: everything but e2e (e2e's
# test process only drives child processes; E2E_RACE=1 builds those with -race instead).
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/e2e$$')
# Binaries `make build` makes when their package exists.
CMDS := bridge bridgectl deepseek-double bridge-demo
FUZZTIME ?= 2m
SHORT_FUZZTIME ?= 100000x
E2E_TIMEOUT ?= 40m
UNIT_TIMEOUT ?= 20m
# What `bridge version` and `bridgectl version` print: the git description of
# the checkout (dev outside git).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build demo check test deps vet fmt-check cross test-unit test-e2e fuzz fuzz-short bench release clean

all: build

build:
	@mkdir -p $(BIN)
	@for c in $(CMDS); do \
	  if [ -f cmd/$$c/main.go ]; then echo "go build -o $(BIN)/$$c ./cmd/$$c"; $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/$$c ./cmd/$$c; fi; \
	done

# The agent step runs the real, pinned Claude Code (installed into .cache/ by
# the script, no root needed); bubblewrap comes from `scripts/install.sh apt`
# when root or sudo is there, and without it the demo says it runs unsandboxed.
demo: build
	scripts/install.sh claude
	scripts/install.sh apt || echo "demo: bubblewrap could not be installed; the agent step runs with BRIDGE_SANDBOX=off"
	$(BIN)/bridge-demo --bin-dir $(BIN)

deps:
	scripts/install.sh all

fmt-check:
	@out=$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...)); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The fast loop before a commit. -short skips every test that runs a real
# part (the pinned Claude Code, bubblewrap, a built binary: internal/testenv),
# and the e2e package as a whole; `make test` runs them all.
check: fmt-check
	$(GO) vet ./...
	$(GO) test -short -timeout 10m ./...

cross:
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...

vet: fmt-check cross
	$(GO) vet ./...
	$(GO) vet -tags conformance ./...

# One after the other: the e2e suite is the long pole (its tests already run
# in parallel, mostly waiting on child processes), and running the race-enabled
# unit tests beside it on 2 cores only bought timing flakes, not minutes.
test: deps vet
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-e2e
	$(MAKE) --no-print-directory fuzz-short

test-unit:
	$(GO) test -race -count=1 -timeout $(UNIT_TIMEOUT) $(UNIT_PKGS)

# One line per test as it finishes, with its time (gotestsum, installed by
# scripts/install.sh); plain `go test` when it is not there.
GOTESTSUM := $(wildcard .cache/bin/gotestsum)
test-e2e:
	@echo "e2e: building the binaries under test, then one line per test as it finishes"
	E2E_RACE=$${E2E_RACE:-1} $(if $(GOTESTSUM),$(GOTESTSUM) --format testname --hide-summary=skipped --,$(GO) test) -count=1 -timeout $(E2E_TIMEOUT) ./e2e/...

fuzz-short:
	scripts/fuzz.sh $(SHORT_FUZZTIME)

fuzz:
	scripts/fuzz.sh $(FUZZTIME)

bench:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/bridge ./cmd/bridge
	$(GO) build -o $(BIN)/deepseek-double ./cmd/deepseek-double
	$(GO) build -o $(BIN)/bench-standin ./bench/standin
	$(GO) build -o $(BIN)/bench-minproxy ./bench/minproxy
	$(GO) build -o $(BIN)/bridge-bench ./cmd/bridge-bench
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=2000x ./bench/
	@echo "the exact record's start and end in a git repository of $${RECORD_BENCH_FILES:-200000} files (the secret-file walk apart):"
	$(GO) test -run='^$$' -bench=OverlayRecord -benchtime=20x ./changes/
	$(BIN)/bridge-bench --bridge $(BIN)/bridge --double $(BIN)/deepseek-double --harness $(BIN)/bench-standin --minproxy $(BIN)/bench-minproxy $(BENCH_FLAGS)

# Archives to install without a Go toolchain; RELEASE_TARGETS (GOOS/GOARCH
# ...) narrows the default six.
release:
	scripts/release.sh $(VERSION) dist $(RELEASE_TARGETS)

clean:
	rm -rf $(BIN) dist
	$(GO) clean -testcache

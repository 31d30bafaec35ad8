# proxmops build and test entry points. The README's two commands are
# `make demo` and `make test`; everything else here serves them.

GO        ?= go
BIN       := bin/proxmops
PKG       := github.com/proxmops/proxmops
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) \
             -X $(PKG)/internal/buildinfo.Commit=$(COMMIT) \
             -X $(PKG)/internal/buildinfo.Date=$(DATE)
HAVE_WEB  := $(wildcard web/package.json)
COMPAT    := pvesim/compat
FUZZTIME  ?= 10s
# GoReleaser is pinned in tools/go.mod (a module of its own, so its
# dependencies stay out of proxmops'); `go tool` builds it once and caches it.
GORELEASER ?= $(GO) tool -modfile=tools/go.mod goreleaser
# The container image needs a Docker daemon; without one, dist skips it.
DIST_SKIP ?= $(shell docker info >/dev/null 2>&1 || echo --skip=docker)

.PHONY: all build web demo test test-go test-fuzz test-web lint clean dist generate

all: build

## web: install the UI's packages and build web/embedded/dist (embedded by go:embed).
web:
ifneq ($(HAVE_WEB),)
	cd web && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build
endif

## build: the static binary, UI included.
build: web
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/proxmops

## demo: build everything and start the demo (simulated cluster + example repository + daemon + UI).
demo: build
	$(BIN) demo

## test: every test: vet and formatting, Go tests with the race detector, a short fuzz run, the UI's tests.
test: lint test-go test-fuzz test-web

## generate: the UI's API types (web/src/api/generated.ts) from internal/api and internal/vocab.
generate:
	$(GO) generate ./internal/api/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './web/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd $(COMPAT) && $(GO) vet ./...

# The compatibility tests against others' Proxmox clients are a module of
# their own (pvesim/compat), so `./...` does not reach them. A package may
# take 20 minutes: the controller's (about 2 minutes alone with -race) ran past
# Go's default 10 on a 2-core machine held at load 27 by other builds.
GOTESTTIMEOUT ?= 20m
test-go:
	$(GO) test -race -count=1 -timeout $(GOTESTTIMEOUT) ./...
	cd $(COMPAT) && $(GO) test -race -count=1 -timeout $(GOTESTTIMEOUT) ./...

# Each fuzz target runs briefly from its committed corpus (testdata/fuzz).
# A failure that wrote no failing input is Go 1.26's coordinator race at
# the -fuzztime deadline ("context deadline exceeded", golang/go#75804,
# fixed in Go 1.27): that target runs once more; a real finding fails.
test-fuzz:
	@for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null | xargs -r grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's/:func /:/'); do \
	  dir=$$(dirname $${spec%%:*}); name=$${spec##*:}; corpus=$$dir/testdata/fuzz/$$name; \
	  echo "fuzz $$dir $$name ($(FUZZTIME))"; \
	  before=$$(ls $$corpus 2>/dev/null | wc -l); \
	  $(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=10x ./$$dir && continue; \
	  [ "$$(ls $$corpus 2>/dev/null | wc -l)" = "$$before" ] || exit 1; \
	  echo "$$name failed without writing a failing input (the fuzz deadline race): once more"; \
	  $(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=10x ./$$dir || exit 1; \
	done

## dist: release archives for linux and darwin on amd64 and arm64, checksums.txt,
## .deb and .rpm packages (and the image where Docker runs), in dist/, as a tag
## release would make them.
# GoReleaser reads the remote's URL and, in a clone without a remote, would
# stamp "none" as the commit; the project's URL is given to git then.
DIST_GIT   = $(shell git remote 2>/dev/null | grep -q . || echo GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/proxmops/proxmops.git)

dist:
	$(DIST_GIT) $(GORELEASER) release --snapshot --clean $(DIST_SKIP)

test-web:
ifneq ($(HAVE_WEB),)
	cd web && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm test
endif

clean:
	rm -rf bin build dist web/embedded/dist

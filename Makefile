# Delta's build. `make demo` shows Delta on one machine; `make test` is what
# CI runs; `make run` starts one Delta.
SHELL := /bin/bash
GO ?= go
export CGO_ENABLED := 1

# Packages that import Tailscale (tsnet, its test control server) are tested
# without -race: a cold race build of tsnet alone takes about 6 minutes on
# CI's 2 cores.
TSNET_PKGS = $(shell $(GO) list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | awk '/ tailscale.com\// {print $$1}')
ALL_PKGS = $(shell $(GO) list ./...)
# packaging is tested by package-check.
RACE_PKGS = $(filter-out $(TSNET_PKGS) %/packaging,$(ALL_PKGS))
# Packages that need cgo on macOS are left out of the darwin vet. None: the
# tray's cgo-only file is behind a build tag (ui/systray.go builds on darwin
# only with cgo; ui/systray_nocgo.go stands in), so every package vets.
DARWIN_CGO_PKGS =
DARWIN_PKGS = $(filter-out $(DARWIN_CGO_PKGS),$(ALL_PKGS))

STATE_DIR ?=
ARGS ?=

.PHONY: all build build-deps test deps vet vet-darwin unit race-stress bench run demo clean package-check deb app pkg fuzz fuzz-short soak bench-deps bench-peers screenshots kits kit-docs arch-numbers
all: build

# build needs only a C compiler (build-deps); a first build says how far
# it has come as it compiles (tools/build).
build: build-deps
	@mkdir -p bin
	@GO=$(GO) tools/build bin/delta ./app

# build-deps installs what the build needs when it is missing: a C compiler
# for SQLite's cgo, and nothing else (make demo and make run need no more).
build-deps:
	@tools/deps build

# deps installs what the tests need when it is missing (the compiler; on
# Debian as root, the lab's, the tray's, the page's and the kits' tools,
# and the real apps they are tried with): tools/deps says what and how.
# Before a first build it says that the build will take minutes, and why.
deps:
	@tools/deps
	@[ "$$($(GO) list -f '{{.Stale}}' tailscale.com/tsnet 2>/dev/null)" = false ] || \
	  echo "make: first build: compiling Tailscale's tsnet and SQLite, several minutes on 2 cores (later builds use Go's cache)"

vet: deps
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "make: not gofmt-formatted (run gofmt -w):" $$unformatted >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) run ./tools/objcvet

vet-darwin: deps
	GOOS=darwin CGO_ENABLED=0 $(GO) vet $(DARWIN_PKGS)

# unit runs every test. The tests that mostly wait (apps that wait for a
# minute, Syncthing's page idle for 90 s, roads that die under quiet
# answers) run in parallel with each other, four at a time (-parallel 4),
# on the packages of tsnet, which are not run under -race. As root, each test binary runs inside a network
# namespace with loopback only (tools/offline-ns), so that nothing a test
# starts (delta processes, tsnet nodes, Chromium) can leave the machine, and
# the run fails if anything tried. Without root (as on the macOS runner)
# the guard is skipped (it says so) and TS_NO_LOGS_NO_SUPPORT=true is set
# for every process. Either way tools/testlog prints each package's
# result, every failure whole, and the list of tests skipped with their
# reasons.
OFFLINE_NS = delta-offline-$(shell echo $$PPID)
unit: deps
	@if [ "$$(id -u)" = 0 ]; then \
	  tools/offline-ns down $(OFFLINE_NS); tools/offline-ns up $(OFFLINE_NS) || exit 1; \
	  trap 'tools/offline-ns down $(OFFLINE_NS)' EXIT; \
	  x="$(CURDIR)/tools/offline-ns exec $(OFFLINE_NS)"; status=0; set -o pipefail; \
	  echo "$(GO) test -json -exec '$$x' -race -timeout 15m $(RACE_PKGS) | $(GO) run ./tools/testlog"; \
	  $(GO) test -json -exec "$$x" -race -timeout 15m $(RACE_PKGS) | $(GO) run ./tools/testlog || status=1; \
	  echo "$(GO) test -json -exec '$$x' -timeout 20m -parallel 4 $(TSNET_PKGS) | $(GO) run ./tools/testlog"; \
	  $(GO) test -json -exec "$$x" -timeout 20m -parallel 4 $(TSNET_PKGS) | $(GO) run ./tools/testlog || status=1; \
	  tools/offline-ns check $(OFFLINE_NS) || status=1; \
	  exit $$status; \
	else \
	  echo "make: not root: the tests run without the offline namespace guard (it needs root); TS_NO_LOGS_NO_SUPPORT=true is set for every process they start"; \
	  export TS_NO_LOGS_NO_SUPPORT=true; \
	  set -o pipefail; status=0; \
	  $(GO) test -json -race -timeout 15m $(RACE_PKGS) | $(GO) run ./tools/testlog || status=1; \
	  $(GO) test -json -timeout 20m -parallel 4 $(TSNET_PKGS) | $(GO) run ./tools/testlog || status=1; \
	  exit $$status; \
	fi

# kits runs the Python and TypeScript kits' tests, each in its language's
# own runner (python3 -m unittest, node --test), against two real Deltas
# (bin/delta in static mode on loopback; as root inside an offline
# namespace): tools/kits says how.
kits: deps build
	@tools/kits test

# kit-docs writes the kits' API reference from their source: the Python
# kit's docstrings as pydoc HTML, the TypeScript kit's .d.ts with comments,
# under build/kit-docs/.
kit-docs: deps
	@rm -rf build/kit-docs && mkdir -p build/kit-docs/python build/kit-docs/typescript
	cd build/kit-docs/python && PYTHONPATH=$(CURDIR)/kit/python/src /usr/bin/python3 -m pydoc -w delta_kit delta_kit.client delta_kit.errors delta_kit.owner delta_kit.wire delta_kit.direct
	cd kit/typescript && npm ci --no-audit --no-fund --loglevel=error && npx tsc -p . --declaration --emitDeclarationOnly --outDir $(CURDIR)/build/kit-docs/typescript
	@echo "make: the kits' API reference is in build/kit-docs/ (python/*.html, typescript/*.d.ts)"

test: vet vet-darwin package-check unit race-stress kits fuzz-short

# race-stress runs the tests of the packages with concurrency of their own
# (the HTTP/1.1 server and client, the peer client, the relay, the
# journal) again and again under the race detector, in shuffled order:
# a race that shows once in a hundred runs, or only under load, shows here
# before a newcomer meets it (issue 65: one did, in h1server). The tests
# that mostly wait on timers are left out (unit runs them once); make test
# runs RACE_COUNT=20 (about a minute on 2 cores), make race-stress
# RACE_COUNT=200 for a long run.
RACE_COUNT ?= 20
RACE_STRESS_PKGS = ./gateway/net/h1server/ ./gateway/net/h1/ ./gateway/carry/peerclient/ ./gateway/carry/relay/ ./gateway/state/journal/...
RACE_STRESS_SKIP = ^(TestKeptPingsTimeout|TestRace|TestPinnedReadAfterRacedDial|TestKeptPings|TestFramingIsNetHTTPs|TestOutlastsReadTimeout|TestIdleTimeout|TestAnswerQuietPastIdle)$$
race-stress: deps
	$(GO) test -race -count=$(RACE_COUNT) -shuffle=on -skip '$(RACE_STRESS_SKIP)' $(RACE_STRESS_PKGS)

# screenshots redraws docs/screenshots/*.png from real processes: two
# Deltas, the tray's menu in xfce4-panel and a notification from
# xfce4-notifyd on a virtual X screen, the status pages in Chromium
# (docs/screenshots.sh). It installs what it needs when root.
SCREENSHOT_DEBS = xvfb x11-utils xfce4-panel xfce4-notifyd xdotool imagemagick dbus-x11 chromium
screenshots: deps
	@missing=""; for p in $(SCREENSHOT_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  [ -z "$$missing" ] || tools/apt-install $$missing
	sh docs/screenshots.sh

# soak runs the fault soaks for SOAK each (make test runs them for 30 s in
# static mode and 60 s in the lab): 16 apps' calls under random faults,
# judged against the owner app's log of effects (app TestFaultSoak and,
# as root, TestFaultSoakLab with roads pulled). As root, inside the
# offline namespace like unit.
SOAK ?= 5m
soak: deps
	@if [ "$$(id -u)" = 0 ]; then \
	  tools/offline-ns down $(OFFLINE_NS); tools/offline-ns up $(OFFLINE_NS) || exit 1; \
	  trap 'tools/offline-ns down $(OFFLINE_NS)' EXIT; \
	  DELTA_SOAK=$(SOAK) $(GO) test -exec "$(CURDIR)/tools/offline-ns exec $(OFFLINE_NS)" -run '^TestFaultSoak(Lab)?$$' -v -timeout 90m ./app | grep -v 'level=INFO'; \
	  exit $${PIPESTATUS[0]}; \
	else \
	  DELTA_SOAK=$(SOAK) TS_NO_LOGS_NO_SUPPORT=true $(GO) test -run '^TestFaultSoak(Lab)?$$' -v -timeout 90m ./app; \
	fi

# Fuzz targets: header and request-id validation, names, paths (and
# the routing of the busiest ones without ServeMux, held to its choice), the
# digest, tickets, and the hops: the local API's parsing of a request and
# its target, the owner's door past a valid ticket (a real journal and
# app), the caller's reading of an owner's answer. make test runs each for FUZZTIME executions (75,000:
# about 3 s each here); make fuzz for 8 million (about 5 minutes each). A
# finding is written under the package's testdata/fuzz and fails the run;
# keep it there as a regression test once fixed. A count, not a duration:
# with a duration, Go 1.26's fuzzing coordinator may fail a target with a
# bare "context deadline exceeded" as the time runs out (golang/go#75804,
# fixed in Go 1.27), which failed CI once with nothing found.
FUZZ_TARGETS = ./gateway/wire/proto:FuzzParseTimeout ./gateway/wire/proto:FuzzCheckRequestID ./gateway/wire/proto:FuzzCheckName \
	./gateway/wire/proto:FuzzUncleanPath ./gateway/wire/proto:FuzzNamedTarget ./gateway/wire/proto:FuzzDigest ./gateway/net/ticket:FuzzCheck \
	./gateway/face/localserver:FuzzLocalRequest ./gateway/carry/owner:FuzzOwnerDoor ./gateway/carry/caller:FuzzOwnerAnswer
FUZZTIME ?= 75000x
# FuzzPooledAnswers (h1: a connection's first answer, any bytes, then a
# second request) and FuzzServedAsNetHTTP (h1server: any bytes sent to it
# and to net/http, the same answers) run real loopback connections each
# time, a few hundred to a few thousand a second here: their own, smaller
# count.
FUZZTIME_POOLED ?= 3000x
fuzz-short:
	@for t in $(FUZZ_TARGETS) ./gateway/net/h1:FuzzPooledAnswers ./gateway/net/h1server:FuzzServedAsNetHTTP; do \
	  pkg=$${t%%:*}; fn=$${t##*:}; n=$(FUZZTIME); \
	  case $$fn in FuzzPooledAnswers|FuzzServedAsNetHTTP) n=$(FUZZTIME_POOLED);; esac; \
	  echo "$(GO) test -run '^$$' -fuzz '^$$fn\$$' -fuzztime $$n $$pkg"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $$n $$pkg >/tmp/delta-fuzz.log 2>&1 || { cat /tmp/delta-fuzz.log; exit 1; }; \
	done
fuzz:
	$(MAKE) fuzz-short FUZZTIME=8000000x FUZZTIME_POOLED=200000x

# package-check checks the packages on Linux: the macOS plists (parsed,
# with their keys), Distribution.xml, every script under shellcheck, the
# staged .pkg payload's layout and modes, the release workflow (actionlint),
# and the .deb: built from a real binary, installed into a throwaway root,
# its systemd unit's ExecStart run against a temporary state folder. With
# DELTA_PKG=path/to/Delta.pkg (built on a Mac) it reads that package back.
# Then the kits' packages (tools/kits package-check): the Python wheel
# (python3 -m build) installed into a fresh venv and the npm package (npm
# pack) into a fresh folder, each running its notes example; and each kit
# installed from its folder as its README says (Python with a package index
# and without one, TypeScript from a checkout with no dist/, Go with go work).
package-check: deps build
	$(GO) test -count=1 -v ./packaging/ 2>&1 | grep -v '^=== ' ; exit $${PIPESTATUS[0]}
	@tools/kits package-check

VERSION ?= dev
DEB_ARCH = $(shell $(GO) env GOARCH)
# deb builds bin/delta_$(VERSION)_$(DEB_ARCH).deb (packaging.BuildDeb: a
# stripped PIE binary, Depends from dpkg-shlibdeps, copyright, changelog,
# man page, launcher, icons; dpkg-deb). make package-check builds it the
# same way and runs lintian on it.
deb: deps
	$(GO) run ./packaging/cmd/stage debfile . $(VERSION) $(DEB_ARCH) bin

# app and pkg build Delta.app and Delta-$(VERSION).pkg on a Mac (signed and
# notarized when the identities are in the environment: docs/release.md);
# elsewhere they stop and say so.
app pkg:
	VERSION=$(VERSION) sh packaging/macos/build.sh $@

# bench runs the side-by-side harness (tools/bench: direct, nginx, Caddy
# and the Go floor as two hops, two pairs of Deltas under wrk; a 1 GiB
# read and call through each; a 10 MiB answer revalidated over the tailnet
# road; the idle Delta beside a bare tsnet node; it rewrites its section
# of docs/benchmarks.md) and the in-process benchmarks, among them two
# floors: both journals' writes for a call (BenchmarkCallWrites) and the
# digest's speed (BenchmarkDigest); and a spooled call body written to an
# app, copied against sent by the kernel (BenchmarkFileBody). It counts
# each forwarder's CPU a request from /proc, and from the Go floor's and
# the journals' the most calls a second the machine could carry. BENCH_TIME
# is wrk's time per cell; BENCH_ARGS more flags (-before BIN runs Deltas
# built from other code beside, cell by cell).
BENCH_TIME ?= 5s
BENCH_ARGS ?=
bench: deps bench-deps
	$(GO) run ./tools/bench -d $(BENCH_TIME) $(BENCH_ARGS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./gateway/ ./gateway/net/h1/ ./gateway/state/journal/ ./gateway/net/pintls/ ./gateway/wire/proto/

# bench-peers: one person's computers on a loopback tailnet, home and 1, 10
# and 50 peers; what home sends to keep its roads known, each node's CPU,
# and the menu's redraw (about 35 minutes: a 10-minute window per size).
# PEERS and PEERS_WINDOW choose others.
PEERS ?= 1,10,50
PEERS_WINDOW ?= 10m
bench-peers: deps
	DELTA_BENCH_PEERS=$(PEERS) DELTA_BENCH_PEERS_WINDOW=$(PEERS_WINDOW) $(GO) test -run '^$$' -bench '^BenchmarkPeers$$' -benchtime 1x -timeout 90m ./gateway/modes/tailnet/ | grep --line-buffered -v 'level='; \
	  exit $${PIPESTATUS[0]}

# bench-deps installs nginx, Caddy, HAProxy and wrk (Debian's) when root; make test
# does not need them.
bench-deps:
	@missing=""; \
	command -v wrk >/dev/null 2>&1 || missing="$$missing wrk"; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	command -v caddy >/dev/null 2>&1 || missing="$$missing caddy"; \
	command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing="$$missing haproxy"; \
	tools/apt-install $$missing

run: build-deps
	$(GO) run ./app $(if $(STATE_DIR),--state-dir $(STATE_DIR)) $(ARGS)

# demo runs `delta demo`: two Deltas on a loopback tailnet and a guided
# tour; nothing leaves the machine. ARGS=--check runs it without pauses.
demo: build
	bin/delta demo $(ARGS)

# arch-numbers prints the house's measures (docs/architecture.md; the
# limits are held by app/house_test.go).
arch-numbers:
	@tools/arch-numbers

clean:
	rm -rf bin build

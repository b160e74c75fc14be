# toolhost build. `make serve` and `make test` are the two entry points.
GO        ?= go
BIN       := bin
PLUGINS   := $(notdir $(wildcard plugins/*))
WASM      := $(PLUGINS:%=$(BIN)/plugins/%.wasm)
GOFILES   := $(shell find . -name '*.go' -not -path './bin/*')
STATICCHECK := $(BIN)/tools/staticcheck
# Tests run against a private cache so they never depend on (or pollute) the user's.
# Suites that need more than Go (the C toolchain, Node.js, python3, curl,
# git, gcc, make) skip without it and say what installs it; with CI set
# (.ci/run sets it) or TOOLHOST_REQUIRE_C, _NODE, _PYTHON3, _PYTEST, _CURL, _GIT,
# _GCC, _MAKE they fail instead (internal/testenv).
TEST_ENV  := TOOLHOST_CACHE_DIR=$(CURDIR)/$(BIN)/test-cache TOOLHOST_BIN=$(CURDIR)/$(BIN)/toolhost
# $(call required,WHAT) is a shell condition: true when CI or
# TOOLHOST_REQUIRE_WHAT is set to anything but "", 0 or false, as
# internal/testenv reads them.
required = { case "$${CI:-0}" in 0|false|FALSE|False) case "$${TOOLHOST_REQUIRE_$(1):-0}" in 0|false|FALSE|False) false;; esac;; esac; }
# The binary names its commit (toolhost --version) where git can say it.
BUILDVCS  := $(shell git status --porcelain >/dev/null 2>&1 && echo auto || echo false)

.PHONY: all build plugins warm test test-leaks bench serve lint fuzz clean ctoolchain cplugin node

all: build

# build also compiles the plugins into the user's compilation cache, so the
# first call of each after make serve costs what later ones do.
build: $(BIN)/toolhost $(BIN)/toolhost-launcher plugins warm

warm: $(BIN)/toolhost $(BIN)/toolhost-launcher plugins
	@$(BIN)/toolhost plugin warm $(BIN)/plugins

$(BIN)/toolhost: $(GOFILES) go.mod go.sum
	$(GO) build -buildvcs=$(BUILDVCS) -o $@ ./host/cmd/toolhost

# run_command's launcher on its own, which toolhost uses from beside
# itself: confined commands start faster (docs/CONFINEMENT.md).
$(BIN)/toolhost-launcher: $(GOFILES) go.mod go.sum
	$(GO) build -buildvcs=$(BUILDVCS) -o $@ ./host/cmd/toolhost-launcher

plugins: $(WASM) $(BIN)/plugins/conformance/.copied

# Each built-in plugin's conformance cases, beside the modules where
# toolhost test looks for them: plugins/read_file/conformance/lines.json
# becomes bin/plugins/conformance/read_file-lines.json.
CASES := $(wildcard plugins/*/conformance/*.json)

$(BIN)/plugins/conformance/.copied: $(CASES)
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	@for f in $(CASES); do p=$${f#plugins/}; cp $$f $(dir $@)$${p%%/*}-$${f##*/}; done
	@touch $@

# Each plugin is a WASI reactor; `toolhost plugin pack` stores its manifest
# in a custom section so the host can list it without compiling it.
$(BIN)/plugins/%.wasm: $(GOFILES) go.mod go.sum $(BIN)/toolhost
	@mkdir -p $(dir $@)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@.tmp ./plugins/$*
	$(BIN)/toolhost plugin pack $@.tmp
	mv $@.tmp $@

# The Extism MCP plugins the tests serve (host/internal/tests/extism/plugins, a module
# of their own so toolhost does not require go-pdk).
EXTISM_GUESTS := hypertools netfetch servlet badimport
EXTISM_WASM   := $(EXTISM_GUESTS:%=$(BIN)/extism/%.wasm)

$(BIN)/extism/%.wasm: $(wildcard host/internal/tests/extism/plugins/*/*.go) host/internal/tests/extism/plugins/go.mod
	@mkdir -p $(dir $@)
	cd host/internal/tests/extism/plugins && GOWORK=off GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(CURDIR)/$@ ./$*

# The C plugin's toolchain (host/internal/tests/cplugin proves abi/README.md is enough
# to write a plugin in another language), from Debian's packages. Installing
# it needs root: make ctoolchain (or .ci/run) does; make test never does.
# .ci/run installs the same list with the other programs the tests run.
CTOOLCHAIN := clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32

ctoolchain:
	@dpkg -s $(CTOOLCHAIN) >/dev/null 2>&1 || { echo "installing the C plugin's toolchain: $(CTOOLCHAIN)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CTOOLCHAIN); }

# cplugin builds the C plugin and runs toolhost test on it; without the
# toolchain (build.sh exits 3, having said what is missing) it skips,
# unless CI or TOOLHOST_REQUIRE_C asks for it.
cplugin: $(BIN)/toolhost
	@rm -rf $(BIN)/cplugin/c_stat && mkdir -p $(BIN)/cplugin/c_stat && cp -r host/internal/tests/cplugin/conformance $(BIN)/cplugin/c_stat/
	@host/internal/tests/cplugin/build.sh $(BIN)/cplugin/c_stat/c_stat.wasm; rc=$$?; \
	if [ $$rc -eq 3 ]; then \
		if $(call required,C); then echo "the C plugin is required (CI or TOOLHOST_REQUIRE_C is set) but cannot be built: make ctoolchain installs its toolchain, as root" >&2; exit 1; fi; \
		echo "skipped: the C plugin's conformance run (make ctoolchain installs its toolchain, as root)"; exit 0; \
	fi; \
	[ $$rc -eq 0 ] && $(BIN)/toolhost plugin pack $(BIN)/cplugin/c_stat/c_stat.wasm && $(BIN)/toolhost test $(BIN)/cplugin/c_stat

MCPCLIENT := host/internal/tests/mcpclient

# The MCP TypeScript SDK client the end-to-end tests drive, at the version
# package-lock.json pins; npm ci rewrites .package-lock.json on each install.
$(MCPCLIENT)/node_modules/.package-lock.json: $(MCPCLIENT)/package.json $(MCPCLIENT)/package-lock.json
	npm ci --prefix $(MCPCLIENT) --no-audit --no-fund

# The reference Node MCP filesystem server make bench measures toolhost
# serve --stdio against; make test checks its answers too.
BENCHNODE := host/internal/tests/benchnode

$(BENCHNODE)/node_modules/.package-lock.json: $(BENCHNODE)/package.json $(BENCHNODE)/package-lock.json
	npm ci --prefix $(BENCHNODE) --no-audit --no-fund

# node installs the Node packages the MCP client suites use, where npm
# runs; without it, or when npm ci fails (no registry), those suites skip
# and say so, unless CI or TOOLHOST_REQUIRE_NODE asks for them.
NODE_HINT := Node.js 20 or later with npm (apt-get install nodejs npm, as root)
node:
	@if npm --version >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(MCPCLIENT)/node_modules/.package-lock.json $(BENCHNODE)/node_modules/.package-lock.json && exit 0; \
		if $(call required,NODE); then echo "npm ci failed: the Node MCP client suites are required (CI or TOOLHOST_REQUIRE_NODE is set)" >&2; exit 1; fi; \
		echo "npm ci failed: the Node MCP client suites will skip"; \
	elif $(call required,NODE); then echo "npm does not run: the Node MCP client suites are required (CI or TOOLHOST_REQUIRE_NODE is set); install $(NODE_HINT)" >&2; exit 1; \
	else echo "skipped: npm ci of the Node MCP clients (npm does not run; their suites will skip; install $(NODE_HINT))"; fi

# -timeout bounds a package that hangs, not the suite: under -race, with
# two packages at once on two cores, the hostile suite alone takes 15
# minutes or more.
test: build $(EXTISM_WASM) node
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 30m ./...
	$(BIN)/toolhost test --allow-exec $(BIN)/plugins
	@$(MAKE) --no-print-directory cplugin
	$(BIN)/toolhost test $(BIN)/extism/hypertools.wasm $(BIN)/extism/netfetch.wasm $(BIN)/extism/servlet.wasm
	@! $(BIN)/toolhost test $(BIN)/extism/badimport.wasm > /dev/null 2>&1 || (echo "toolhost test passed a plugin importing create_message"; exit 1)

# Loading, calling and closing the plugins 200 times must leave memory and
# descriptors flat; under -race (make test) the test runs 12 rounds only.
test-leaks: build
	$(TEST_ENV) $(GO) test -count=1 -timeout 10m -run 'TestLoadCloseDoesNotLeak' -v ./host/internal/runtime/

# The tools beside native Go in one process, then MCP over stdio: toolhost
# serve, the Node server and a native Go server, in interleaved rounds
# (the second runs its rounds once, hence 1x); then an Extism tool's call
# beside a native one in the same host. The search benchmark searches a
# copy of Go's src/ with search and glob beside rg (the ripgrep package,
# installed here when missing and run as root) and grep -rn.
bench: build $(BENCHNODE)/node_modules/.package-lock.json
	$(TEST_ENV) $(GO) test -run '^$$' -bench . -benchtime 1s -count 1 ./host/internal/bench/
	$(TEST_ENV) $(GO) test -run '^$$' -bench 'MCPStdio|MCPHTTP' -benchtime 1x -count 1 -timeout 15m ./host/internal/tests/bench/
	@command -v rg >/dev/null || { if [ "$$(id -u)" = 0 ]; then echo "installing ripgrep, the search benchmark's baseline"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep; } || echo "ripgrep could not be installed: the search benchmark runs without it"; \
		else echo "rg is not installed and this is not root: the search benchmark runs without ripgrep (apt-get install ripgrep, as root)"; fi; }
	$(TEST_ENV) $(GO) test -run '^$$' -bench SearchCorpus -benchtime 1x -count 1 -timeout 10m ./host/internal/tests/bench/
	$(TEST_ENV) $(GO) test -run '^$$' -bench . -benchtime 1s -count 1 ./host/internal/tests/extism/

# The server on this repository with the default policy: MCP over HTTP on
# loopback. It prints the URL, a fresh bearer token and the line that
# connects an agent; Ctrl-C stops it (exit 0). SERVE_ADDR=127.0.0.1:0 picks
# a free port.
SERVE_ADDR ?= 127.0.0.1:8765
serve: build
	$(BIN)/toolhost serve --http $(SERVE_ADDR) --root $(CURDIR)

lint:
	@test -z "$$(gofmt -l $(GOFILES))" || (gofmt -l $(GOFILES); exit 1)
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./sdk/... ./plugins/...
	@test -x $(STATICCHECK) || GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2 || true
	@if test -x $(STATICCHECK); then $(STATICCHECK) ./...; else echo "staticcheck could not be installed; skipped"; fi

# Each fuzz target for FUZZTIME; inputs that ever failed live in testdata/fuzz
# and run with every `make test`.
FUZZTIME ?= 30s
FUZZ_TARGETS := host/internal/sandbox:FuzzResolve host/internal/sandbox:FuzzGlob host/internal/output:FuzzSanitize host/internal/output:FuzzTruncate host/internal/output:FuzzStream host/internal/output:FuzzSanitizeJSON \
	host/internal/loopguard:FuzzInstrument host/internal/wasmbin:FuzzSections sdk/internal/argjson:FuzzUnmarshal internal/jsontext:FuzzAppendString \
	lp1:FuzzParse lp1:FuzzParseFile lp1:FuzzApply abi:FuzzDecodeCommitRequest host/internal/engine:FuzzAmbiguousKey \
	textedit:FuzzReplace textedit:FuzzReplaceLines textedit:FuzzDiff textedit:FuzzFileDiff \
	host/internal/search/match:FuzzScan host/internal/search/ignore:FuzzIgnored

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}/ || exit 1; \
	done

clean:
	rm -rf $(BIN) $(MCPCLIENT)/node_modules $(BENCHNODE)/node_modules

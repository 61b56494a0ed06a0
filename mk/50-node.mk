# Node binding (bindings/node): koffi over libkrabka_coord.so.
#   make node-test    npm ci (when node_modules is missing or stale), then the
#                     node:test suite: conformance vectors, misuse, typings
#                     (tsc --noEmit), struct layouts against the header (needs
#                     a C compiler), module layout, the package's files, and on
#                     $KRABKA_BOOTSTRAP (and $KRABKA_BOOTSTRAP_TV1) the live
#                     failover and the event-queue completion path; then
#                     examples/node/controller.test.js, the example's own test on
#                     the in-process cluster (require('krabka-coord/testing'))
#   make node-bench   per-call overhead of the binding (µs per call), recorded in a
#                     results file under bench/results
#   make node-mainthread-bench   every synchronous call timed alone on the main
#                     thread in 20 fresh processes (bench/mainthread.js; needs a
#                     broker at $KRABKA_BOOTSTRAP), recorded as node-mainthread-*.json
#   make node-deps    just the npm ci
NODE ?= node
NPM ?= npm
NODE_DIR := bindings/node
NODE_LIB ?= $(CURDIR)/build/libkrabka_coord.so
# The library is never built by npm; the binding finds it through this variable.
NODE_ENV_VARS = KRABKA_COORD_LIBRARY=$(NODE_LIB)

BENCH_TARGETS += node-bench

.PHONY: node-deps node-lib node-test node-bench node-mainthread-bench node-conformance

# The repository's library comes from the capi fragment's `lib` target (one
# build.sh run per make, even with -j); another NODE_LIB is used as given.
ifeq ($(NODE_LIB),$(CURDIR)/build/libkrabka_coord.so)
node-lib: lib
else
node-lib:
	@test -f "$(NODE_LIB)" || { echo "node: NODE_LIB=$(NODE_LIB) is missing" >&2; exit 1; }
endif

node-deps: $(NODE_DIR)/node_modules/.package-lock.json

# npm writes node_modules/.package-lock.json on every install: it is the stamp.
$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && $(NPM) ci --no-audit --no-fund
	@touch $@

node-test: node-deps node-lib
	cd $(NODE_DIR) && $(NODE_ENV_VARS) $(NODE) --test --test-reporter=spec --test-concurrency=1 test/*.test.js test/*.test.mjs \
		../../examples/node/controller.test.js

node-conformance: node-deps node-lib
	$(NODE_ENV_VARS) $(NODE) $(NODE_DIR)/test/conformance.mjs

node-bench: node-deps node-lib
	$(NODE_ENV_VARS) KRABKA_BENCH_SAMPLES=1 $(PERFDOC) record -bench node -- $(NODE) $(NODE_DIR)/bench/bench.js

node-mainthread-bench: node-deps node-lib
	$(call need_env,node-mainthread-bench,KRABKA_BOOTSTRAP)
	$(NODE_ENV_VARS) KRABKA_BENCH_SAMPLES=1 $(PERFDOC) record -bench node-mainthread -- $(NODE) $(NODE_DIR)/bench/mainthread.js

# Pure core (core/, minus the client files) and the Go conformance runner.
#   make core-test   vet, unit tests, and the Go conformance runner (package core only:
#                    core/kafka needs brokers and belongs to the Kafka suite); also the
#                    benches' unit tests (bench/..., in memory: no broker)
#   make core-fuzz   every fuzz target for CORE_FUZZTIME each, one at a time. The budget is a
#                    count of executions, not a duration: with a duration, Go 1.26's fuzz
#                    coordinator can report a spurious "context deadline exceeded" failure when
#                    the time runs out under CPU load (golang/go#75804, fixed in Go 1.27).
#   make core-bench  codec, fold and rule benchmarks (5 runs each), recorded in a results
#                    file under bench/results (bench/README.md)
#   make perf-doc    rewrite the generated tables of docs/PERFORMANCE.md and README.md from
#                    bench/results (internal/perfdoc; core-test fails when they are stale)
#   make sim-test    the simulation tier (core/sim, part of core-test): seeded whole failovers
#                    against a model of Kafka with injected faults, no broker, until at least
#                    SIM_FAILOVERS (100,000; -short changes nothing) under the checker; a failing
#                    seed prints itself and its replay command (docs/RELIABILITY.md)
#   make generate    `go generate ./...`: internal/gen rewrites every file derived from
#                    include/krabka_coord.h and core/coord's tables (core-test fails when one is stale)
GO ?= go
CORE_FUZZTIME ?= 300000x
CORE_FUZZ_TARGETS := FuzzDecodeKey FuzzDecodeRegistration FuzzDecodeLease FuzzParseFencingToken
# The Go conformance runner; `-json` prints per-group counts.
CONFORMANCE_GO ?= $(GO) run ./tests/conformance/cmd/conformance-go
# Records a bench's samples in a results file (bench/README.md).
PERFDOC ?= $(GO) run ./internal/perfdoc/cmd/perfdoc
SIM_FAILOVERS ?= 100000

BENCH_TARGETS += core-bench

.PHONY: core-test core-fuzz core-bench core-conformance generate sim-test perf-doc
core-test:
	$(GO) vet ./core ./tests/conformance/... ./internal/... ./bench/...
	$(GO) test ./core ./tests/conformance/... ./internal/... ./bench/...
	$(CONFORMANCE_GO)
	$(MAKE) --no-print-directory sim-test

sim-test:
	$(GO) vet ./core/sim
	$(GO) test -count=1 -v -timeout 10m ./core/sim -sim.failovers=$(SIM_FAILOVERS)

generate:
	$(GO) generate ./...

core-conformance:
	$(CONFORMANCE_GO)

# `go test -fuzz` takes one target per invocation.
core-fuzz:
	@set -e; for t in $(CORE_FUZZ_TARGETS); do \
		echo "$(GO) test -run '^$$' -fuzz '^'$$t'$$' -fuzztime=$(CORE_FUZZTIME) ./core/"; \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime=$(CORE_FUZZTIME) ./core/; \
	done

core-bench:
	$(PERFDOC) record -bench core -gobench -- $(GO) test -run '^$$' -bench . -benchmem -count 5 ./core/

perf-doc:
	$(PERFDOC) generate

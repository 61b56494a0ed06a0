# Pure core (core/, minus the client files) and the Go conformance runner.
#   make core-test   vet, unit tests, and the Go conformance runner (package core only:
#                    core/kafka needs brokers and belongs to the Kafka suite)
#   make core-fuzz   every fuzz target for CORE_FUZZTIME each, one at a time. The budget is a
#                    count of executions, not a duration: with a duration, Go 1.26's fuzz
#                    coordinator can report a spurious "context deadline exceeded" failure when
#                    the time runs out under CPU load (golang/go#75804, fixed in Go 1.27).
#   make core-bench  codec, fold and rule benchmarks
#   make generate    `go generate ./...`: internal/gen rewrites every file derived from
#                    include/krabka_coord.h and core/coord's tables (core-test fails when one is stale)
GO ?= go
CORE_FUZZTIME ?= 300000x
CORE_FUZZ_TARGETS := FuzzDecodeKey FuzzDecodeRegistration FuzzDecodeLease FuzzParseFencingToken
# The Go conformance runner; `-json` prints per-group counts.
CONFORMANCE_GO ?= $(GO) run ./tests/conformance/cmd/conformance-go

TEST_TARGETS += core-test
BENCH_TARGETS += core-bench

.PHONY: core-test core-fuzz core-bench core-conformance generate
core-test:
	$(GO) vet ./core ./tests/conformance/... ./internal/...
	$(GO) test ./core ./tests/conformance/... ./internal/...
	$(CONFORMANCE_GO)

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
	$(GO) test -run '^$$' -bench . -benchmem ./core/

# krabka-coord: the one entry point. `make demo` and `make test` are the README's two commands.
# Each layer keeps its targets in a fragment: mk/*.mk and tests/kafka/kafka.mk.
GO ?= go
export GOFLAGS ?= -buildvcs=false

.PHONY: all build test test-inner demo bench conformance examples install clean
all: build

# The one guard of every target that needs a broker: $(call need_env,TARGET,VAR)
# fails TARGET with one message naming VAR when the environment lacks it.
need_env = @test -n "$$$(2)" || { echo "$(1): $(2) is not set: run it via 'make test' (tests/kafka/with-clusters.sh starts the brokers and exports it) or export the address of a running broker" >&2; exit 1; }

include $(sort $(wildcard mk/*.mk))
include tests/kafka/kafka.mk

# Every suite `make test` runs, in order: pure core first, then the broker
# smoke tests, the Go client on real Kafka, the C ABI, the bindings, the
# cross-language conformance table, the demo's scenario as a test and the
# operator's command line (cmd/krabka-coord) on real brokers.
TEST_TARGETS := core-test core-fuzz kafka-test client-test group-test capi-test python-test node-test group-example-test \
	conformance conformance-table-test demo-unit demo-test tls-test chaos-unit chaos-short cli-test dist-short-test

# The test suites that need brokers run inside with-clusters.sh, which starts the
# clusters once, exports their addresses and stops them on every exit path.
test: kafka-fetch
	tests/kafka/with-clusters.sh $(MAKE) --no-print-directory test-inner

test-inner: $(TEST_TARGETS)
	@echo "make test: all suites passed ($(TEST_TARGETS))"

bench: $(BENCH_TARGETS)

clean: dist-clean
	rm -rf build

# krabka-coord: the one entry point. `make demo` and `make test` are the README's two commands.
# Each layer keeps its targets in a fragment: mk/*.mk and tests/kafka/kafka.mk.
GO ?= go
export GOFLAGS ?= -buildvcs=false

.PHONY: all build test test-inner demo bench conformance examples install clean
all: build

include $(sort $(wildcard mk/*.mk))
-include tests/kafka/kafka.mk

# The test suites that need brokers run inside with-clusters.sh, which starts the
# clusters once, exports their addresses and stops them on every exit path.
test:
	tests/kafka/with-clusters.sh $(MAKE) --no-print-directory test-inner

test-inner: $(TEST_TARGETS)
	@echo "make test: all suites passed ($(TEST_TARGETS))"

bench: $(BENCH_TARGETS)

clean:
	rm -rf build

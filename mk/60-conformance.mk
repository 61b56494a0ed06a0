# make conformance: every vector file through all four runners (Go core, C ABI,
# Python, Node) plus Kafka's own Java murmur2, printed as ONE table of
# runner x vector group (passed/failed/not-run). Exits non-zero when a vector
# fails, when a runner crashes or prints nothing, or when counts do not add up.
# The table maker is tests/conformance/table; each row's command prints the
# runner's per-group JSON (--json / -json). Override a row's command with
# CONFORMANCE_ROW_<NAME>=... on the make command line.
# A row that passes no vector fails too, and so do vector files that hold none.
# The Go test tests/conformance/goconf compares tests/conformance with the
# shared copy ../shared/conformance beside the checkout and fails when that copy
# is missing or holds no vector; KRABKA_CONFORMANCE_NO_SHARED=1 declares it
# deliberately absent (make test never sets it).
GO ?= go
CONFORMANCE_VECTOR_DIR := tests/conformance/vectors
# A shell glob, expanded when each row's command runs (under sh -c).
CONFORMANCE_VECTOR_FILES = $(CONFORMANCE_VECTOR_DIR)/*.json
KRABKA_LIB_PATH ?= $(CURDIR)/build/libkrabka_coord.so

CONFORMANCE_ROW_GO ?= $(GO) run ./tests/conformance/cmd/conformance-go -json $(CONFORMANCE_VECTOR_FILES)
# The C runner reads the vectors in the line form of tests/c/flatten_vectors.py.
CONFORMANCE_C_BIN ?= build/tests/c/conformance_c
CONFORMANCE_C_LINES := build/conformance/table-vectors.lines
CONFORMANCE_ROW_C ?= mkdir -p build/conformance && python3 tests/c/flatten_vectors.py $(CONFORMANCE_VECTOR_FILES) > $(CONFORMANCE_C_LINES) && $(CONFORMANCE_C_BIN) --json $(CONFORMANCE_C_LINES)
CONFORMANCE_ROW_PYTHON ?= env PYTHONPATH=bindings/python/src KRABKA_COORD_LIBRARY=$(KRABKA_LIB_PATH) python3 bindings/python/tests/conformance.py --json $(CONFORMANCE_VECTOR_FILES)
CONFORMANCE_ROW_NODE ?= env KRABKA_COORD_LIBRARY=$(KRABKA_LIB_PATH) node bindings/node/test/conformance.mjs --json $(CONFORMANCE_VECTOR_FILES)
CONFORMANCE_ROW_JAVA ?= tests/conformance/java/run.sh --json $(CONFORMANCE_VECTOR_FILES)
# What the rows need built first (targets of the other fragments).
CONFORMANCE_DEPS ?= lib c-conformance node-deps

.PHONY: conformance conformance-table-test
conformance: $(CONFORMANCE_DEPS)
	@echo "conformance: $(GO) run ./tests/conformance/table (rows: go, c, python, node, kafka-java)"
	@$(GO) run ./tests/conformance/table -vectors $(CONFORMANCE_VECTOR_DIR) \
		-runner 'go=$(CONFORMANCE_ROW_GO)' \
		-runner 'c=$(CONFORMANCE_ROW_C)' \
		-runner 'python=$(CONFORMANCE_ROW_PYTHON)' \
		-runner 'node=$(CONFORMANCE_ROW_NODE)' \
		-runner 'kafka-java:murmur2,partition=$(CONFORMANCE_ROW_JAVA)'

# Unit tests of the table maker itself (no runner needed).
conformance-table-test:
	$(GO) test ./tests/conformance/table

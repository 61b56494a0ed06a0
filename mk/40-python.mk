# Python binding (bindings/python): ctypes over libkrabka_coord.so.
#   make python-test    pytest: conformance vectors through the binding, pure
#                       API, misuse, the library's fork guard, the struct
#                       layouts against the C compiler, the import graph, the
#                       call runner and its completion queues, pip install and
#                       the sdist, the live failover and the blind deposed holder on
#                       $KRABKA_BOOTSTRAP and $KRABKA_BOOTSTRAP_TV1 (fail, never
#                       skip, when unset: run them via `make test`); then
#                       examples/python/test_controller.py, the example's own test
#                       on the in-process cluster (krabka_coord.testing's pytest
#                       plugin, no broker)
#   make python-bench   per-call overhead of the binding (µs per call), recorded in a
#                       results file under bench/results
#   make python-conformance   just the conformance runner (N passed, N failed)
#   make python-typecheck     mypy --strict over the package (pytest too: the plugin
#                             module is typed against it)
# Set PYTEST_ARGS to pass options, e.g. PYTEST_ARGS='-k pure'.
PYTHON ?= python3
PY_DIR := bindings/python
PY_LIB ?= $(CURDIR)/build/libkrabka_coord.so
PY_VENV := $(CURDIR)/build/python/venv
PYTEST_ARGS ?=
# Tests import the binding from the source tree and load this library.
PY_ENV_VARS = KRABKA_COORD_LIBRARY=$(PY_LIB) PYTHONDONTWRITEBYTECODE=1

BENCH_TARGETS += python-bench

.PHONY: python-test python-bench python-conformance python-lib python-pytest

# build.sh rebuilds only what changed.
python-lib:
	@if [ "$(PY_LIB)" = "$(CURDIR)/build/libkrabka_coord.so" ]; then ./build.sh; \
	else test -f "$(PY_LIB)" || { echo "python: PY_LIB=$(PY_LIB) is missing" >&2; exit 1; }; fi

# pytest: the system one when present, else a venv under build/.
python-pytest:
	@$(PYTHON) -c 'import pytest' 2>/dev/null || { \
		test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV); \
		$(PY_VENV)/bin/python -c 'import pytest' 2>/dev/null || $(PY_VENV)/bin/pip install --quiet pytest; }

PY_PYTHON = $(shell $(PYTHON) -c 'import pytest' 2>/dev/null && echo $(PYTHON) || echo $(PY_VENV)/bin/python)

python-test: python-lib python-pytest
	cd $(PY_DIR) && $(PY_ENV_VARS) $(PY_PYTHON) -m pytest -p no:cacheprovider -v $(PYTEST_ARGS) tests
	cd examples/python && $(PY_ENV_VARS) PYTHONPATH=$(CURDIR)/$(PY_DIR)/src $(PY_PYTHON) -m pytest -p no:cacheprovider \
		-p krabka_coord.pytest_plugin -v $(PYTEST_ARGS) test_controller.py

python-conformance: python-lib
	$(PY_ENV_VARS) $(PYTHON) $(PY_DIR)/tests/conformance.py

python-bench: python-lib
	$(PY_ENV_VARS) KRABKA_BENCH_SAMPLES=1 $(PERFDOC) record -bench python -- $(PYTHON) $(PY_DIR)/bench/bench.py

# mypy --strict over the package (installs mypy into the venv under build/).
.PHONY: python-typecheck
python-typecheck:
	@test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV)
	@$(PY_VENV)/bin/python -c 'import mypy, pytest' 2>/dev/null || $(PY_VENV)/bin/pip install --quiet mypy pytest
	cd $(PY_DIR) && $(PY_VENV)/bin/mypy --strict src/krabka_coord

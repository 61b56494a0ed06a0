# C ABI (capi/, build.sh, tests/c, examples/c).
#   make lib           build/libkrabka_coord.so.2.0.0 (+ symlinks, build/include, build/krabka_coord.pc)
#   make capi-test     header checks (C99, C++11), symbol test, conformance vectors and
#                      misuse through the C API, both under valgrind, and the live test
#                      and the fork guard test on $KRABKA_BOOTSTRAP (fails, never skips, when
#                      unset: use `make test`)
#   make capi-test-offline   everything above except the live test
#   make capi-mainstack  main-thread calls on the thread's own stack and on another read no file
#   make capi-testing  the test aids (include/krabka_coord_testing.h) with no broker: bad input
#                      and a controller's failover on the in-process cluster (tests/c/testing.c),
#                      and examples/c/controller_test.c; also under valgrind
#   make capi-fidelity the same scenarios through the C API on the in-process cluster and on
#                      $KRABKA_BOOTSTRAP and $KRABKA_BOOTSTRAP_TV1, sequences compared (tests/c/fidelity.c)
#   make capi-blind    the blind holder on $KRABKA_BOOTSTRAP and $KRABKA_BOOTSTRAP_TV1:
#                      the broker refuses a deposed holder that still believes it
#                      leads (produce, batch, renew, resign), read back with kread
#   make capi-async    every *_async form on $KRABKA_BOOTSTRAP and $KRABKA_BOOTSTRAP_TV1:
#                      one event each (type, tag, error, data), a queue destroyed with
#                      calls pending, message sizes; produced records read back with kread
#   make capi-pipeline  a pipeline step (consume, poll, produce_offsets, bad input, the
#                      deposed leader's offsets refused) on $KRABKA_BOOTSTRAP and _TV1
#   make capi-elect    the elector (krabka_elector_*, KRABKA_EVENT_TERM) and lease events
#   make capi-elect-faults  20 forced failovers of electors (kills, pauses, resigns) and AT_RISK under a cut link
#                      (KRABKA_EVENT_LEASE) on $KRABKA_BOOTSTRAP and $KRABKA_BOOTSTRAP_TV1:
#                      failovers by destroy and by a destroyed client, re-campaign, the
#                      release rule, eligibility and the roster's tail, AT_RISK, misuse
#   make capi-valgrind-live  the live, events, blind, async, elect and pipeline tests (and
#                      electorset's misuse checks) under valgrind
#   make capi-electorset  elector sets (krabka_elector_set_*, KRABKA_EVENT_SET_TERM) on $KRABKA_BOOTSTRAP
#                      and $KRABKA_BOOTSTRAP_TV1: 20 roles over two sets, a removed role moves
#                      alone, the release rule per role, a dead set's roles all taken, misuse
#   make capi-group    role groups (krabka_group_*, KRABKA_EVENT_GROUP) on $KRABKA_BOOTSTRAP
#                      and $KRABKA_BOOTSTRAP_TV1: balance by weight, a leave moves only the
#                      leaver's shards, a dead member's shards taken, misuse
#   make capi-valgrind-live  the live, events, blind, async and elect tests under valgrind
#   make capi-bench    ns per call across the boundary (token compare, role partition,
#                      and leadership token when $KRABKA_BOOTSTRAP is set), recorded in a
#                      results file under bench/results
#   make examples      build/examples/device_host, build/examples/controller, build/examples/pipeline
#   make install PREFIX=/usr/local [DESTDIR=...]   library, header, pkg-config file
CC ?= cc
CXX ?= c++
VALGRIND ?= valgrind
CAPI_BUILD := build/tests/c
CAPI_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic -g -O1 -Ibuild/include
CAPI_LDFLAGS := -pthread -Lbuild -lkrabka_coord -Wl,-rpath,$(CURDIR)/build
CAPI_VALGRIND := GODEBUG=asyncpreemptoff=1 $(VALGRIND) -q --leak-check=full \
	--errors-for-leak-kinds=definite --error-exitcode=99 --suppressions=tests/c/valgrind-go.supp
CAPI_VECTORS := build/conformance/vectors.lines
CAPI_LIVE_TOPIC ?= krabka-capi-live
CAPI_BLIND_TOPIC ?= krabka-capi-blind
CAPI_ASYNC_TOPIC ?= krabka-capi-async
GO ?= go

BENCH_TARGETS += capi-bench

.PHONY: lib capi-unit capi-valgrind-live capi-test capi-test-offline capi-headers capi-symbols capi-conformance \
	c-conformance capi-misuse capi-valgrind capi-readme capi-testing capi-fidelity capi-live capi-events capi-fork capi-blind capi-async capi-elect capi-elect-faults capi-headers-live capi-pipeline capi-group capi-electorset capi-bench capi-examples capi-install capi-mainstack
build: lib
examples: capi-examples
install: capi-install

# build.sh skips the Go build when no input changed.
lib:
	./build.sh

$(CAPI_BUILD)/%: tests/c/%.c tests/c/check.h include/krabka_coord.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) $< -o $@ $(CAPI_LDFLAGS)

$(CAPI_BUILD)/conformance_c: tests/c/conformance.c include/krabka_coord.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) $< -o $@ $(CAPI_LDFLAGS)

$(CAPI_BUILD)/cxx_header: tests/c/cxx_header.cpp include/krabka_coord.h include/krabka_coord_testing.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CXX) -std=c++11 -Wall -Wextra -Werror -pedantic -Ibuild/include $< -o $@ $(CAPI_LDFLAGS)

# The header alone as C99 and C++11, each with -Wall -Wextra -Werror -pedantic;
# the C++ program also links and runs.
capi-headers: lib $(CAPI_BUILD)/cxx_header
	$(CC) -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -Ibuild/include tests/c/header_c99.c
	$(CAPI_BUILD)/cxx_header

capi-symbols: lib
	tests/c/symbols.sh build/libkrabka_coord.so

$(CAPI_VECTORS): $(wildcard tests/conformance/vectors/*.json) tests/c/flatten_vectors.py
	@mkdir -p $(dir $@)
	python3 tests/c/flatten_vectors.py tests/conformance/vectors/*.json > $@

# The runner binary alone (used by `make conformance`).
c-conformance: lib $(CAPI_BUILD)/conformance_c

capi-conformance: c-conformance $(CAPI_VECTORS)
	$(CAPI_BUILD)/conformance_c $(CAPI_VECTORS)

capi-misuse: lib $(CAPI_BUILD)/misuse
	$(CAPI_BUILD)/misuse

# Misuse and conformance again under valgrind: no definite leak, no memory
# error in C code (see tests/c/valgrind-go.supp for what the Go side hides).
capi-valgrind: lib $(CAPI_BUILD)/misuse $(CAPI_BUILD)/conformance_c $(CAPI_VECTORS)
	$(CAPI_VALGRIND) $(CAPI_BUILD)/misuse
	$(CAPI_VALGRIND) $(CAPI_BUILD)/conformance_c $(CAPI_VECTORS)
	@echo "capi-valgrind: misuse and conformance clean (no definite leak, no error)"

capi-live: lib $(CAPI_BUILD)/live
	$(call need_env,capi-live,KRABKA_BOOTSTRAP)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_LIVE_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_BUILD)/live

# Go unit tests of the translation layer (error table, errstr, handles).
capi-unit:
	$(GO) vet ./capi
	$(GO) test ./capi

# The live test under valgrind too (not part of capi-test: slower, and its
# timing checks are looser under load).
capi-valgrind-live: lib $(CAPI_BUILD)/live $(CAPI_BUILD)/events $(CAPI_BUILD)/blind $(CAPI_BUILD)/async $(CAPI_BUILD)/elect $(CAPI_BUILD)/electorset $(CAPI_BUILD)/kread \
	$(CAPI_BUILD)/pipeline $(CAPI_BUILD)/ktopic build/examples/pipeline
	$(call need_env,capi-valgrind-live,KRABKA_BOOTSTRAP)
	$(call need_env,capi-valgrind-live,KRABKA_BOOTSTRAP_TV1)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_LIVE_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_VALGRIND) $(CAPI_BUILD)/live
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_VALGRIND) $(CAPI_BUILD)/events
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_BLIND_TOPIC) 1
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP_TV1" $(CAPI_BLIND_TOPIC) 1
	KRABKA_C_TOPIC=$(CAPI_BLIND_TOPIC) KRABKA_KREAD=$(CAPI_BUILD)/kread $(CAPI_VALGRIND) $(CAPI_BUILD)/blind
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_ASYNC_TOPIC) 3
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP_TV1" $(CAPI_ASYNC_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_ASYNC_TOPIC) KRABKA_KREAD=$(CAPI_BUILD)/kread $(CAPI_VALGRIND) $(CAPI_BUILD)/async
	$(CAPI_VALGRIND) $(CAPI_BUILD)/elect
	$(CAPI_VALGRIND) $(CAPI_BUILD)/electorset misuse
	KRABKA_KTOPIC=$(CAPI_BUILD)/ktopic KRABKA_KREAD=$(CAPI_BUILD)/kread \
		KRABKA_PIPELINE_EXAMPLE=$(CURDIR)/build/examples/pipeline $(CAPI_VALGRIND) $(CAPI_BUILD)/pipeline

capi-test-offline: capi-unit capi-headers capi-symbols capi-conformance capi-misuse capi-valgrind capi-readme capi-mainstack capi-testing

$(CAPI_BUILD)/testing: tests/c/testing.c tests/c/check.h include/krabka_coord.h include/krabka_coord_testing.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) $< -o $@ $(CAPI_LDFLAGS)

$(CAPI_BUILD)/controller_test: examples/c/controller_test.c include/krabka_coord.h include/krabka_coord_testing.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) $< -o $@ $(CAPI_LDFLAGS)

# The test aids with no broker (no KRABKA_BOOTSTRAP needed): tests/c/testing.c
# and the example's test, then both under valgrind.
capi-testing: lib $(CAPI_BUILD)/testing $(CAPI_BUILD)/controller_test
	$(CAPI_BUILD)/testing
	$(CAPI_BUILD)/controller_test
	$(CAPI_VALGRIND) $(CAPI_BUILD)/testing
	$(CAPI_VALGRIND) $(CAPI_BUILD)/controller_test

# Calls on the main thread, on its own stack and on one of the host's own
# (makecontext, as Node's koffi does), read no file (capi/kc_stack.c).
capi-mainstack: lib $(CAPI_BUILD)/mainstack
	$(CAPI_BUILD)/mainstack

capi-test: capi-test-offline capi-live capi-events capi-fork capi-blind capi-async capi-elect capi-elect-faults capi-headers-live capi-fidelity capi-pipeline capi-group capi-electorset

CAPI_FIDELITY_TOPIC ?= krabka-capi-fidelity
$(CAPI_BUILD)/fidelity: tests/c/fidelity.c tests/c/check.h include/krabka_coord.h include/krabka_coord_testing.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) $< -o $@ $(CAPI_LDFLAGS)

# Fidelity of the in-process cluster through the C API (tests/c/fidelity.c):
# the same scenarios on it and on both brokers, sequences compared.
capi-fidelity: lib $(CAPI_BUILD)/fidelity
	$(call need_env,capi-fidelity,KRABKA_BOOTSTRAP)
	$(call need_env,capi-fidelity,KRABKA_BOOTSTRAP_TV1)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_FIDELITY_TOPIC) 1
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP_TV1" $(CAPI_FIDELITY_TOPIC) 1
	KRABKA_C_TOPIC=$(CAPI_FIDELITY_TOPIC) $(CAPI_BUILD)/fidelity

# kread prints a topic's committed records as JSON lines; blind.c runs it
# through popen (the C API has no consumer).
$(CAPI_BUILD)/kread: tests/kafka/cmd/kread/main.go go.mod go.sum
	@mkdir -p $(CAPI_BUILD)
	$(GO) build -o $@ ./tests/kafka/cmd/kread

# The blind holder (tests/c/blind.c): a successor that mints through another
# coordination topic, so the deposed holder's view sees nothing and only the
# broker can refuse its produce, batch, renew and resign; the command topic
# (one partition) is read back with kread. Both clusters: tv2 and tv1.
capi-blind: lib $(CAPI_BUILD)/blind $(CAPI_BUILD)/kread
	$(call need_env,capi-blind,KRABKA_BOOTSTRAP)
	$(call need_env,capi-blind,KRABKA_BOOTSTRAP_TV1)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_BLIND_TOPIC) 1
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP_TV1" $(CAPI_BLIND_TOPIC) 1
	KRABKA_C_TOPIC=$(CAPI_BLIND_TOPIC) KRABKA_KREAD=$(CAPI_BUILD)/kread $(CAPI_BUILD)/blind

$(CAPI_BUILD)/ktopic: tests/kafka/cmd/ktopic/main.go go.mod go.sum
	@mkdir -p $(CAPI_BUILD)
	$(GO) build -o $@ ./tests/kafka/cmd/ktopic
# A pipeline step (tests/c/pipeline.c) on both clusters: consume, poll and
# produce_offsets with bad input, a committed step, the blind deposed
# leader's offsets refused, the successor's async step; the command topic
# read back with kread; then examples/c/pipeline as a child process.
capi-pipeline: lib $(CAPI_BUILD)/pipeline $(CAPI_BUILD)/kread $(CAPI_BUILD)/ktopic build/examples/pipeline
	$(call need_env,capi-pipeline,KRABKA_BOOTSTRAP)
	$(call need_env,capi-pipeline,KRABKA_BOOTSTRAP_TV1)
	KRABKA_KTOPIC=$(CAPI_BUILD)/ktopic KRABKA_KREAD=$(CAPI_BUILD)/kread \
		KRABKA_PIPELINE_EXAMPLE=$(CURDIR)/build/examples/pipeline $(CAPI_BUILD)/pipeline
# The async forms (tests/c/async.c) on both clusters; the produced records
# (3 partitions) are read back with kread.
capi-async: lib $(CAPI_BUILD)/async $(CAPI_BUILD)/kread
	$(call need_env,capi-async,KRABKA_BOOTSTRAP)
	$(call need_env,capi-async,KRABKA_BOOTSTRAP_TV1)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_ASYNC_TOPIC) 3
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP_TV1" $(CAPI_ASYNC_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_ASYNC_TOPIC) KRABKA_KREAD=$(CAPI_BUILD)/kread $(CAPI_BUILD)/async

# The elector and lease events (tests/c/elect.c) on both clusters.
capi-elect: lib $(CAPI_BUILD)/elect
	$(call need_env,capi-elect,KRABKA_BOOTSTRAP)
	$(call need_env,capi-elect,KRABKA_BOOTSTRAP_TV1)
	$(CAPI_BUILD)/elect

# Role groups (tests/c/group.c) on both clusters.
capi-group: lib $(CAPI_BUILD)/group
	$(call need_env,capi-group,KRABKA_BOOTSTRAP)
	$(call need_env,capi-group,KRABKA_BOOTSTRAP_TV1)
	$(CAPI_BUILD)/group tv2 > $(CAPI_BUILD)/group-tv2.log 2>&1 & tv2=$$!; \
	$(CAPI_BUILD)/group tv1 > $(CAPI_BUILD)/group-tv1.log 2>&1; tv1=$$?; \
	wait $$tv2; tv2=$$?; grep -v ' WARN \| INFO ' $(CAPI_BUILD)/group-tv2.log $(CAPI_BUILD)/group-tv1.log; \
	test $$tv2 = 0 && test $$tv1 = 0

# Elector sets (tests/c/electorset.c) on both clusters at once.
capi-electorset: lib $(CAPI_BUILD)/electorset
	$(call need_env,capi-electorset,KRABKA_BOOTSTRAP)
	$(call need_env,capi-electorset,KRABKA_BOOTSTRAP_TV1)
	$(CAPI_BUILD)/electorset tv2 > $(CAPI_BUILD)/electorset-tv2.log 2>&1 & tv2=$$!; \
	$(CAPI_BUILD)/electorset tv1 > $(CAPI_BUILD)/electorset-tv1.log 2>&1; tv1=$$?; \
	wait $$tv2; tv2=$$?; grep -v ' WARN \| INFO ' $(CAPI_BUILD)/electorset-tv2.log $(CAPI_BUILD)/electorset-tv1.log; \
	test $$tv2 = 0 && test $$tv1 = 0

# README.md's C quick start compiles (tests/c/readme_snippet.sh).
capi-readme: lib
	tests/c/readme_snippet.sh README.md $(CAPI_BUILD) $(CC)

# Electors under failovers and a cut link (tests/c/elect_faults.c): tv2, its
# extra listener (KRABKA_BOOTSTRAP_X1) and the proxy process build/kproxy.
capi-elect-faults: lib kproxy $(CAPI_BUILD)/elect_faults
	$(call need_env,capi-elect-faults,KRABKA_BOOTSTRAP)
	$(call need_env,capi-elect-faults,KRABKA_BOOTSTRAP_X1)
	KRABKA_KPROXY=$(CURDIR)/build/kproxy $(CAPI_BUILD)/elect_faults

# Record headers through the C ABI (tests/c/headers.c): metadata, resign to
# a named successor, guarded writes with headers, the verifier.
capi-headers-live: lib $(CAPI_BUILD)/headers
	$(call need_env,capi-headers-live,KRABKA_BOOTSTRAP)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_LIVE_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_BUILD)/headers

# The fork guard: calls in a child after fork() answer KRABKA_ERR_FORKED
# (never enter the Go runtime); the parent keeps its leadership.
capi-fork: lib $(CAPI_BUILD)/fork
	$(call need_env,capi-fork,KRABKA_BOOTSTRAP)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_LIVE_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_BUILD)/fork

# Leadership events, queues, logs and statistics on a real broker.
capi-events: lib $(CAPI_BUILD)/events
	$(call need_env,capi-events,KRABKA_BOOTSTRAP)
	$(GO) run ./tests/kafka/cmd/ktopic "$$KRABKA_BOOTSTRAP" $(CAPI_LIVE_TOPIC) 3
	KRABKA_C_TOPIC=$(CAPI_LIVE_TOPIC) $(CAPI_BUILD)/events

$(CAPI_BUILD)/bench: tests/c/bench.c include/krabka_coord.h | lib
	@mkdir -p $(CAPI_BUILD)
	$(CC) $(CAPI_CFLAGS) -O2 $< -o $@ $(CAPI_LDFLAGS)

capi-bench: lib $(CAPI_BUILD)/bench
	KRABKA_BENCH_SAMPLES=1 $(PERFDOC) record -bench capi -- $(CAPI_BUILD)/bench

build/examples/device_host: examples/c/device_host.c include/krabka_coord.h | lib
	@mkdir -p build/examples
	$(CC) -std=c99 -pthread -Wall -Wextra -Werror -pedantic -O2 -Ibuild/include \
		$< -o $@ -Lbuild -lkrabka_coord -Wl,-rpath,'$$ORIGIN/..'

build/examples/controller: examples/c/controller.c include/krabka_coord.h | lib
	@mkdir -p build/examples
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic -O2 -Ibuild/include \
		$< -o $@ -Lbuild -lkrabka_coord -Wl,-rpath,'$$ORIGIN/..'

build/examples/pipeline: examples/c/pipeline.c include/krabka_coord.h | lib
	@mkdir -p build/examples
	$(CC) -std=c99 -Wall -Wextra -Werror -pedantic -O2 -Ibuild/include \
		$< -o $@ -Lbuild -lkrabka_coord -Wl,-rpath,'$$ORIGIN/..'
capi-examples: build/examples/device_host build/examples/controller build/examples/pipeline

capi-install: lib
	@test -n "$(PREFIX)" || { echo "install: set PREFIX, e.g. make install PREFIX=/usr/local" >&2; exit 1; }
	INSTALL=1 PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" ./build.sh

# The operator's command line (cmd/krabka-coord).
#   make cli        build/bin/krabka-coord (build.sh builds it with the library)
#   make cli-test   unit tests (flags, properties files, help, exit codes, the
#                   ACL rules of check) and the live tests on real brokers:
#                   describe/roles/watch/leave against C device hosts, check on
#                   the test cluster, on a topic without the compaction
#                   settings, with a wrong SASL password and on an unreachable
#                   bootstrap, and the exporter's /metrics through a failover;
#                   run (run_live_test.go): two run processes on one role
#                   across a SIGKILL, a SIGSTOP past the lease and a cut link
#                   (a cluster of its own whose brokers advertise fault
#                   proxies, started through kafkatest), never two children
#                   alive at once; the write channel of a deposed child; exit
#                   codes. About 45 s of the target's time (10 s of it the start
#                   of that cluster).
#                   Uses the clusters named by KRABKA_BOOTSTRAP and
#                   KRABKA_SASL_BOOTSTRAP (make test exports them); when unset,
#                   kafkatest starts and stops its own.
#   make install PREFIX=...   also installs bin/krabka-coord (build.sh)
GO ?= go
CLI_BIN := build/bin/krabka-coord
CLI_TEST_ARGS ?=

.PHONY: cli cli-test cli-unit
build: cli

# build.sh builds the library and the command line, each only when stale.
cli: lib

# The broker-free tests only.
cli-unit:
	$(GO) vet ./cmd/...
	$(GO) test -count=1 -run 'Config|LaterSettings|BadProp|Properties|Help|Version|BadCommand|FlagsAfter|ACLJudgement|Unreachable|RunBad|Schedule|Watchdog|LineReader' ./cmd/krabka-coord/

cli-test: lib examples
	$(GO) vet ./cmd/...
	KRABKA_CLI_BIN=$(CURDIR)/$(CLI_BIN) KRABKA_CLI_C_HOST=$(CURDIR)/build/examples/device_host \
		$(GO) test -count=1 -timeout 15m $(CLI_TEST_ARGS) ./cmd/krabka-coord/

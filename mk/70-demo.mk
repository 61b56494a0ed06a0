# make demo: the README's first command. Builds the library, the C example
# host and the Node binding's dependencies, starts a local single-node Kafka
# (tests/kafka/cluster.sh; or uses $KRABKA_BOOTSTRAP when set) and runs one
# role with three members in three languages (C, Python, Node) as separate
# processes. The orchestrator (demo/) kills the leader, freezes the next one
# past its lease and resumes it, prints the timeline and failover times, and
# checks with read_committed that tokens never go backwards in the command log.
# It stops everything it started; it exits non-zero if the check fails.
#   make demo                     the full scenario (about 30 s plus Kafka start)
#   make demo DEMO_FLAGS=-verbose every command and renewal in the timeline
#   make demo-test                the shortened scenario as a Go test against
#                                 $KRABKA_BOOTSTRAP (make test sets it)
GO ?= go
DEMO_LIB ?= $(CURDIR)/build/libkrabka_coord.so
DEMO_C_HOST ?= $(CURDIR)/build/examples/device_host
DEMO_FLAGS ?=
# What the three hosts need built first (targets of the other fragments).
DEMO_DEPS ?= lib examples node-deps

.PHONY: demo demo-test demo-unit
demo: $(DEMO_DEPS)
	$(GO) run ./demo/cmd/krabka-demo -lib $(DEMO_LIB) -c-host $(DEMO_C_HOST) $(DEMO_FLAGS)

demo-test: $(DEMO_DEPS)
	$(call need_env,demo-test,KRABKA_BOOTSTRAP)
	KRABKA_COORD_LIBRARY=$(DEMO_LIB) KRABKA_DEMO_C_HOST=$(DEMO_C_HOST) $(GO) test -count=1 -v -run . ./demo/...

# The broker-free tests of the demo package (event parsing, the log check).
demo-unit:
	$(GO) test -count=1 -run 'Parse|LogCheck' ./demo/...

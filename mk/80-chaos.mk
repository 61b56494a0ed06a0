# The fault campaign and the older-broker runs (docs/RELIABILITY.md).
#   make chaos                               about 10 minutes of random faults, a fresh seed
#   make chaos CHAOS_SEED=N CHAOS_DURATION=30m   replay a seed / run longer
#   make chaos-short                         the 90 s campaign `make test` runs
#   make chaos CHAOS_FLAGS='-txn-version 1 -port-base 25500'   (default: the seed's parity picks it)
# The campaign needs root: its brokers and links run in network namespaces
# it makes (ip netns, veth, a bridge, tc) and removes on every way out.
# A run fails on a checker violation and on a missed minimum of acknowledged
# commands, takeovers or faults (tests/chaos/minimums.go, docs/RELIABILITY.md).
# Besides the primary role (C, Python and Node members) it runs five more
# roles held by two Go processes (tests/chaos/cmd/krabka-member, one client
# for several roles), on the primary role's partition of the coordination
# topic and on one more; a healthy holder deposed fails the run like a lost
# command (tests/chaos/deposed.go). The Go processes also hold a pipeline
# role (tests/chaos/pipeline.go): numbered requests are written during the
# faults, its leader turns each into one command with ProduceOffsets, the
# last leader drains the input, and a request missing or duplicated fails
# the run (CHAOS_FLAGS='-no-pipeline' leaves it out). make test's 90 s
# campaign (chaos-short) leaves it out (CHAOS_SHORT_FLAGS): an 8-minute run
# met a broker fault (a restarted broker committed, in __consumer_offsets, a
# transaction the transaction log never decided; docs/PIPELINES.md) that no
# client can prevent, and make test must not fail on it; its checker and the
# member's pipeline run in chaos-unit.
# The group mode (tests/chaos/group.go; CHAOS_FLAGS='-no-group' leaves it
# out): three more Go processes (cmd/krabka-member's group mode) join a role
# group of 16 shards, each shard's commands on its own partition, checked
# per shard like a role; member faults strike a group member two times in
# five; the report has the moves and the time to converge after each kill,
# restart, pause, resume, cut and heal. chaos-short leaves it out too
# (CHAOS_SHORT_FLAGS): it adds three processes and about twenty
# transactional producers, and the 90 s runs tried with it (load average
# 39-68 from other work) missed the other roles' minimums, the group's
# share of that not separated (docs/RELIABILITY.md); its checker, tracker
# and member run in chaos-unit.
# Each run prints its seed first and last; logs and result.json go to build/chaos/<seed>/.
GO ?= go
CHAOS_SEED ?= 0
CHAOS_DURATION ?= 10m
CHAOS_SHORT_DURATION ?= 90s
CHAOS_FLAGS ?=
CHAOS_SHORT_FLAGS ?= -no-pipeline -no-group
CHAOS_DEPS ?= lib examples node-deps kafka-fetch

.PHONY: chaos chaos-short chaos-unit
chaos: $(CHAOS_DEPS)
	$(GO) run ./tests/chaos/cmd/krabka-chaos -seed $(CHAOS_SEED) -duration $(CHAOS_DURATION) $(CHAOS_FLAGS)

chaos-short: $(CHAOS_DEPS)
	$(GO) run ./tests/chaos/cmd/krabka-chaos -seed $(CHAOS_SEED) -duration $(CHAOS_SHORT_DURATION) $(CHAOS_SHORT_FLAGS) $(CHAOS_FLAGS)

# The checker, the deposed-holder detection, the group mode's per-shard
# checker and convergence tracker, the Go member's mid-transaction hook and
# group mode (in memory), the fault proxy and the namespace lab on their
# own (no broker).
chaos-unit:
	$(GO) test -count=1 ./tests/chaos/ ./tests/chaos/cmd/krabka-member/ ./tests/chaos/netlab/ ./tests/kafka/faultproxy/

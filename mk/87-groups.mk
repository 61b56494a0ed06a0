# Role groups (issue 36, docs/GROUPS.md).
#   make group-test    the group tests alone: the in-memory tests of
#                      core/coord (assignment properties, balance, stickiness,
#                      eligibility, events, semaphore, bad input) and, on real
#                      brokers (tv1 and tv2 at once; kafkatest starts them when
#                      KRABKA_BOOTSTRAP is unset), four member processes with
#                      GROUP_TEST_SHARDS shards through join, eligibility off and
#                      on, leave, rejoin, SIGKILL, restart, SIGSTOP past the
#                      lease and SIGCONT, then the verifier over every shard's
#                      command partition (about 5 minutes on a loaded machine).
#                      make test runs it as its own suite (after client-test,
#                      which skips the broker test).
#   make group-bench   the same scenario with GROUP_BENCH_SHARDS (256) shards and
#                      leases of GROUP_BENCH_LEASE_MS (20 s: 256 producers renew
#                      each lease); each
#                      cluster's run writes bench/results/group-<cluster>-...json
#                      (moves, convergence time, balance after each event, the
#                      verifier's verdict; bench/README.md).
GO ?= go
GROUP_TEST_SHARDS ?= 16
GROUP_BENCH_SHARDS ?= 256
GROUP_BENCH_LEASE_MS ?= 20000
GROUP_BENCH_TVS ?= tv2 tv1

.PHONY: group-test group-bench

# client-test runs every test of core/kafka but this one: make test runs it
# in group-test, so that client-test's timeout keeps its margin.
client-test: CLIENT_TEST_ARGS += -skip '^TestGroupFourMemberProcesses$$'

BENCH_TARGETS += group-bench

group-test:
	$(GO) test -count=1 -timeout 5m -run 'TestGroup' ./core/coord/
	KRABKA_GROUP_SHARDS=$(GROUP_TEST_SHARDS) $(GO) test -count=1 -timeout 20m -run '^TestGroupFourMemberProcesses$$' -v ./core/kafka/

# One cluster after the other (GROUP_BENCH_TVS), so that the two runs do not
# load each other's figures.
group-bench:
	@set -e; for tv in $(GROUP_BENCH_TVS); do \
		KRABKA_GROUP_SHARDS=$(GROUP_BENCH_SHARDS) KRABKA_GROUP_LEASE_MS=$(GROUP_BENCH_LEASE_MS) KRABKA_GROUP_RESULTS=1 \
		$(GO) test -count=1 -timeout 40m -run "^TestGroupFourMemberProcesses\$$/^$$tv\$$" -v ./core/kafka/; \
	done

# Client layer (core config/client/leadership/describe, core/memtransport,
# core/kafka: the franz-go transport).
#   make client-test    go vet, the client unit tests (in-memory transport,
#                       manual clock) and the integration suite of core/kafka on
#                       real brokers, on transaction.version 1 and 2 and SASL.
#                       Uses the clusters named by KRABKA_BOOTSTRAP,
#                       KRABKA_BOOTSTRAP_TV1, KRABKA_SASL_BOOTSTRAP (+ _PLAIN_) as
#                       exported by tests/kafka/with-clusters.sh (`make test`);
#                       when unset, kafkatest starts the clusters itself and
#                       stops them at the end.
#   make client-bench   p50/p99 of acquire, renew, guarded produce, describe and
#                       the failover overhead on the local single-node brokers
#                       (not part of make test: the bench files build only with
#                       -tags bench, so make test cannot skip them). KRABKA_CLIENT_BENCH_N and
#                       KRABKA_CLIENT_BENCH_FAILOVERS change the counts. Then the
#                       live-view measures (TestFollowBench): planned handoffs,
#                       a partition of 1,000,000 records, 1,000 roles on one
#                       client (knobs in core/kafka/follow_bench_test.go).
GO ?= go
CLIENT_TEST_TIMEOUT ?= 15m
CLIENT_TEST_ARGS ?=

.PHONY: client-test client-bench

client-test:
	$(GO) vet ./core/...
	$(GO) test -count=1 -timeout 5m ./core/coord/ ./core/memtransport/
	$(GO) test -count=1 -timeout $(CLIENT_TEST_TIMEOUT) $(CLIENT_TEST_ARGS) ./core/kafka/...

client-bench:
	$(GO) test -tags bench -count=1 -timeout 40m -run '^(TestClientBench|TestFollowBench)$$' -v ./core/kafka/

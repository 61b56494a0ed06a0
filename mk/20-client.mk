# Client layer (core config/client/leadership/describe, core/memtransport,
# core/kafka: the franz-go transport).
#   make client-test    go vet, the client unit tests (in-memory transport,
#                       manual clock; the named in-process cluster and the Go
#                       example's test on it) and the integration suite of core/kafka on
#                       real brokers, on transaction.version 1 and 2 and SASL.
#                       Uses the clusters named by KRABKA_BOOTSTRAP,
#                       KRABKA_BOOTSTRAP_TV1, KRABKA_SASL_BOOTSTRAP (+ _PLAIN_) as
#                       exported by tests/kafka/with-clusters.sh (`make test`);
#                       when unset, kafkatest starts the clusters itself and
#                       stops them at the end.
#   make client-bench   p50/p99 of acquire, renew, guarded produce, describe (view and
#                       one-shot), the crash-failover overhead and guarded writes with
#                       1/8/64/256 writers on the clusters of CLIENT_BENCH_CLUSTERS
#                       (single node tv2 and tv1, and the production profile 3n-tv2:
#                       three brokers, replication 3, min.insync.replicas 2)
#                       (not part of make test: the bench files build only with
#                       -tags bench, so make test cannot skip them). KRABKA_CLIENT_BENCH_N and
#                       KRABKA_CLIENT_BENCH_FAILOVERS change the counts. Then the
#                       live-view measures (TestFollowBench) on CLIENT_BENCH_FOLLOW_CLUSTERS:
#                       planned handoffs, and on one node a partition of 1,000,000
#                       records and 1,000 roles on one client (knobs in
#                       core/kafka/follow_bench_test.go). Every cluster's run writes a
#                       results file into bench/results (bench/README.md); then
#                       `make perf-doc` regenerates the tables of docs/PERFORMANCE.md.
#   make handoff-bench  bench/handoff: the holder and its standbys as separate processes
#                       (three fresh candidate processes per trial, default topic):
#                       planned handoffs, crash failovers and one writer's guarded
#                       writes on fresh clusters of HANDOFF_BENCH_CLUSTERS (default
#                       1n-tv2,3n-tv2); results files procs-*.json (bench/handoff/run.sh;
#                       the ledger of each path: bench/handoff/LEDGER.md).
#   make engine-bench   krabka.engine=client (before) against =shared (after, core/kafka
#                       engine.go): TestEngineBench on ENGINE_BENCH_CLUSTER (ops, crash
#                       failover, 64/256 writers, 1,000 held roles: heap+stacks, goroutines,
#                       sockets; engine-*.json), then bench/handoff A/B trial by trial on
#                       ENGINE_HANDOFF_CLUSTERS with the three instants of each planned
#                       handoff (procs-engine-*.json).
GO ?= go
CLIENT_TEST_TIMEOUT ?= 15m
CLIENT_TEST_ARGS ?=
CLIENT_BENCH_CLUSTERS ?= 1n-tv2,1n-tv1,3n-tv2
CLIENT_BENCH_FOLLOW_CLUSTERS ?= 1n-tv2,3n-tv2

ENGINE_BENCH_CLUSTER ?= 1n-tv2
ENGINE_HANDOFF_CLUSTERS ?= 1n-tv2

.PHONY: client-test client-bench handoff-bench engine-bench

client-test:
	$(GO) vet ./core/...
	$(GO) test -count=1 -timeout 5m ./core/coord/ ./core/memtransport/ ./examples/go/...
	$(GO) test -count=1 -timeout $(CLIENT_TEST_TIMEOUT) $(CLIENT_TEST_ARGS) ./core/kafka/...

client-bench:
	KRABKA_CLIENT_BENCH_CLUSTERS=$(CLIENT_BENCH_CLUSTERS) KRABKA_CLIENT_BENCH_FOLLOW_CLUSTERS=$(CLIENT_BENCH_FOLLOW_CLUSTERS) \
	$(GO) test -tags bench -count=1 -timeout 60m -run '^(TestClientBench|TestFollowBench)$$' -v ./core/kafka/

handoff-bench:
	bench/handoff/run.sh

engine-bench:
	KRABKA_ENGINE_BENCH_CLUSTER=$(ENGINE_BENCH_CLUSTER) \
	$(GO) test -tags bench -count=1 -timeout 60m -run '^TestEngineBench$$' -v ./core/kafka/
	HANDOFF_BENCH_ENGINES=client,shared HANDOFF_BENCH_CLUSTERS=$(ENGINE_HANDOFF_CLUSTERS) bench/handoff/run.sh

# make pipeline-bench  guarded writes per second with consumed offsets carried
#                      (Leadership.ProduceOffsets) beside plain guarded writes, 1, 64
#                      and 256 writers on one leadership, on the clusters of
#                      PIPELINE_BENCH_CLUSTERS (issue 38; docs/PIPELINES.md). One results
#                      file per cluster (pipeline-*.json); then `make perf-doc`.
PIPELINE_BENCH_CLUSTERS ?= 1n-tv2,1n-tv1

.PHONY: pipeline-bench

pipeline-bench:
	KRABKA_PIPELINE_BENCH_CLUSTERS=$(PIPELINE_BENCH_CLUSTERS) \
	$(GO) test -tags bench -count=1 -timeout 30m -run '^TestPipelineBench$$' -v ./core/kafka/

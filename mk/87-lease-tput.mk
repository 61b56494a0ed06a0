# The lease throughput bench of issue 35, the three-broker profile
# (bench/scale -mode tput, bench/scale/tput.sh).
#   make lease-tput-bench   the lease transactions a second (T) a cluster
#                           sustains: on a fresh cluster of its own per
#                           entry of LEASE_TPUT_CLUSTERS (default
#                           1n-tv2,3n-tv2; tests/kafka/cluster.sh, base port
#                           LEASE_TPUT_PORT, default 27600, +100 per
#                           cluster, stopped at the end), one process holds
#                           LEASE_TPUT_ROLES roles (default 2000) with
#                           background renewal off and renews them with
#                           Leadership.Renew in a closed loop of each count
#                           of LEASE_TPUT_RENEWERS (default 64,256) for
#                           LEASE_TPUT_WINDOW (default 30s, after a warm-up:
#                           30 s before the first count, 5 s before the
#                           others): renewals a second, latency percentiles,
#                           failures, the process's and the brokers' CPU.
#                           Each cluster writes
#                           bench/results/lease-tput-<cluster>-...json; then
#                           `make perf-doc` (docs/PERFORMANCE.md, "Lease
#                           transactions a second"). About 2 to 3 minutes a
#                           cluster. Not part of make test.
#   LEASE_TPUT_CLUSTERS=3n-tv2 LEASE_TPUT_ROLES=300 LEASE_TPUT_WINDOW=10s \
#     LEASE_TPUT_OUT_DIR=/tmp/tput LEASE_TPUT_LABEL=smoke   a small run elsewhere
#   LEASE_TPUT_PROCS=2 LEASE_TPUT_PARTITIONS=16 LEASE_TPUT_WARMUP=5s \
#     LEASE_TPUT_FIRST_WARMUP=30s LEASE_TPUT_LEASE=60s      the other settings
# A labelled run (LEASE_TPUT_LABEL) stays out of the generated table.
LEASE_TPUT_CLUSTERS ?= 1n-tv2,3n-tv2
LEASE_TPUT_PORT ?= 27600

.PHONY: lease-tput-bench
BENCH_TARGETS += lease-tput-bench

lease-tput-bench: kafka-fetch
	LEASE_TPUT_CLUSTERS=$(LEASE_TPUT_CLUSTERS) LEASE_TPUT_PORT=$(LEASE_TPUT_PORT) bench/scale/tput.sh

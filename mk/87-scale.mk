# The scale bench of issue 35 (bench/scale).
#   make scale-bench   one process holding N roles (background renewal) and a
#                      second process waiting as standby for all of them, on
#                      a one-node broker of its own (cluster.sh --name scale
#                      --port $(SCALE_PORT), stopped at the end): heap plus
#                      goroutine stacks, goroutines and sockets per process and
#                      per role, CPU per renewal, renewals late or missed,
#                      takeovers, the time to acquire N free roles, the
#                      standby's takeover of all after the holder's SIGKILL
#                      (past the deadline), and a fresh process's fold of the
#                      topic. N from SCALE_ROLES (default "1000 10000"); each
#                      writes bench/results/scale-$(SCALE_LABEL)-<N>n-...json.
#                      Not part of make test (it runs for SCALE_DURATION,
#                      default 10 minutes, per N).
#   SCALE_ROLES=1000 SCALE_DURATION=2m SCALE_LABEL=before   a shorter run
#   SCALE_LEASE=30s SCALE_RENEW=10s SCALE_PARTITIONS=16     the client settings
#   SCALE_BOOTSTRAP=host:port                               use a running cluster instead
GO ?= go
SCALE_LABEL ?= after
SCALE_PORT ?= 27400

.PHONY: scale-bench
BENCH_TARGETS += scale-bench

scale-bench: kafka-fetch
	SCALE_LABEL=$(SCALE_LABEL) SCALE_PORT=$(SCALE_PORT) bench/scale/run.sh

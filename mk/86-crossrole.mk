# The cross-role stable-offset bench of issue 34 (bench/crossrole).
#   make crossrole-bench   a transaction left open on a coordination partition
#                          (the broker aborts it after its timeout plus the
#                          broker's scan) versus the healthy holders of the
#                          OTHER roles on that partition: on a topic of one
#                          partition, per round 4 roles each with a holder
#                          renewing in the background and a standby waiting
#                          in Acquire, a fifth role whose holder (a child
#                          process) is SIGKILLed, and an intruder that leaves
#                          one transaction open; counts the healthy holders
#                          deposed and times the killed holder's replacement.
#                          Lease 6 s (4 roles x 4 rounds), 10 s (4x4), 30 s
#                          (4x3) and the 6 s control without the intruder, on a
#                          one-node broker of its own (cluster.sh --name
#                          crossrole --port 27300, stopped at the end); about
#                          10 minutes. Results files
#                          bench/results/crossrole-$(CROSSROLE_LABEL)-...json.
#                          The "before" files were measured on 2d9f36b:
#                          make crossrole-bench CROSSROLE_LABEL=after measures
#                          a later commit the same way.
#   CROSSROLE_RUNS='6s,4,4,true 6s,4,4,false'   other settings (lease,roles,rounds,intruder)
#   CROSSROLE_BOOTSTRAP=host:port               use a running cluster instead
GO ?= go
CROSSROLE_LABEL ?= after

.PHONY: crossrole-bench
BENCH_TARGETS += crossrole-bench

crossrole-bench: kafka-fetch
	CROSSROLE_LABEL=$(CROSSROLE_LABEL) bench/crossrole/run.sh

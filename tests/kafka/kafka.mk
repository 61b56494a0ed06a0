# Included by the top-level Makefile. Real Apache Kafka for the tests
# (see tests/kafka/README.md).
KAFKA_DIR := tests/kafka
# tv2 = 1 node tv2, tv1 = 1 node transaction.version=1, sasl = 1 node SCRAM+ACLs, 3n = 3 nodes
KAFKA_CLUSTERS := tv2 tv1 sasl 3n

.PHONY: kafka-fetch kafka-up kafka-down kafka-env

## kafka-fetch: download the Kafka broker jars into tests/kafka/lib (once)
kafka-fetch:
	@$(KAFKA_DIR)/fetch.sh >/dev/null

## kafka-up: start every cluster the suite uses (tv2, tv1, sasl, 3n) and print their env
kafka-up: kafka-fetch
	@for n in $(KAFKA_CLUSTERS); do $(KAFKA_DIR)/cluster.sh start --name $$n >/dev/null || exit 1; done
	@$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) kafka-env

## kafka-env: print `export KRABKA_...` lines for the clusters (eval "$(make -s kafka-env)")
kafka-env:
	@for n in $(KAFKA_CLUSTERS); do $(KAFKA_DIR)/cluster.sh env --name $$n; done

## kafka-down: stop every cluster kafka-up started
kafka-down:
	@for n in $(KAFKA_CLUSTERS); do $(KAFKA_DIR)/cluster.sh stop --name $$n; done

## kafka-test: smoke tests on the real brokers (run by `make test` inside with-clusters.sh;
## alone, kafkatest starts and stops the clusters itself)
.PHONY: kafka-test
kafka-test:
	$(GO) test -count=1 -timeout 15m ./tests/kafka/...

## kproxy: the cut-link proxy that the C, Python and Node tests start
## (tests/kafka/cmd/kproxy; with-clusters.sh's tv2 advertises KRABKA_BOOTSTRAP_X1 for it)
.PHONY: kproxy
kproxy:
	$(GO) build -o build/kproxy ./tests/kafka/cmd/kproxy

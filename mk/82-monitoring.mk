# The Grafana dashboard and Prometheus alert rules of krabka-coord exporter
# (packaging/monitoring/, docs/OPERATIONS.md "Monitoring").
#   make monitoring-check  promtool check rules on the alert rules and on every
#                          query of the dashboard (as recording rules), and
#                          promtool test rules on the rules' unit tests.
#                          promtool comes from Debian's prometheus package,
#                          fetched once into build/tools/promtool
#                          (tests/tools/promtool.sh). No broker; make cli-test
#                          runs it first.
#   make monitoring-test   that, and the Go tests of cmd/krabka-coord/
#                          monitoring_test.go: every metric and label the
#                          dashboard and the rules name is in the real
#                          exporter's /metrics on a real broker (the cluster of
#                          KRABKA_BOOTSTRAP; make cli-test runs them too).
GO ?= go
MONITORING := packaging/monitoring
PROMTOOL := tests/tools/promtool.sh
MONITORING_BUILD := build/monitoring

.PHONY: monitoring-check monitoring-test
cli-test: monitoring-check

monitoring-check:
	@mkdir -p $(MONITORING_BUILD)
	$(GO) run ./tests/tools/dashboard-rules $(MONITORING)/grafana/krabka-coord.json >$(MONITORING_BUILD)/dashboard-queries.rules.yml
	$(PROMTOOL) check rules $(MONITORING)/prometheus/krabka-coord-rules.yml $(MONITORING_BUILD)/dashboard-queries.rules.yml
	cd $(MONITORING)/prometheus && $(CURDIR)/$(PROMTOOL) test rules krabka-coord-rules.test.yml

monitoring-test: monitoring-check
	KRABKA_CLI_BIN= $(GO) test -count=1 -run 'TestMonitoringArtifacts' ./cmd/krabka-coord/

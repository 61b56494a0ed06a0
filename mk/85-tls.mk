# TLS through the C API, Python and Node against the SASL cluster's TLS
# listeners (tests/kafka/cluster.sh --tls: SSL, SASL_SSL, and SSL requiring a
# client certificate, from a CA that tests/kafka/certs.sh makes with openssl).
# The Go side is in core/kafka/tls_test.go (client-test). Needs KRABKA_TLS_*
# (make test's with-clusters.sh sets them; or `make kafka-up` + kafka-env).
#   make tls-test
TLS_BUILD := build/tests/tls

.PHONY: tls-test
# (in the top-level TEST_TARGETS: make test runs it)

$(TLS_BUILD)/tls: tests/tls/tls.c include/krabka_coord.h | lib
	@mkdir -p $(TLS_BUILD)
	$(CC) $(CAPI_CFLAGS) -o $@ $< $(CAPI_LDFLAGS)

tls-test: lib $(TLS_BUILD)/tls python-lib python-pytest node-deps node-lib
	$(call need_env,tls-test,KRABKA_TLS_BOOTSTRAP)
	$(TLS_BUILD)/tls
	$(PY_ENV_VARS) PYTHONPATH=$(CURDIR)/$(PY_DIR)/src $(PY_PYTHON) -m pytest -p no:cacheprovider -q tests/tls/test_tls.py
	$(NODE_ENV_VARS) $(NODE) --test --test-reporter=spec tests/tls/tls.test.js

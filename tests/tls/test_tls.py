"""TLS through the Python binding against the SASL cluster's TLS listeners
(tests/kafka/cluster.sh --tls; make test exports KRABKA_TLS_*): SSL with
ssl.ca.location, SASL_SSL, mutual TLS with an encrypted key (librdkafka's
property names), and misconfigurations that fail at once naming the
problem. Run by `make tls-test`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import krabka_coord as kc

ENV = ("KRABKA_TLS_BOOTSTRAP", "KRABKA_TLS_SASL_BOOTSTRAP", "KRABKA_TLS_MTLS_BOOTSTRAP", "KRABKA_TLS_CERTS")


@pytest.fixture(scope="module")
def tls() -> dict:
    missing = [k for k in ENV if not os.environ.get(k)]
    assert not missing, f"{missing} not set: run under make test (with-clusters.sh starts the SASL cluster with --tls)"
    return {k: os.environ[k] for k in ENV}


def cert(tls: dict, name: str) -> str:
    return str(Path(tls["KRABKA_TLS_CERTS"]) / name)


def key_password(tls: dict) -> str:
    return Path(cert(tls, "client.password")).read_text().strip()


def role() -> str:
    return "alice.py-tls-%d-%d" % (os.getpid(), time.time_ns() % 10**9)


def cases(tls: dict) -> dict:
    ca = cert(tls, "ca.pem")
    return {
        "ssl": (tls["KRABKA_TLS_BOOTSTRAP"], {"security.protocol": "SSL", "ssl.ca.location": ca}),
        "sasl_ssl": (tls["KRABKA_TLS_SASL_BOOTSTRAP"], {
            "security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": "alice-secret"}),
        "mtls": (tls["KRABKA_TLS_MTLS_BOOTSTRAP"], {
            "security.protocol": "SSL", "ssl.ca.location": ca,
            "ssl.certificate.location": cert(tls, "client.pem"), "ssl.key.location": cert(tls, "client.key"),
            "ssl.key.password": key_password(tls)}),
    }


@pytest.mark.parametrize("label", ["ssl", "sasl_ssl", "mtls"])
def test_tls_acquire_renew_describe_resign(tls: dict, label: str) -> None:
    bootstrap, extra = cases(tls)[label]
    r = role()
    with kc.Client({"bootstrap.servers": bootstrap, "request.timeout.ms": 10000, **extra}) as c:
        lead = c.acquire(r, "py-" + label, timeout=30)
        try:
            lead.renew()
            st = c.describe(r, timeout=10)
            assert st.current and st.holder == "py-" + label and st.token == lead.token
            lead.resign()
        finally:
            lead.close()


def test_tls_misconfigurations_name_the_problem(tls: dict) -> None:
    ca = cert(tls, "ca.pem")
    bad = [
        ("wrong CA", tls["KRABKA_TLS_BOOTSTRAP"], {"security.protocol": "SSL", "ssl.ca.location": cert(tls, "other-ca.pem")},
         "TLS", "not signed by a CA in ssl.ca.location"),
        ("plaintext on the TLS port", tls["KRABKA_TLS_BOOTSTRAP"], {}, "TRANSPORT", "on a TLS listener"),
        ("expired client certificate", tls["KRABKA_TLS_MTLS_BOOTSTRAP"], {
            "security.protocol": "SSL", "ssl.ca.location": ca,
            "ssl.certificate.location": cert(tls, "expired.pem"), "ssl.key.location": cert(tls, "expired.key")},
         "INVALID_CONFIG", "expired"),
        ("no client certificate", tls["KRABKA_TLS_MTLS_BOOTSTRAP"], {"security.protocol": "SSL", "ssl.ca.location": ca},
         "TLS", "client certificate"),
    ]
    for label, bootstrap, extra, code, mention in bad:
        with pytest.raises(kc.KrabkaError) as info:
            with kc.Client({"bootstrap.servers": bootstrap, "request.timeout.ms": 10000, **extra}) as c:
                c.describe(role(), timeout=30)
        assert info.value.name == code and mention in str(info.value), f"{label}: {info.value.name}: {info.value}"

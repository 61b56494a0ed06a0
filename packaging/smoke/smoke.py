"""Smoke test of an installed krabka-coord wheel or sdist (make dist-test).

Run with the venv's python from a folder outside the repository: takes a role
on $KRABKA_BOOTSTRAP, renews, makes one guarded write to $KRABKA_SMOKE_TOPIC,
checks with describe that the cluster names this member with the same token,
resigns. Also checks that the library loaded is the one inside the installed
package (not a repository build), and that the package ships its test aids:
krabka_coord.testing fences a holder by a blind successor on an in-process
cluster, and the pytest plugin is registered as a pytest11 entry point.
Prints "smoke: ok ..." or raises.
"""

import os
import sys
import time

import krabka_coord as kc

bootstrap = os.environ["KRABKA_BOOTSTRAP"]
topic = os.environ["KRABKA_SMOKE_TOPIC"]
expect_prefix = os.environ.get("KRABKA_SMOKE_EXPECT_LIBRARY_UNDER")

lib = kc.library_path
if expect_prefix and not os.path.realpath(lib).startswith(os.path.realpath(expect_prefix)):
    sys.exit("smoke: FAIL: the library %s is not the installed one (under %s)" % (lib, expect_prefix))
assert kc.library_version() == kc.__version__, (kc.library_version(), kc.__version__)

role = "dist-smoke-py-%d" % time.time_ns()
with kc.Client({"bootstrap.servers": bootstrap, "client.id": "dist-smoke-py"}) as client:
    with client.acquire(role, "smoke-1", timeout=120) as lead:
        token = lead.token
        lead.renew(timeout=60)
        assert lead.token == token, "a renewal kept the token"
        part, offset = lead.produce(topic, b"smoke command token " + str(token).encode(), timeout=60)
        assert part >= 0 and offset >= 0, (part, offset)
        st = client.describe(role, timeout=60)
        assert st.holder == "smoke-1" and st.token == token and st.current, st
        lead.resign(timeout=60)
# The test aids of the installed package (no broker).
from importlib.metadata import entry_points  # noqa: E402

from krabka_coord.testing import Cluster  # noqa: E402

plugins = [ep.value for ep in entry_points(group="pytest11") if ep.value.startswith("krabka_coord")]
assert plugins == ["krabka_coord.pytest_plugin"], plugins
with Cluster() as cluster:
    mem_lead = cluster.client().acquire("ctl", "a", timeout=60)
    cluster.mint("ctl")
    try:
        mem_lead.produce("commands", b"refused", timeout=60)
        raise AssertionError("the in-process cluster did not fence the holder of a blind successor")
    except kc.FencedError:
        pass
    assert cluster.records("commands") == []

print("smoke: ok: %s (library %s) took %s with token %s, renewed, wrote offset %d, resigned; in-process cluster and pytest plugin ok"
      % (kc.__version__, lib, role, token, offset))

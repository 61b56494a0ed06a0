"""The pytest plugin of krabka-coord: fixtures for the in-process cluster of
krabka_coord.testing. pytest loads it by itself when the package is
installed (the ``pytest11`` entry point ``krabka_coord``); without
installing, name it in a conftest.py: ``pytest_plugins =
["krabka_coord.pytest_plugin"]``.

Fixtures (each test gets its own; nothing is shared between tests):

``krabka_cluster``
    a krabka_coord.testing.Cluster with a unique name and a manual clock,
    closed after the test (with the clients its client() made). Options by
    marker: ``@pytest.mark.krabka_cluster(partitions=3, real_time=True,
    name="ctl")``.
``krabka_clock``
    ``krabka_cluster.clock`` (now_ms(), advance(ms or timedelta)).
``krabka_cluster_factory``
    a function taking Cluster's arguments (name, partitions, real_time) for
    a test that needs more than one cluster; each is closed after the test.

The plugin imports krabka_coord only when a test asks for one of them, so
a project with the package installed but without a loadable library is
not affected until it uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, List

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from .testing import Clock, Cluster

MARKER = "krabka_cluster"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        MARKER + "(name=None, partitions=1, real_time=False): options of the krabka_cluster fixture "
                 "(krabka_coord.testing.Cluster)",
    )


@pytest.fixture
def krabka_cluster_factory() -> Iterator[Callable[..., "Cluster"]]:
    """Makes in-process clusters (krabka_coord.testing.Cluster(...)); each
    is closed when the test ends."""
    from .testing import Cluster

    made: List[Cluster] = []

    def make(*args: Any, **kwargs: Any) -> Cluster:
        c = Cluster(*args, **kwargs)
        made.append(c)
        return c

    try:
        yield make
    finally:
        for c in reversed(made):
            c.close()


@pytest.fixture
def krabka_cluster(request: pytest.FixtureRequest, krabka_cluster_factory: Callable[..., "Cluster"]) -> "Cluster":
    """An in-process cluster (mem://<unique name>, manual clock), closed
    after the test. Options: @pytest.mark.krabka_cluster(partitions=...,
    real_time=..., name=...)."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        raise TypeError("@pytest.mark.%s takes keyword arguments only (name=, partitions=, real_time=), got %r"
                        % (MARKER, marker.args))
    return krabka_cluster_factory(**kwargs)


@pytest.fixture
def krabka_clock(krabka_cluster: "Cluster") -> "Clock":
    """The clock of krabka_cluster."""
    return krabka_cluster.clock

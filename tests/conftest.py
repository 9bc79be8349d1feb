"""Shared pytest configuration."""

from __future__ import annotations

import os

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    """With ``DCMAP_EXPECT_ENGINE`` set (scripts/test_pure_python.py sets it), refuse to
    run the tests on any other engine than the one named."""
    expected = os.environ.get("DCMAP_EXPECT_ENGINE")
    if expected:
        import dcmap_dist
        from dcmap_dist.compiled import describe

        if describe() != expected:
            raise pytest.UsageError(f"DCMAP_EXPECT_ENGINE is {expected!r}, but the tests import the "
                                    f"{describe()} of {dcmap_dist.__file__}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the session's Ray is marked ``ray``."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (starting one takes 4 to 11 s here)."""
    ray = pytest.importorskip("ray")
    from dcmap_dist.run.ray import cluster

    # 4 logical CPUs on this 2-core machine: tests run up to 4 workers, and a solve refuses
    # more workers than the CPUs its Ray offers
    ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    yield ray
    cluster.disconnect()


@pytest.fixture
def python_engine(monkeypatch):
    """The test's searches run on the Python engine, the native one's reference: the test
    patches its internals (a weakened key, a counting link table), or needs it slow."""
    monkeypatch.setenv("DCMAP_ENGINE", "python")


@pytest.fixture(scope="module")
def paper():
    """The paper's example network (its Figure 1)."""
    from dcmap_dist.io.load import load_network

    return load_network("paper-example")


@pytest.fixture(scope="module")
def child():
    """bnlearn's child network (bundled)."""
    from dcmap_dist.io.load import load_network

    return load_network("child")

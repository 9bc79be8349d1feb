"""Shared pytest configuration."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="run the whole suite, the tests marked slow too (about 50 minutes on 2 cores; CI runs it). Without "
                          "it, and without -m or a test named by its id, the quick subset runs: the slow tests are "
                          "deselected")


def pytest_sessionstart(session: pytest.Session) -> None:
    """With ``DCMAP_EXPECT_ENGINE`` set (scripts/test_matrix.py and scripts/test_sanitized.py
    set it), refuse to run the tests on any other engine than the one named."""
    expected = os.environ.get("DCMAP_EXPECT_ENGINE")
    if expected:
        import dcmap_dist
        from dcmap_dist.compiled import describe

        if describe() != expected:
            raise pytest.UsageError(f"DCMAP_EXPECT_ENGINE is {expected!r}, but the tests import the "
                                    f"{describe()} of {dcmap_dist.__file__}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the session's Ray is marked ``ray``. The tests marked ``slow``
    are deselected (and reported so) unless ``--full`` is given, a ``-m`` expression
    chooses, or a test is named by its id (``tests/test_x.py::test_y``): the bare
    ``pytest`` runs the quick subset."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
    if config.getoption("--full") or config.getoption("markexpr") or any("::" in str(a) for a in config.args):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.hook.pytest_deselected(items=slow)


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

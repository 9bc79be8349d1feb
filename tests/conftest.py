"""Shared pytest configuration."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests of test_ray_launch.py last: its ``ray up`` and ``ray down`` run
    ``ray stop``, which ends every Ray process on the machine, other tests' included."""
    items.sort(key=lambda item: item.path.name == "test_ray_launch.py")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (starting one takes 4 to 11 s here)."""
    ray = pytest.importorskip("ray")
    from dcmap_dist import distributed

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    yield ray
    distributed.disconnect()

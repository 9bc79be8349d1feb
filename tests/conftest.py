"""Shared pytest configuration."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (starting one takes 4 to 11 s here)."""
    ray = pytest.importorskip("ray")
    from dcmap_dist import distributed

    # 4 logical CPUs on this 2-core machine: tests run up to 4 workers, and a solve refuses
    # more workers than the CPUs its Ray offers
    ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=False)
    yield ray
    distributed.disconnect()

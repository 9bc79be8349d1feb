"""Shared pytest configuration."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests of test_ray_launch.py last: its ``ray up`` and ``ray down`` run
    ``ray stop``, which ends every Ray process on the machine, other tests' included."""
    items.sort(key=lambda item: item.path.name == "test_ray_launch.py")

"""The real networks beside the repository (``../shared/networks``, from the bnlearn
repository), for the tests that read them."""

from __future__ import annotations

from pathlib import Path

import pytest

NETWORKS = Path(__file__).resolve().parents[1].parent / "shared" / "networks"


def shared(name: str) -> Path:
    """The path of ``name`` in the shared networks; the test is skipped if it is missing."""
    path = NETWORKS / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path

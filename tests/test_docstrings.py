"""The examples in the public API's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

PUBLIC = ["dcmap_dist", "dcmap_dist.solve", "dcmap_dist.io.load", "dcmap_dist.cost.base", "dcmap_dist.cost.user",
          "dcmap_dist.cost.dcmap"]


@pytest.mark.parametrize("name", PUBLIC)
def test_the_examples_of_a_public_module_run(name):
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                                        verbose=False)
    assert attempted > 0, f"{name} has no example"
    assert failed == 0, f"{failed} of {attempted} examples of {name} fail (printed above)"


@pytest.mark.parametrize("name", [*PUBLIC[1:], "dcmap_dist.result", "dcmap_dist.model.network"])
def test_a_public_module_names_what_it_exports(name):
    module = importlib.import_module(name)
    assert module.__all__ and all(hasattr(module, n) for n in module.__all__)

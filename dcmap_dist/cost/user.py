"""User cost models: a callable or an object behind :class:`UserCost`, which turns a
failure or a malformed answer of the user's code into a :class:`CostError` naming the
model and the cluster-layer; :func:`load_cost` makes any model from its spec."""

from __future__ import annotations

import importlib
import json
import math
import numbers
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from ..limits import INTERRUPT
from ..model.network import Network
from .base import CostContext, CostError, CostModel, checked_cost
from .dcmap import DcmapCost

__all__ = ["FunctionCost", "UserCost", "load_cost", "model_description"]


class FunctionCost:
    """A user cost function as a model: ``function(ctx)`` returns a cost or a pair
    (cost, message). Without a message, the cluster-layer passes its node set."""

    def __init__(self, function: Callable[[CostContext], Any], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", "user")

    def params(self) -> dict[str, Any]:
        return {}

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        value = self.function(ctx)
        return value if isinstance(value, tuple) else (value, ctx.nodes)


HOOKS = ("node_lower_bounds", "absorber_lower_bounds", "absorbed_lower_bounds", "absorption_lower_bound",
         "grouping_lower_bound", "message_lower_bound", "estimate")


class UserCost:
    """A user's cost model behind the checks the search relies on.

    Whatever the user's code raises, and any answer that is not what the interface asks
    for (a pair of a finite positive cost and a hashable message; finite numbers from
    the hooks; a dict of JSON values from ``params``), becomes a :class:`CostError` that
    names the model and the cluster-layer, with the original exception as its cause.
    The model's optional hooks (:data:`HOOKS`) are offered, checked, exactly when the
    model has them, because the search looks them up with ``getattr``.
    """

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        self._params = self._checked_params()

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def evaluate(self, ctx: CostContext) -> tuple[float, Hashable]:
        value = self._call("evaluate", ctx, ctx)
        if not (isinstance(value, tuple) and len(value) == 2):
            raise CostError(
                f"cost model {self.name}: evaluate returned {_short(value)}{_where(ctx)}; expected (cost, message)"
            )
        cost, message = value
        try:
            hash(message)
        except TypeError:
            raise CostError(
                f"cost model {self.name}: the message{_where(ctx)} is a {type(message).__name__}, "
                "which is not hashable (use a frozenset or a tuple)"
            ) from None
        return checked_cost(cost, ctx, self.name), message

    def __getattr__(self, attr: str) -> Any:
        model = self.__dict__.get("model")
        if attr in HOOKS and callable(getattr(model, attr, None)):
            return getattr(self, f"_checked_{attr}")
        raise AttributeError(attr)

    def _checked_node_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("node_lower_bounds", graph)

    def _checked_absorber_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("absorber_lower_bounds", graph)

    def _checked_absorbed_lower_bounds(self, graph: Network) -> dict[str, float]:
        return self._checked_per_node("absorbed_lower_bounds", graph)

    def _checked_per_node(self, method: str, graph: Network) -> dict[str, float]:
        """A per-node hook's answer: a dict from nodes to finite numbers."""
        bounds = self._call(method, None, graph)
        if not isinstance(bounds, Mapping):
            raise CostError(f"cost model {self.name}: {method} returned {_short(bounds)}; expected a dict")
        for x, bound in bounds.items():
            if not isinstance(x, str) or x not in graph.index:
                raise CostError(f"cost model {self.name}: {method} names {x!r}, which is not a node")
            self._number(method, x, bound)
        return dict(bounds)

    def _checked_message_lower_bound(self, graph: Network, nodes: frozenset[str], message: Hashable) -> float:
        return self._number("message_lower_bound", nodes, self._call("message_lower_bound", nodes, graph, nodes, message))

    def _checked_absorption_lower_bound(self, graph: Network, absorber: str, children: tuple) -> float:
        return self._number("absorption_lower_bound", absorber,
                            self._call("absorption_lower_bound", absorber, graph, absorber, children))

    def _checked_grouping_lower_bound(self, graph: Network, nodes: frozenset[str], message: Hashable,
                                      parents: tuple[str, ...], layer_nodes: frozenset[str]) -> float:
        return self._number("grouping_lower_bound", nodes,
                            self._call("grouping_lower_bound", nodes, graph, nodes, message, parents, layer_nodes))

    def _checked_estimate(self, graph: Network, nodes: frozenset[str]) -> float:
        return self._number("estimate", None, self._call("estimate", None, graph, nodes))

    def _call(self, method: str, at: Any, *args: Any) -> Any:
        """The model's ``method`` called with ``args``; ``at`` is what errors name (see :func:`_where`)."""
        try:
            return getattr(self.model, method)(*args)
        except Exception as exc:  # the user's code may fail in any way
            raise CostError(f"cost model {self.name}: {method} failed{_where(at)}: {type(exc).__name__}: {exc}") from exc
        except (SystemExit, KeyboardInterrupt) as exc:
            if isinstance(exc, KeyboardInterrupt) and INTERRUPT.is_set():
                raise  # the user's second Ctrl-C, which the command line turns into this
            # the user's code called sys.exit() or raised it: an error of that code, not an
            # end of the solve (which would leave no result and exit 0)
            raise CostError(f"cost model {self.name}: {method}{_where(at)} raised {type(exc).__name__}"
                            f"{f'({exc})' if str(exc) else ''}: a cost model must return, not exit") from exc

    def _number(self, method: str, at: Any, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise CostError(
                f"cost model {self.name}: {method} returned {_short(value)}{_where(at)}; expected a finite number"
            )
        return float(value)

    def _checked_params(self) -> dict[str, Any]:
        if not hasattr(self.model, "params"):
            return {}
        params = self._call("params", None)
        try:
            if not isinstance(params, Mapping):
                raise TypeError(f"it returned {_short(params)}")
            json.dumps(dict(params), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise CostError(
                f"cost model {self.name}: params() must return a dict of JSON values "
                f"(they go into the result file): {exc}"
            ) from None
        return dict(params)


def _where(at: CostContext | frozenset[str] | str | None) -> str:
    """Where an error happened, for its message: a cluster-layer (a context, or the
    nodes of a message's cluster-layer), a node, or nowhere in particular (None).
    Formatted only when an error is raised, not on every call."""
    if isinstance(at, CostContext):
        return f" on cluster-layer {sorted(at.nodes)} (layer {at.layer})"
    if isinstance(at, frozenset):
        return f" for cluster-layer {sorted(at)}"
    return "" if at is None else f" for node {at!r}"


def _short(value: Any) -> str:
    """``repr(value)``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def model_description(model: CostModel) -> dict[str, Any]:
    """What a result file and a checkpoint say of a model: its name and its parameters
    (none if it has no ``params``)."""
    params = getattr(model, "params", None)
    return {"name": getattr(model, "name", "user"), **(dict(params()) if callable(params) else {})}


def load_cost(spec: str | CostModel | Callable, order: str = "cpt", addition: float = 0.6) -> CostModel:
    """A cost model from ``dcmap``, ``package.module:name``, a model or a callable.

    Parameters
    ----------
    spec : str, CostModel or callable
        ``"dcmap"`` (the built-in :class:`DcmapCost`), or ``"package.module:name"``
        where ``name`` is a function of a :class:`~dcmap_dist.cost.base.CostContext`
        (see :class:`FunctionCost`), a model object with an ``evaluate`` method, or a
        class whose no-argument instance is such a model; or the model or function itself.
    order, addition : str, float
        The ``dcmap`` model's settings (see :class:`DcmapCost`).

    Returns
    -------
    CostModel
        :class:`DcmapCost`, or any other model behind :class:`UserCost`, which checks
        its answers and names the cluster-layer of an error.

    Examples
    --------
    >>> from dcmap_dist import load_cost
    >>> load_cost("dcmap", order="paper")
    DcmapCost(order='paper', addition=0.6, name='dcmap')
    >>> type(load_cost(lambda context: float(len(context.nodes)))).__name__
    'UserCost'
    """
    if isinstance(spec, (DcmapCost, UserCost)):
        return spec
    if not isinstance(spec, str):
        return _user_model(spec, None)
    if spec == "dcmap":
        return DcmapCost(order=order, addition=addition)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--cost must be 'dcmap' or 'package.module:name', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a user module may fail in any way while importing
        raise CostError(f"cannot import cost module {module_name!r}: {type(exc).__name__}: {exc}") from exc
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no cost {attr!r}") from None
    if isinstance(target, type):
        try:
            target = target()
        except Exception as exc:  # the user's constructor
            raise CostError(f"cannot create cost model {spec}: {type(exc).__name__}: {exc}") from exc
    return _user_model(target, spec)


def _user_model(target: Any, spec: str | None) -> UserCost:
    """``target`` (a model object or a cost function) behind :class:`UserCost`, named by its
    own ``name``, else by ``spec``, else by its type."""
    if not hasattr(target, "evaluate"):
        if not callable(target):
            raise ValueError(f"{spec or _short(target)} is neither a cost function nor a cost model")
        target = FunctionCost(target, spec)
    name = getattr(target, "name", None) or spec or type(target).__name__
    return UserCost(target, str(name))

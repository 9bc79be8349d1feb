"""dcmap_dist: exact optimal clustering of Bayesian network nodes with dependent costs.

>>> from dcmap_dist import load_network, solve
>>> result = solve(load_network("paper-example"))
>>> result.optimal_cost, len(result.solutions), result.proven_optimal
(54.0..., 3, True)
"""

from ._version import __version__
from .compiled import check_build

check_build()  # before any compiled module is imported: one that could crash is refused (ImportError)

from .cost import ChildClusterLayer, CostContext, DcmapCost, evaluate_mapping, load_cost
from .io.load import load_network
from .model.network import Network, NetworkError
from .result import Solution, SolveResult
from .solve import solve

__all__ = [
    "ChildClusterLayer", "CostContext", "DcmapCost", "Network", "NetworkError", "Solution", "SolveResult",
    "evaluate_mapping", "load_cost", "load_network", "solve",
]

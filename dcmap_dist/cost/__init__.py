"""Cost models (SPEC section 4): the interface a model is handed and answers (base), the
built-in ``dcmap`` model (dcmap), and user models behind checks (user). The names a
user's own model needs are here."""

from .base import ChildClusterLayer, ClusterLayerCost, CostContext, CostError, CostModel, evaluate_mapping
from .dcmap import DcmapCost
from .user import FunctionCost, UserCost, load_cost

__all__ = ["ChildClusterLayer", "ClusterLayerCost", "CostContext", "CostError", "CostModel", "DcmapCost",
           "FunctionCost", "UserCost", "evaluate_mapping", "load_cost"]

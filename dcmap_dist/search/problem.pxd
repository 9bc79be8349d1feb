# The compiled layout of search/problem.py's Problem: Cython reads this file beside the source and
# pure Python ignores it (docs/search.md, "The engine's speed"). search/problem.py turns off
# Cython's typing from annotations: its ``int`` hints mean Python ints of any size.
cimport cython

from dcmap_dist.model.topology cimport RecentMemo, Topology
from dcmap_dist.search.bounds cimport LowerBound
from dcmap_dist.search.branch cimport Branch
from dcmap_dist.search.keys cimport LinkKeys
from dcmap_dist.search.tolerance cimport within


cdef class Problem:
    cdef public object use_bound, network, graph, model, scheme
    cdef public Topology topo
    cdef public object _costs, parents_of, children_of, closures
    cdef public object messages, _estimates, _estimator, _items, watch, slow_answers
    cdef public RecentMemo _masks
    cdef public LowerBound bound
    cdef public LinkKeys keys
    cpdef object cluster_layer_cost(self, object nodes, object cluster, tuple children)
    cpdef object _new_cluster_layer(self, object nodes, object cluster, object frontier)
    @cython.locals(child=Branch, masks=RecentMemo)
    cpdef object _apply(self, Branch branch, object proposal, object joined, object merged, object free,
                        object below, list unfixed, dict single_costs, dict reach,
                        object g_min=*)
    cpdef object link_key(self, Branch branch)
    cpdef object next_proposal(self, Branch branch)
    cpdef object _read_later(self, object items, object layer)
    cpdef object _comps_read_later(self, object comps, object layer)

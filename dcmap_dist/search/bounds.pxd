# The compiled layout of search/bounds.py's LowerBound: Cython reads this file beside the source
# and pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed").
from dcmap_dist.model.topology cimport RecentMemo, Topology


cdef class LowerBound:
    cdef public Topology topo
    cdef public object own, absorbed, absorbing, _unplaced, above
    cdef public object _absorptions, _absorbers, _groupings, _next_layers
    cdef public RecentMemo _known
    cpdef object lookup(self, object layer, object assigned, object frontier)
    cpdef tuple known(self, object layer, object assigned, object frontier)

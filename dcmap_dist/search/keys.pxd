# The compiled layout of search/keys.py's LinkKeys: Cython reads this file beside the source and
# pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed").
from dcmap_dist.model.topology cimport Topology
from dcmap_dist.search.branch cimport Branch


cdef class LinkKeys:
    cdef public Topology topo
    cdef public object kind, parents_of, closures, _reach, final
    cdef public dict _masks, _tuples
    cpdef object of(self, Branch branch)
    cpdef object _full(self, Branch branch, tuple comps, object fixed, tuple frontier)

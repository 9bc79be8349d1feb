# The compiled layout of model/topology.py's classes: Cython reads this file beside the source
# and pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed"). As
# extension types, Memo keeps dict's own C lookup (a Python subclass of dict answers every
# ``memo[key]`` through a slower generic slot), a RecentMemo's lookup is a C call, and a
# Topology's tables are fields of a C struct, read without a dict lookup where the search
# declares a Topology.
cdef class Memo(dict):
    cdef public object compute

cdef class RecentMemo:
    cdef public object compute
    cdef public Py_ssize_t kept
    cdef public dict newer, older
    cpdef object lookup(self, object key)

cdef class Topology:
    cdef public object network, _names, n, all_nodes, l_max
    cdef public list layer, parents, children, neighbours, layer_mask, above, upto, desc, anc

# The compiled layout of search/combinations.py: Cython reads this file beside the source and
# pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed"). The steps
# of the enumeration call one another as C functions.
from dcmap_dist.model.topology cimport Topology


cdef object _grow(tuple context, object joined, object merged, object union, object layers_used,
                  object down, object up, object cand_nodes, object cand_comps, object banned_nodes,
                  object banned_comps)
cpdef object violators(Topology topo, object union, object down, object up, object joined)

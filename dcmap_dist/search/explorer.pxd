# The compiled layout of search/explorer.py's QueueEntry: Cython reads this file beside the source
# and pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed").
from dcmap_dist.search.branch cimport Branch


cdef class QueueEntry:
    cdef public double g_hat
    cdef public long long seq
    cdef public Branch branch

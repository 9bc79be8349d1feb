# The compiled layout of search/linking.py's Entry: Cython reads this file beside the source and
# pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed").
cimport cython


@cython.final
cdef class Entry:
    cdef public double best
    cdef public long long record

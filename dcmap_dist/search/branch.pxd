# The compiled layout of search/branch.py's Branch and QueueEntry: Cython reads this file beside the source and
# pure Python ignores it (as search/problem.pxd; docs/search.md, "The engine's speed").
cimport cython


@cython.final
cdef class Branch:
    cdef public int layer
    cdef public object assigned
    cdef public tuple comps, frontier
    cdef public double cost
    cdef public tuple joins
    cdef public long long link
    cdef public double estimate, bound
    cdef public object fixed
    cpdef tuple fields(self)
    cpdef Branch linked(self, object record)
    cpdef Branch advanced(self, object record=*)


cpdef long long link_of(object record)
cpdef object record_of(long long link)


@cython.final
cdef class QueueEntry:
    cdef public double g_hat
    cdef public long long seq
    cdef public Branch branch
    cdef public bytes comps

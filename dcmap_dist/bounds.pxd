# The compiled layout of bounds.py's LowerBound: Cython reads this file beside the source
# and pure Python ignores it (as engine.pxd; docs/search.md, "The engine's speed").
cdef class LowerBound:
    cdef public object topo, _own, _absorbed, _absorbing, _unplaced, _above
    cdef public object _absorptions, _absorbers, _groupings, _next_layers
    cdef public dict _known

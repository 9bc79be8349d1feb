# The compiled layout of search/tolerance.py: Cython reads this file beside the source and pure
# Python ignores it (as search/problem.pxd). The modules that cimport it call within in C.
cpdef bint within(double cost, double bound)

"""Scaling studies on unrolled dynamic networks: random and real templates, replication of
a k-slice optimum, similarity to the optimal set, power-law growth fits."""

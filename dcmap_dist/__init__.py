"""dcmap_dist: exact optimal clustering of Bayesian network nodes with dependent costs."""

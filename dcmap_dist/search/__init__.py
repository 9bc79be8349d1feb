"""The exact search: the problem and its expansion (problem, combinations, bounds), linking
and the loop over open branches (linking, histories, branch_queue, explorer), the state as plain data (state),
what a search returns (outcome), the audit of every reported mapping, and
heuristics and baselines."""

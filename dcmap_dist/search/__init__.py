"""The exact search: a branch (branch), the problem and its expansion (problem,
combinations, bounds), link keys and the link table (keys, linking, histories), the loop
over open branches (branch_queue, explorer: the Python engine), the engine's boundary
(engine), the seam the native engine (native_engine.pyx over native/) reads the Python
one through (core), the batch format (batches), the state as plain data (state), SPEC's tolerance (tolerance), what a search
returns (outcome), the audit of every reported mapping (audit), the first mappings
(heuristics) and the baselines (baselines)."""

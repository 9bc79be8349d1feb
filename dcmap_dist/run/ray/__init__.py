"""The search on Ray: the driver (driver), attaching to Ray and the pool of actors
(cluster), the coordinator actor (coordinator) with its worker actors (crew), a slot per
worker (steps) and its snapshots (snapshots), the worker actors (worker), and the records
they exchange (protocol); the batches of completions they send are the engines' (search/batches.py)."""

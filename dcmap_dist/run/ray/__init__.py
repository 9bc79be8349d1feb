"""The search on Ray: the driver (driver), attaching to Ray and the pool of actors
(cluster), the coordinator actor (coordinator) with a slot per worker (steps) and its
snapshots (snapshots), the worker actors (worker), the batches they send (batches), and
the records they exchange (protocol)."""

"""The search on Ray: the driver (connect, the pool, the loop), the coordinator actor and
the worker actors."""

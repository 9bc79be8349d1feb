"""The search on Ray: a component's search from the driver (distributed), as the
ordinary search (driver) or by contours (contours), attaching to Ray and the pool of actors
(cluster), the coordinator actor (coordinator) and its parts: its worker actors (crew),
the search it holds (search) with a slot per worker (steps), the steps in turns (turns)
by the rules of a step (rules), what passes between the workers besides (exchange), its
snapshots (snapshots), the recovery from lost workers (recovery) and its reports
(reports); the worker actors (worker), and the records they exchange (protocol); the
batches of completions they send are the engines' (search/batches.py)."""

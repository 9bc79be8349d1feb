"""Drivers that run the search: the driver loop (loop), serially in this process (serial),
serially by contours with a proven lower bound that rises (contours), or on Ray workers
(ray)."""

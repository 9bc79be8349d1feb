"""Drivers that run the search: the driver loop (loop), serially in this process (serial)
or on Ray workers (ray)."""

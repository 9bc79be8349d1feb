"""Drivers that run the search: serially in this process (serial) or on Ray workers (ray)."""

"""The network and what is read off it: the DAG (network), its layers and masks (topology),
and feasible mappings (mappings)."""

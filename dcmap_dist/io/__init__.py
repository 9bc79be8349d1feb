"""Reading networks (load, bif, interop with pgmpy and networkx, dynamic templates) and
writing outputs safely (outputs)."""

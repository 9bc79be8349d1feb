"""Reading networks (``load``, the one entry point; ``files``, text and JSON read safely;
``plain``, networks from plain data and networkx; ``bif``; ``interop`` with pgmpy and
pyAgrum; ``dynamic`` templates) and writing outputs safely (``outputs``)."""

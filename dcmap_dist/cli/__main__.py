"""``python -m dcmap_dist.cli`` runs the ``dcmap`` command line (as ``python -m dcmap_dist`` does)."""

import sys

from . import main

sys.exit(main())

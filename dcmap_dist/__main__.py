"""``python -m dcmap_dist`` runs the ``dcmap`` command line."""

import sys

from .cli import main

sys.exit(main())

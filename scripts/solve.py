"""Run ``dcmap solve`` (or ``dcmap resume``) on the Ray cluster this script is started in.

This is the script that ``ray submit`` uploads to the head node and runs there (see
``cluster_configs/README.md``). It passes its arguments to ``dcmap solve``, or to
``dcmap resume`` when the first one is ``resume``, and adds ``--address auto``, so the
search attaches to the running cluster instead of starting a Ray instance of its own,
unless an ``--address`` is given. It exits with ``dcmap``'s return code.

    ray submit cluster_configs/workstation.yaml scripts/solve.py -- \\
        asia --workers 2 --checkpoint /tmp/asia-ck --output /tmp/asia.json
    ray submit cluster_configs/workstation.yaml scripts/solve.py -- \\
        resume /tmp/asia-ck --workers 2 --output /tmp/asia.json

or, through the Ray job server (the working directory is uploaded; the package must
already be installed on the cluster, as the cluster configurations' setup does):

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python scripts/solve.py asia --workers 2 --output /tmp/asia.json

A relative ``--output`` is relative to the directory the script runs in on the head
node: the home directory under ``ray submit``, a temporary copy of the working
directory under ``ray job submit``; give an absolute path or ``-`` (stdout).
"""

from __future__ import annotations

import sys

from dcmap_dist.cli import main


def solve_arguments(args: list[str]) -> list[str]:
    """The ``dcmap`` arguments for ``args``: ``solve`` then ``args`` (``resume`` then the
    rest, when ``args`` start with ``resume``), then ``--address auto`` unless ``args``
    already choose an address."""
    command, rest = ("resume", args[1:]) if args[:1] == ["resume"] else ("solve", args)
    chosen = any(arg == "--address" or arg.startswith("--address=") for arg in rest)
    return [command, *rest] if chosen else [command, *rest, "--address", "auto"]


if __name__ == "__main__":
    sys.exit(main(solve_arguments(sys.argv[1:])))

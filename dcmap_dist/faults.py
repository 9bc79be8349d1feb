"""Faults of the machine a run is on, as opposed to bugs and bad input: Ray not starting
in time, a full disk, a read-only or vanished folder. Such a fault ends a command as an
outcome (exit code :data:`EXIT_CODE`) with a message that names it and what to do; a
search that had begun has its best mapping written first (a checkpoint refused by the
disk is handled where it is written: :mod:`dcmap_dist.checkpoint.session`)."""

from __future__ import annotations

import errno

__all__ = ["EXIT_CODE", "EnvironmentFault", "MACHINE_ERRNOS"]

EXIT_CODE = 6  # the command line's exit code for a fault of the machine (README, Troubleshooting)
# a write refused by the machine rather than by the path given: a full disk or quota, a
# read-only file system, an input/output error
MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


class EnvironmentFault(RuntimeError):
    """The machine failed the run (not a bug, not bad input); the message says what to do."""

"""A reader of stdout that goes away early (`kubeberth simulate ... -o json | head`).

Python ignores SIGPIPE, so the next write to the closed pipe raises BrokenPipeError, which would
end the command with a traceback (and, were it caught, the flush at exit would fail again). As
git and coreutils, which SIGPIPE kills, the command stops quietly: nothing on stderr, exit
status 141 (128 + SIGPIPE, what a shell reports for them; `set -o pipefail` sees a failure).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

SIGPIPE_EXIT = 141  # 128 + SIGPIPE (13)


def guard_stdout(command: Callable[[], int]) -> int:
    """`command()`'s exit status, with what it printed flushed; SIGPIPE_EXIT, quietly, when the
    reader of stdout has gone (argparse's --help exits through SystemExit: flushed alike)."""
    try:
        try:
            return command()
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        return SIGPIPE_EXIT


def _stdout_to_devnull() -> None:
    """What stdout still holds goes nowhere: the flush at exit finds no closed pipe to fail on."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): nothing flushed at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)

"""Python's cyclic garbage collector, held off while the command imports its stack.

Importing pandas, pyarrow and numba allocates some 175,000 objects that live as long as the
process; the collector, on, walks them over and over as they arrive (some 250 collections, two of
them full: ~0.09 s of CPU of the command's start-up, on the critical path).  The command line holds
the collector off from its first line (``hold``, the launcher) until its imports are done
(``release``): the objects allocated by then are moved to the collector's permanent generation
(``gc.freeze``: the few hundred unreachable ones among them are kept, which a full collection would
free for ~0.07 s of CPU), and the collector is on again for the run.  A process forked in between
(the early processes) inherits the hold and releases it first thing.  Anything else (``api``,
in-process callers) never holds it: ``release`` then does nothing.
"""

from __future__ import annotations

import gc

_held = False  # the collector was turned off by ``hold`` and is not on again yet


def hold() -> None:
    """Turn the collector off until ``release`` (if it is on)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """After ``hold``: every object so far into the permanent generation, the collector on again."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()

"""An object kept as the one bytes object of its pickle (``Packed``), unpickled where it is used.

The main process of a run of many reports holds some of each report's results from the stage that
makes them to the one that reads them (each report's POP partial, from stage C to the POP
reduction).  Unpickled, such a result is a few KB of small Python objects (arrays, frames, dicts)
per report, held for the whole run and interleaved with what else the process keeps; as its pickle
it is one bytes object of a fraction of that size, unpickled only by the step that reads it (in a
forked process, where that is where the step runs)."""

from __future__ import annotations

import pickle
from typing import Generic, TypeVar

T = TypeVar("T")


class Packed(Generic[T]):
    """``obj`` pickled; ``unpack()`` gives a copy of it back (each call a new one).  ``size``: a measure
    of ``obj`` its maker records beside the bytes, read without unpickling them (a POP partial's rows
    after the device reduction: ``PopPartial.packed``)."""

    __slots__ = ("blob", "size")

    def __init__(self, obj: T, size: int = 0) -> None:
        self.blob = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        self.size = size

    def unpack(self) -> T:
        return pickle.loads(self.blob)

    def __getstate__(self) -> tuple[bytes, int]:
        return self.blob, self.size

    def __setstate__(self, state: tuple[bytes, int]) -> None:
        self.blob, self.size = state

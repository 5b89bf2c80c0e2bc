"""What translation produces: columnar batches of Paraver records, before formatting.

- ``EventBatch``: n event records on global threads, each with the same number of
  (type, value) pairs; a value column holding names (object dtype) is a dynamic
  type whose ids the writer assigns.
- ``StateIntervals``: prioritised intervals that the writer paints into a
  gap-free state timeline per thread.
- ``CommBatch``: communication records between two global threads.

At equal times records are written states, then events, then communications;
among events, ``order`` decides (lower first): ends before starts, inner ends
before outer ends, outer starts before inner starts, punctual events last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.names import Names
from nsys2prv.core.tally import Tally

# One (type, value) column of an EventBatch: the type id (one int, or an int64 id per row) and the
# values (int64, or names: a ``Names`` or an object array, whose ids the writer assigns).
TypeIds = Union[int, np.ndarray]
Values = Union[np.ndarray, Names]
Pair = tuple[TypeIds, Values]

ORDER_SPAN = 1 << 20


def end_order(depth: np.ndarray | int) -> np.ndarray:
    return ORDER_SPAN - 1 - np.asarray(depth, np.int64)


def start_order(depth: np.ndarray | int) -> np.ndarray:
    return ORDER_SPAN + np.asarray(depth, np.int64)


PUNCTUAL_ORDER = 2 * ORDER_SPAN + ORDER_SPAN // 2


@dataclass
class EventBatch:
    time: np.ndarray  # int64 trace time
    thread: np.ndarray  # int64 global thread index
    order: np.ndarray  # int64 tie-break at equal times
    pairs: list[Pair]  # (type id: int or int64 array, values: int64 or names)

    def __len__(self) -> int:
        return len(self.time)


@dataclass
class StateIntervals:
    thread: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    prio: np.ndarray


@dataclass
class CommBatch:
    send_thread: np.ndarray
    recv_thread: np.ndarray
    log_send: np.ndarray
    phys_send: np.ndarray
    log_recv: np.ndarray
    phys_recv: np.ndarray
    size: np.ndarray
    tag: np.ndarray

    def __len__(self) -> int:
        return len(self.send_thread)


@dataclass
class CategoryCount(Tally):
    records: int = 0  # Paraver records written from these rows
    translated_rows: int = 0


@dataclass
class Translation:
    """Everything translated from the reports, ready for the writer."""

    events: list[EventBatch] = field(default_factory=list)
    states: list[StateIntervals] = field(default_factory=list)
    comms: list[CommBatch] = field(default_factory=list)
    counts: dict[str, CategoryCount] = field(default_factory=dict)

    def count(self, kind: str) -> CategoryCount:
        return self.counts.setdefault(kind, CategoryCount())

    def absorb(self, counts: dict[str, CategoryCount]) -> None:
        """Add the counts of another translation (kind -> CategoryCount) to these."""
        for kind, c in counts.items():
            mine = self.count(kind)
            mine.absorb(c)
            mine.records += c.records
            mine.translated_rows += c.translated_rows


def interval_events(
    start: np.ndarray,
    end: np.ndarray,
    thread: np.ndarray,
    start_pairs: list[Pair],
    depth: np.ndarray | int = 0,
    end_pairs: list[Pair] | None = None,
) -> list[EventBatch]:
    """A begin record (the given pairs) and an end record (same types, value 0) per interval."""
    n = len(start)
    if end_pairs is None:
        end_pairs = [(t, np.zeros(n, np.int64)) for t, _ in start_pairs]
    depth = np.broadcast_to(np.asarray(depth, np.int64), (n,))
    return [
        EventBatch(start, thread, start_order(depth), start_pairs),
        EventBatch(end, thread, end_order(depth), end_pairs),
    ]


def sparse_interval_events(
    start: np.ndarray,
    end: np.ndarray,
    thread: np.ndarray,
    pairs: list[Pair],
    optional: list[tuple[int, Values, np.ndarray]],
) -> list[EventBatch]:
    """Like ``interval_events``, plus optional (type, values, present) pairs written only on the
    rows where ``present`` holds: rows are grouped by which optional pairs they have."""
    n = len(start)
    if not optional:
        return interval_events(start, end, thread, pairs)
    present = np.column_stack([p for _, _, p in optional]).astype(bool)
    pattern = present @ (1 << np.arange(present.shape[1], dtype=np.int64))
    batches = []
    for code in np.unique(pattern):
        sel = pattern == code
        extra: list[Pair] = [(t, v[sel]) for (t, v, _), on in zip(optional, present[sel][0]) if on]
        batches += interval_events(start[sel], end[sel], thread[sel], [(t, v[sel]) for t, v in pairs] + extra)
    return batches if n else []


def caller_levels(df: pd.DataFrame) -> list[tuple[int, Values, np.ndarray]]:
    """A call table's caller1..callerN columns (``nsys.readers.callchains``) as optional pairs of
    ``sparse_interval_events``: Extrae's caller types (``registry.CALLER``) where a call has that level."""
    cols = [(t, f"caller{k}") for k, t in R.CALLER.items() if f"caller{k}" in df]
    return [(t.id, Names.of(df[c]), df[c].notna().to_numpy()) for t, c in cols]

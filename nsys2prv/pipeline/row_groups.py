"""A slice's rows from the table cache: the row groups of a kind's cached Parquet table (rows,
first row, range of starts and ends: ``Groups``, found by ``scan_groups`` when ``slices.plan``
cuts a report) and the rows of a time slice read from them (``owned``, ``running_at``,
``overlapping``, ``at_positions``).  A slice job decodes each row group once (``Decoded``): its
own rows, those running at its start, its launch calls and the NVTX ranges around them mostly lie
in the same groups; each group is cut as Arrow (a view where the rows kept are a run) and the parts
converted to pandas once, as converting each group and concatenating them would make them."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from nsys2prv.nsys.cache import CacheDamage, TableCache


@dataclass
class Groups:
    """The row groups of one cached table: rows, first row, and the range of starts and ends."""

    where: tuple[str, str, str]  # the table cache's root, the SQLite export, the kind
    rows: np.ndarray
    first: np.ndarray
    min_start: np.ndarray
    max_start: np.ndarray
    max_end: np.ndarray


@contextmanager
def _parquet(where: tuple[str, str, str]):
    """The cached Parquet file of a kind (``TableCache.parquet_file``: never through a link)."""
    root, source, kind = where
    with TableCache(Path(root), Path(source)).parquet_file(kind) as pf:
        if pf is None:
            raise CacheDamage(f"{kind}: no longer in the table cache")
        yield pf


def scan_groups(where, pf, step: int) -> tuple[Groups, np.ndarray] | None:
    if not {"start", "end"} <= set(pf.schema_arrow.names):
        return None
    n = pf.metadata.num_row_groups
    rows = np.array([pf.metadata.row_group(i).num_rows for i in range(n)], np.int64)
    lo, hi, top = (np.zeros(n, np.int64) for _ in range(3))
    sample = []
    for i in range(n):
        t = pf.read_row_group(i, columns=["start", "end"], use_threads=False)
        s, e = t.column("start").to_numpy(), t.column("end").to_numpy()
        lo[i], hi[i], top[i] = s.min(), s.max(), e.max()
        sample.append(_every(s, step))
    first = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    return Groups(where, rows, first, lo, hi, top), np.concatenate(sample) if sample else np.zeros(0, np.int64)


PARTITION_KTH = 256  # a group's sample of at most this many values is found by partition, not a sort


def _every(s: np.ndarray, step: int) -> np.ndarray:
    """``np.sort(s)[::step]``: the values of ranks 0, step, 2 x step, ... of ``s`` -- by ``np.partition``
    at those ranks where they are few (a 10M-row report's groups: 0.03 s against 0.29 s of sorting)."""
    kth = np.arange(0, len(s), step)
    return np.partition(s, kth)[kth] if len(kth) <= PARTITION_KTH else np.sort(s)[::step]


class Decoded:
    """The row groups one slice job has decoded, by table and group: its own rows, those running at
    its start, its launch calls and the ranges around them mostly lie in the same groups, read and
    decompressed once (dropped with the job)."""

    def __init__(self) -> None:
        self.got: dict[tuple[tuple[str, str, str], int], pa.Table] = {}

    def groups(self, g: Groups, idx: np.ndarray) -> list[pa.Table]:
        missing = [int(i) for i in idx if (g.where, int(i)) not in self.got]
        if missing:
            with _parquet(g.where) as pf:
                for i in missing:
                    self.got[(g.where, i)] = pf.read_row_group(i, use_threads=False)
        return [self.got[(g.where, int(i))] for i in idx]


def _read(g: Groups, columns: list[str] | None, wanted, memo: Decoded | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows (and their positions in the table) of the row groups ``wanted`` selects (a boolean per
    group), filtered by ``keep(start, end, first row) -> mask`` in ``wanted``'s second item: each
    group cut as Arrow (a run of rows: a view), the parts converted to pandas once."""
    select, keep = wanted
    idx = np.flatnonzero(select)
    if memo is None:
        memo = Decoded()
    parts, pos = [], []
    for i, t in zip(idx, memo.groups(g, idx)):
        at = np.flatnonzero(keep(t.column("start").to_numpy(), t.column("end").to_numpy(), g.first[i]))
        run = len(at) == 0 or int(at[-1]) - int(at[0]) + 1 == len(at)
        part = t.slice(int(at[0]) if len(at) else 0, len(at)) if run else t.take(at)
        parts.append(part if columns is None else part.select(columns))
        pos.append(g.first[i] + at)
    if not parts:
        with _parquet(g.where) as pf:
            empty = pf.schema_arrow.empty_table().to_pandas()
        return (empty[columns] if columns else empty), np.zeros(0, np.int64)
    return _frame(parts), np.concatenate(pos).astype(np.int64)


def _frame(parts: list[pa.Table]) -> pd.DataFrame:
    """The parts (of one table's row groups) as one DataFrame, as converting each group and
    concatenating them makes it: in one conversion where every group has the same categories
    (Arrow would unify others; pandas makes such a column text)."""
    coded = [j for j, f in enumerate(parts[0].schema) if pa.types.is_dictionary(f.type)]
    chunks = [[c for p in parts for c in p.column(j).chunks] for j in coded]
    same = all(c.dictionary.equals(cs[0].dictionary) for cs in chunks for c in cs[1:])
    if same:
        return pa.concat_tables(parts).to_pandas(use_threads=False)
    return pd.concat([p.to_pandas(use_threads=False) for p in parts], ignore_index=True)


def owned(g: Groups, lo: int, hi: int, columns=None, memo: Decoded | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows whose start is in [lo, hi), in table order, and their positions."""
    sel = (g.max_start >= lo) & (g.min_start < hi)
    return _read(g, columns, (sel, lambda s, e, _: (s >= lo) & (s < hi)), memo)


def running_at(g: Groups, t: int, columns=None, memo: Decoded | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows that start before ``t`` and end after it."""
    sel = (g.min_start < t) & (g.max_end > t)
    return _read(g, columns, (sel, lambda s, e, _: (s < t) & (e > t)), memo)


def overlapping(
    g: Groups, t0: int, t1: int, columns=None, memo: Decoded | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows with start <= t1 and end >= t0 (those that contain an instant of [t0, t1])."""
    sel = (g.min_start <= t1) & (g.max_end >= t0)
    return _read(g, columns, (sel, lambda s, e, _: (s <= t1) & (e >= t0)), memo)


def at_positions(g: Groups, positions: np.ndarray, columns=None, memo: Decoded | None = None) -> pd.DataFrame:
    """The rows at sorted unique ``positions``, in that order."""
    grp = np.searchsorted(g.first, positions, "right") - 1
    sel = np.zeros(len(g.rows), bool)
    sel[grp] = True

    def keep(s, e, first):  # (the group's rows among ``positions``)
        m = np.zeros(len(s), bool)
        a, b = np.searchsorted(positions, [first, first + len(s)])
        m[positions[a:b] - first] = True
        return m

    df, pos = _read(g, columns, (sel, keep), memo)
    return df.iloc[np.searchsorted(pos, positions)].reset_index(drop=True)

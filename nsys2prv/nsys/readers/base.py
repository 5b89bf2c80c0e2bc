"""What every reader shares: the Reader record, the read result and small column helpers.

A reader turns the tables of one report into one *normalised table* (a pandas
DataFrame with plain columns, documented on each reader; names taken from StringIds
are categorical, see ``text_names``) plus counts of what it could not use.  Readers never assume a
schema version: they build their SELECT
from the columns the probe found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from nsys2prv.core.tally import Tally
from nsys2prv.nsys.database import Report, strip_version_suffix


@dataclass
class ReadResult(Tally):
    """A normalised table and the bookkeeping that goes into the conservation summary
    (``source_rows``: rows read from the export for this kind)."""

    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    # (export table, its id column, the normalised column holding it): the table is that export
    # table's rows one for one (less those dropped, counted) with their start, end and id as exported,
    # the ids read as integers (``nsys.lifetimes.Covered``: its processes' lifetimes from these rows)
    as_exported: tuple[str, str, str] | None = None

    def times_as_exported(self) -> bool:
        """No row dropped (but exact duplicates) nor given another end: the rows' times are the
        export's (with ``as_exported``)."""
        return set(self.dropped) <= {DUPLICATE} and UNTERMINATED not in self.notes


OPTIONAL_MISSING = "lacks optional column(s)"
DUPLICATE = "duplicate of another row (identical in every column): translated once"
UNTERMINATED = "unterminated (end is NULL): closed at the report's last timestamp"
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _drop_duplicates(res: ReadResult) -> None:
    """Rows of a normalised table identical to an earlier one in every column (an export that
    repeats rows) are dropped and counted, not translated twice.  Numeric and categorical columns
    are hashed together first (a few vector operations); only rows whose hash repeats are compared."""
    df = res.table
    if df is None or len(df) < 2:
        return
    start = df["start"].to_numpy() if "start" in df else None
    if start is not None and start.dtype.kind in "iu" and bool((start[1:] >= start[:-1]).all()):
        # sorted by start (as exports are): equal rows are in runs of equal starts
        same = np.flatnonzero(start[1:] == start[:-1])
        if not len(same):
            return
        _drop_among(res, df, np.union1d(same, same + 1))
        return
    h = np.zeros(len(df), np.uint64)
    with np.errstate(over="ignore"):
        for c in df.columns:
            col = df[c]
            if isinstance(col.dtype, pd.CategoricalDtype):
                v = col.cat.codes.to_numpy().astype(np.uint64)
            elif isinstance(col.dtype, np.dtype) and col.dtype.kind in "iub":
                v = col.to_numpy().astype(np.int64).view(np.uint64)
            elif col.dtype.kind in "iuf":  # (float, or a nullable integer: NULL as NaN)
                v = col.to_numpy(np.float64, na_value=np.nan).view(np.uint64)
            else:
                continue  # (text: compared below, on the candidates only)
            h = (h ^ v) * _MIX
            h ^= h >> np.uint64(29)
    maybe = pd.Series(h).duplicated(keep=False).to_numpy()
    if maybe.any():
        _drop_among(res, df, np.flatnonzero(maybe))


def _drop_among(res: ReadResult, df: pd.DataFrame, idx: np.ndarray) -> None:
    """Drop (and count) the rows of ``idx`` (sorted) equal in every column to an earlier one of them."""
    try:
        dup_sub = df.iloc[idx].duplicated(keep="first").to_numpy()
    except TypeError:  # (a column of unhashable values)
        return
    if dup_sub.any():
        dup = np.zeros(len(df), bool)
        dup[idx[dup_sub]] = True
        res.drop(DUPLICATE, int(dup.sum()))
        res.table = df[~dup].reset_index(drop=True)


@dataclass(frozen=True)
class Reader:
    """How one normalised table is read; its name, categories and side are declared in ``kinds.py``.
    ``read`` also accounts for what the queries found: rows dropped for text in a numeric column
    (``Report.type_drops``) and optional columns missing (``Report.col_or_null(warn=True)``) go
    into the result's tally, the first as dropped rows, the second as a note on every row."""

    tables: tuple[str, ...]  # export tables it may read (for `nsys export --tables`)
    read: Callable[[Report], ReadResult | None]
    # its result says it holds tables[0]'s rows as exported (``ReadResult.as_exported``): stage A takes
    # that table's process lifetimes from the rows it reads instead of scanning it again
    as_exported: bool = False

    def __post_init__(self):
        if not isinstance(self.read, _Accounted):
            object.__setattr__(self, "read", _Accounted(self.read))


class _Accounted:
    """A reader's read function with the accounting around it (``Reader``)."""

    def __init__(self, fn: Callable[[Report], ReadResult | None]):
        self.__wrapped__ = fn

    def __call__(self, report: Report) -> ReadResult | None:
        fn = self.__wrapped__
        missing_before = {t: list(c) for t, c in report.optional_missing.items()}
        with report.counting_type_drops() as drops:
            res = fn(report)
        if drops:
            if res is None:
                res = ReadResult(table=None, source_rows=0)
            for reason, n in drops.items():
                res.source_rows += n
                res.drop(reason, n)
        if res is not None:
            _drop_duplicates(res)
            for table, cols in report.optional_missing.items():
                new = [c for c in cols if c not in missing_before.get(table, [])]
                rows = report.count(table) if new else 0
                if rows:
                    res.note(f"{table} {OPTIONAL_MISSING}: {', '.join(new)} (their values are not written)", rows)
        return res


def int64(col: pd.Series | np.ndarray, fill: int = 0) -> np.ndarray:
    """Any numeric-ish column (Int64 with NULLs, float, object) as int64, NULL -> fill."""
    if getattr(col, "dtype", None) == np.int64:  # already int64 (no NULL): as it is
        return np.asarray(col)
    s = pd.to_numeric(pd.Series(col), errors="coerce")
    return s.fillna(fill).astype(np.int64).to_numpy()


def to_int64(df: pd.DataFrame, col: str, fill: int = 0) -> None:
    """``df[col] = int64(df[col], fill)`` -- skipped when the column is int64 already (setting a
    column makes pandas rebuild its blocks)."""
    if col not in df or df[col].dtype != np.int64:
        df[col] = int64(df[col] if col in df else np.full(len(df), np.nan), fill)


def text_names(report: Report, ids, strip_suffix: bool = False) -> pd.Categorical:
    """StringIds keys -> names, a categorical column; unknown ids become '<unknown name #id>'.
    Each distinct id is looked up (and its name built) once and each name stored once: a column
    of long names repeated on many rows (demangled kernels) is never materialised per row --
    not here, not in the Parquet cache (dictionary-encoded) and not in translation (``Names``)."""
    ids = pd.Series(ids)
    codes, uniq = pd.factorize(ids, use_na_sentinel=True)
    uniq = np.asarray(uniq, dtype=object)
    names = report.lookup(uniq)
    missing = pd.isna(names)
    if missing.any():
        names[missing] = [f"<unknown name #{v}>" for v in uniq[missing]]
    if (codes < 0).any():  # NULL ids
        names = np.append(names, f"<unknown name #{ids[codes < 0].iloc[0]}>")
        codes = np.where(codes < 0, len(names) - 1, codes)
    if strip_suffix:
        names = np.array([strip_version_suffix(str(u)) for u in names], dtype=object)
    return text_column(names, codes)


def text_column(names: np.ndarray, codes: np.ndarray) -> pd.Categorical:
    """Rows ``names[codes]`` as a categorical column (each distinct name stored once)."""
    ncodes, uniq = pd.factorize(names)
    return pd.Categorical.from_codes(ncodes[codes], categories=pd.Index(uniq, dtype=object))


def interval_frame(df: pd.DataFrame, result: ReadResult, max_time: int | None = None) -> pd.DataFrame:
    """Common time hygiene for start/end tables.

    NULL ``end`` (unterminated range or call) is closed at ``max_time`` (NVIDIA's
    own convention) and noted; rows with no start or with end < start are dropped
    and counted.
    """
    if df["start"].dtype == np.int64 and df["end"].dtype == np.int64:  # no NULL time: the usual case
        backwards = df["end"].to_numpy() < df["start"].to_numpy()
        result.drop("end before start", int(backwards.sum()))
        return df[~backwards].reset_index(drop=True)
    start = pd.to_numeric(df["start"], errors="coerce")
    end = pd.to_numeric(df["end"], errors="coerce")
    no_start = start.isna()
    result.drop("no start timestamp", int(no_start.sum()))
    df = df[~no_start.to_numpy()].copy()
    start, end = start[~no_start], end[~no_start]
    open_ended = end.isna()
    if open_ended.any():
        close_at = max_time if max_time is not None else int(np.nanmax([start.max(), end.max()]))
        end = end.fillna(close_at)
        end = np.maximum(end, start)
        result.note(UNTERMINATED, int(open_ended.sum()))
    df["start"] = start.astype(np.int64).to_numpy()
    df["end"] = pd.Series(end).astype(np.int64).to_numpy()
    backwards = df["end"].to_numpy() < df["start"].to_numpy()
    result.drop("end before start", int(backwards.sum()))
    return df[~backwards].reset_index(drop=True)


GPU_ACTIVITY_COLUMNS = ("gpid", "device", "context", "stream", "corr")


def read_gpu_activity(
    report: Report, table: str, extra: dict[str, str], numeric: tuple[str, ...] = (), warn: tuple[str, ...] = ()
) -> tuple[pd.DataFrame, ReadResult] | None:
    """Rows of a GPU activity table (kernels, memcpy, memset, graph executions): start, end, gpid,
    device, context, stream, corr (-1 = none) and the ``extra`` columns (normalised name -> export
    column, NULL where the export lacks it); ``numeric`` extras become int64 (NULL -> 0).  A missing
    export column of ``warn`` (normalised names) is noted (``Reader``)."""
    if not report.has(table, "start", "end", "deviceId", "streamId", "globalPid"):
        return None
    cols = "".join(f", {report.col_or_null(table, col, name, warn=name in warn)}" for name, col in extra.items())
    df = report.query(
        f"SELECT start, end, globalPid AS gpid, deviceId AS device, "
        f"{report.col_or_null(table, 'contextId', 'context')}, streamId AS stream, "
        f"{report.col_or_null(table, 'correlationId', 'corr', warn=True)}{cols} FROM {table}"
    )
    res = ReadResult(table=df, source_rows=len(df))
    if pd.api.types.is_integer_dtype(df["gpid"].dtype):
        res.as_exported = (table, "globalPid", "gpid")
    df = interval_frame(df, res)
    for c in ("gpid", "device", "context", "stream", *numeric):
        to_int64(df, c)
    to_int64(df, "corr", fill=-1)
    return df, res


def host_rows(frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, ReadResult] | None:
    """Rows of one or more host-side tables (start, end, tid, ...) as one frame: counted, time
    hygiene applied (``interval_frame``), ``tid`` as int64; None when no table had rows to read."""
    frames = [f for f in frames if f is not None]
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    res = ReadResult(table=df, source_rows=len(df))
    df = interval_frame(df, res)
    to_int64(df, "tid")
    return df, res

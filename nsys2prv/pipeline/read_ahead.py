"""A large table's parts read ahead while stage A visits and stores the part before (``scan.read_each``):
its rowid ranges after the first read in threads, each on a connection of its own (SQLite and the
Arrow driver run without the GIL), or -- a run of one report, whose stage A runs in the main process
-- by the idle worker processes (``parallel.helpers``), which also read the large tables read whole;
the parts come back in reading order (``Ahead``)."""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.core.handover import handed
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import OPTIONAL_MISSING, ReadResult
from nsys2prv.pipeline import parallel
from nsys2prv.pipeline.report import read_kind

READ_AHEAD = 1  # batches of a large table read ahead in threads, each on its own connection (2: no faster
#                on 2 cores, 0.1 GB more), where no worker process helps (``parallel.helpers``)


def read_range(report: Report, kind: str, lo: int, hi: int, devmap: pd.DataFrame) -> ReadResult | None:
    """``read_kind`` of the rows of rowids [lo, hi) of ``kind``'s table."""
    report.window = (K.BY_NAME[kind].reader.tables[0], lo, hi)
    try:
        return read_kind(report, kind, devmap)
    finally:
        report.window = None


def _read_part(path: Path, index: int, source: str, kind: str, lo: int | None, hi: int | None, devmap: pd.DataFrame):
    """``read_range`` (``lo`` None: ``read_kind`` of the whole table) in a helper process
    (``parallel.helpers``), on a connection of its own; with what its probes found (``probed``)."""
    report = Report(path, index, source=source)
    try:
        res = read_kind(report, kind, devmap) if lo is None or hi is None else read_range(report, kind, lo, hi, devmap)
        return handed((res, report.missing_columns, report.probed_ok))  # (its arrays: in shared memory)
    finally:
        report.close()


def probed(report: Report, part) -> ReadResult | None:
    """A helper's whole table, its probes' findings added to ``report``'s (``Report.unreadable``)."""
    res, missing, ok = part
    for table, cols in missing.items():
        report.missing_columns.setdefault(table, set()).update(cols)
    report.probed_ok.update(ok)
    return res


HELPED_WHOLE_ROWS = 125_000  # a table read whole this large (a quarter of a batch) is read by a helper (fewer: here)


def batch_results(
    report: Report, kind: str, ranges: list[tuple[int, int]], devmap: pd.DataFrame, parts: Ahead | None = None
):
    """``read_kind`` over each rowid range, in order: the first on ``report`` (its probes are the
    report's), the next ones read ahead while the caller visits and stores the batch before -- by the
    idle worker processes when this process runs the only report's stage A (``parts``, from
    ``helpers_read``: one report's reading and normalising on every core, as several reports' are),
    else READ_AHEAD at a time in threads, each on a connection of its own to the export (SQLite and
    the Arrow driver run without the GIL)."""
    yield read_range(report, kind, *ranges[0], devmap)
    if len(ranges) < 2:
        return
    if parts is None:
        yield from _threads_ahead(report, kind, ranges, devmap)
        return
    left = len(ranges) - 1
    try:
        while left:
            left -= 1
            yield _said_once(next(parts)[0])
    finally:
        parts.skip(left)  # (stopped early: this table's other ranges are not the next table's)


def helper_parts(
    report: Report, plans: dict[str, list[tuple[int, int]] | None]
) -> list[tuple[str, int | None, int | None]]:
    """What the helpers read of the missing kinds (``plans``, in reading order), as (kind, lo, hi):
    the rowid ranges past the first of each table read in ranges, and whole (lo, hi None) the tables
    of a row-by-row reader (``Kind.batched``: tables no other kind reads) of HELPED_WHOLE_ROWS rows
    or more that are read whole."""
    todo: list[tuple[str, int | None, int | None]] = []
    for kind, ranges in plans.items():
        if ranges:
            todo += [(kind, lo, hi) for lo, hi in ranges[1:]]
        elif K.BY_NAME[kind].batched and report.count(K.BY_NAME[kind].reader.tables[0]) >= HELPED_WHOLE_ROWS:
            todo.append((kind, None, None))
    return todo


def helpers_read(
    report: Report, helped: parallel.Helpers, todo: list[tuple[str, int | None, int | None]], devmap: pd.DataFrame
) -> Ahead:
    """``todo`` (``helper_parts``) given to the helpers, one more at a time than there are, from now on:
    while this process reads the metadata, each table's first range and the tables read here, they
    read the next parts."""
    pool = helped.pool()

    def submit(k: int):
        kind, lo, hi = todo[k]
        return pool.submit(_read_part, report.path, report.index, report.source, kind, lo, hi, devmap)

    return Ahead(submit, len(todo), helped.workers + 1)  # (one waiting: a helper done goes on at once)


def _threads_ahead(report: Report, kind: str, ranges: list[tuple[int, int]], devmap: pd.DataFrame):
    """Batches 1.. of ``ranges`` read READ_AHEAD at a time in threads, each on its own connection."""
    # later[k] is read on others[k % READ_AHEAD]: submitted once later[k - READ_AHEAD], its last user, is taken
    others = [Report(report.path, report.index, source=report.source) for _ in range(min(READ_AHEAD, len(ranges) - 1))]
    threads = ThreadPoolExecutor(max_workers=len(others))
    try:
        later = ranges[1:]
        rest = Ahead(
            lambda k: threads.submit(read_range, others[k % len(others)], kind, *later[k], devmap),
            len(later),
            len(others),
        )
        try:
            for res in rest:
                yield _said_once(res)
        finally:
            rest.cancel()
    finally:
        threads.shutdown(wait=True, cancel_futures=True)  # (stopped early: the batches being read end first)
        for rep in others:
            rep.close()


def _said_once(res: ReadResult | None) -> ReadResult | None:
    """A batch after the first, read on another connection, less the optional columns its reader found
    missing: the first batch said them, with the whole table's rows (``readers.base``)."""
    if res is not None:
        res.notes = {why: n for why, n in res.notes.items() if OPTIONAL_MISSING not in why}
    return res


class Ahead:
    """The results of ``submit(k)`` for k in 0..n-1, in order (``next``), ``ahead`` of them submitted
    from the start and k once k - ``ahead`` is taken; ``cancel``: those not started."""

    def __init__(self, submit, n: int, ahead: int):
        self.submit, self.n = submit, n
        self.pending = deque(submit(k) for k in range(min(ahead, n)))
        self.k = len(self.pending)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.pending:
            raise StopIteration
        res = self.pending.popleft().result()
        if self.k < self.n:
            self.pending.append(self.submit(self.k))
            self.k += 1
        return res

    def skip(self, n: int) -> None:
        """The next ``n`` results let go (cancelled when not started)."""
        for _ in range(n):
            if not self.pending:
                return
            self.pending.popleft().cancel()
            if self.k < self.n:
                self.pending.append(self.submit(self.k))
                self.k += 1

    def cancel(self) -> None:
        for f in self.pending:
            f.cancel()
        self.pending.clear()

"""Stage C's steps, as plain functions of picklable jobs, so that they run in this process, in local
worker processes (--jobs) or on Dask workers (--dask): a job's rows (a whole report's: ``read_whole``,
the cached tables and their lanes, ``pipeline/report.py``, ``pipeline/lanes.py``, and each GPU
activity's launch call, ``translate/launches.py``), split into translated and POP-only tables
(``split_tables``), clipped to the -f window (``clip``, ``clip_job``), shared with POP
(``pop_share``, ``pop_context``) and translated (``translate_tables``, ``job_context``).  Stage C
itself is one function, ``pipeline.slices.translate_slice``: a time slice of a report, a report not
worth cutting being one slice.

Stage A is ``pipeline/scan.py``; the global stage B (model, alignment, value numbering, END time) and
the merge (stage D) are in ``pipeline/prepare.py``, ``pipeline/conversion.py`` and ``paraver/writer.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.metrics import pop
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.communicators import Communicators
from nsys2prv.model.resources import Model
from nsys2prv.pipeline.lanes import attach_lanes, stored_launches
from nsys2prv.pipeline.report import ReportInfo, Source, load
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import Launches
from nsys2prv.translate.launches import of_tables as launches_of
from nsys2prv.translate.records import Translation


@dataclass
class TraceSpec:
    """What the translators need of the run (the same for every report)."""

    categories: frozenset[str]
    nvtx_index: dict[str, int]  # NVTX domain -> index
    metric_types: dict[str, int]  # GPU metric name -> event type id
    types: dict  # event type id -> EventType (every type of the trace)


@dataclass
class PopShare:
    """A report's part in the POP metrics."""

    names: tuple[str, ...] | None  # NVTX ranges the POP windows need (None: all)
    only: bool = False  # only the POP partial (``nsys2prv pop``): no translation


@dataclass
class RankJob:
    src: Source
    info: ReportInfo
    clock: Clock  # report time -> trace time
    clip: tuple[int, int] | None  # -f window in the report's raw times
    trace: TraceSpec
    pop: PopShare
    attribution: bool  # GPU metrics attribution partial
    chunk: str  # chunk file prefix (pop.only: of its POP files only)
    comms: Communicators | None = None  # the run's MPI communicators (global ids, world ranks)


def job_context(
    job: RankJob,
    model: Model,
    tables: dict[str, pd.DataFrame],
    calls: pd.DataFrame | None = None,
    launches: Launches | None = None,
) -> Context:
    """The translators' Context for ``tables`` of the job's report (``launches``: each activity's
    launch call, its row in ``calls``)."""
    return Context(
        job.src.index,
        job.clock,
        model,
        job.trace.categories,
        job.trace.nvtx_index,
        tables,
        calls=calls,
        metric_types=job.trace.metric_types,
        comms=job.comms,
        launches=launches,
    )


@dataclass
class RankResult:
    index: int
    counts: dict  # kind -> CategoryCount (clip drops + translation)
    pop: object  # metrics.pop.PopPartial, packed (core.packed.Packed: unpacked by the POP reduction)
    attribution: pd.DataFrame | None
    chunk: object = None  # paraver.chunks.ChunkMeta
    warnings: list = field(default_factory=list)  # about the report, found in this stage (a damaged cache)


def in_window(df: pd.DataFrame, lo: int, hi: int) -> np.ndarray:
    """The rows ``clip`` keeps: marks within [lo, hi], intervals overlapping it."""
    start, end = df["start"].to_numpy(), df["end"].to_numpy()
    point = start == end
    return (end > lo) & (start < hi) | point & (start >= lo) & (start <= hi)


def clip(tables: dict[str, pd.DataFrame], lo: int, hi: int, out: Translation) -> dict[str, np.ndarray]:
    """Cut ``tables`` to [lo, hi] (``in_window``; the rows dropped counted in ``out``), each row's
    times to the window; returns each kind's rows kept (a boolean mask over its rows before)."""
    kept = {}
    for kind, df in list(tables.items()):
        inside = kept[kind] = in_window(df, lo, hi)
        out.count(kind).drop("outside the -f/--filter-nvtx window", int((~inside).sum()))
        df = df[inside]  # (a new frame: its times replaced, the columns' dtypes kept)
        tables[kind] = df.assign(start=np.maximum(df["start"].to_numpy(), lo), end=np.minimum(df["end"].to_numpy(), hi))
    return kept


def translate_tables(ctx: Context, out: Translation, translators: bool = True, links: bool = True) -> None:
    """Every declared translator on its table, then the links; each counted under its summary name
    (a sliced report runs them apart, on different rows: ``pipeline/slices.py``)."""

    def run(name: str, fn) -> None:
        existed = name in out.counts
        n_events, n_comms = len(out.events), len(out.comms)
        rows = fn()
        records = sum(len(b) for b in out.events[n_events:]) + sum(len(c) for c in out.comms[n_comms:])
        count = out.count(name)
        count.translated_rows += rows
        count.records += records
        if not existed and name in K.OPTIONAL_COUNTS and not (rows or records or count.source_rows or count.dropped):
            del out.counts[name]  # a link or split with nothing to do: not a summary line

    for kind in K.KINDS if translators else ():
        df = ctx.tables.get(kind.name)
        if df is None:
            continue
        for tr in kind.translators:  # an empty table: its summary line, no translator run
            run(tr.count or kind.name, (lambda: tr.fn(df, ctx, out)) if len(df) else (lambda: 0))
    for link in K.LINKS if links else ():
        run(link.name, lambda: link.fn(ctx, out))


def split_tables(job: RankJob, every: dict) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """A report's (or slice's) tables: those it translates, and those of the POP kinds it does not
    (POP reads its kinds whatever -t translates)."""
    tables = {k: t for k, t in every.items() if k in job.src.reading.kinds and t is not None}
    untranslated = {k: t for k, t in every.items() if k in pop.ALL_KINDS and k not in tables and t is not None}
    return tables, untranslated


def clip_job(job: RankJob, tables: dict, untranslated: dict, out: Translation) -> dict | None:
    """Both kinds of table cut to the job's -f window (``clip``; the drops of untranslated kinds are not
    counted): which rows of each translated table are kept (None: no window)."""
    if job.clip is None:
        return None
    kept = clip(tables, job.clip[0], job.clip[1], out)
    clip(untranslated, job.clip[0], job.clip[1], Translation())
    return kept


def pop_share(tables: dict, untranslated: dict) -> dict[str, pd.DataFrame]:
    """The tables of the POP kinds (the translated tables shared, not copied)."""
    return {k: t for k, t in (*tables.items(), *untranslated.items()) if k in pop.ALL_KINDS}


def pop_context(job: RankJob, model: Model, tables: dict[str, pd.DataFrame]) -> Context:
    """``collect_partial``'s Context for ``tables`` of the job's report (POP's tasks: ``model.pop``)."""
    return Context(job.src.index, job.clock, model, frozenset(), {}, tables, comms=job.comms)


@dataclass
class Held:
    """The rows a job of stage C holds before the -f clip: the tables it translates, those of the POP
    kinds it does not, and, of a whole report, the CUDA API calls read for the links only, each
    activity's launch call and what to say about the report's cache; of a time slice, the positions
    of its rows in their tables (``pipeline/slices.py``)."""

    tables: dict[str, pd.DataFrame]
    untranslated: dict[str, pd.DataFrame]
    calls: pd.DataFrame | None = None
    launches: Launches | None = None
    warnings: list = field(default_factory=list)
    positions: dict[str, np.ndarray] | None = None


def read_whole(job: RankJob) -> Held:
    """A whole report's rows (``report.load``: the cached tables, or read and cached), its translated
    GPU activities with their overlap lanes (``lanes.attach_lanes``) and, unless ``pop.only``, each
    activity's launch call over the whole report (stage A's, else ``launches.of_tables``)."""
    info, got = load(job.src)
    warnings = [w for w in info.capture_warnings if w not in job.info.capture_warnings]
    tables, untranslated = split_tables(job, {k: t for k, (t, _) in got.items()})
    link_calls = job.src.reading.link_calls and "cuda_api" not in tables
    calls = got["cuda_api"][0] if link_calls and "cuda_api" in got else None  # (for the links only)
    del got
    warnings += [w for w in attach_lanes(job.src, tables) if w not in warnings]
    launches = None
    if not job.pop.only:
        whole_calls = tables.get("cuda_api", calls)
        launches = stored_launches(job.src, whole_calls, tables) or launches_of(whole_calls, tables)
    return Held(tables, untranslated, calls, launches, warnings)

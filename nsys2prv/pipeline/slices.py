"""Stage C: every report in time slices, a report not worth cutting being one slice.

A report with more than ``2 * slice_rows`` rows to read in stage C is cut, on its own timeline,
into slices of about ``slice_rows`` rows (with more reports than workers, only reports too large for
a worker's memory: ``translate_all``); any other report is one slice, [-inf, +inf)
(``Plan.whole``).  A row belongs to the slice its start falls in and is translated there only,
whole: a kernel, range or call that crosses a border is neither cut nor doubled.  Three kinds of
jobs do it:

- ``plan`` (one per report worth cutting): each cached table's row groups (rows, start and end
  range), the slice borders, and the only facts of a row that depend on rows of other slices: the
  overlap lane of every GPU activity (numbered over the whole report by stage A and stored in the
  table cache: ``TableCache.lanes``) and the position of its launch call in the CUDA API table
  (stage A's ``translate.launches.match``, stored in the table cache: ``TableCache.launches``).
  Reads a few columns.
- ``translate_slice`` (one per slice, in any worker; stage C's one function): the slice's rows (one
  slice: the whole report, ``stages.read_whole``), with their lanes and each activity's launch call;
  the -f clip, the POP partial (of several slices: the POP intervals inside the slice, its rows' and
  those still running at its start, so that the slices' times add up: ``metrics.pop.join_slices``),
  the translators and the links (of several slices: on each activity's launch call and the NVTX
  ranges around those calls) by the same steps of ``pipeline/stages.py``; the chunk of records,
  painted in the job when the report is one slice; of several, an events chunk and the state
  intervals of the slice's rows and of the rows running at its start (``.states.npy``), to paint.
- ``paint_report`` (one per report of several slices, after every slice): the state timeline
  painted slice after slice with the threads' first and last event over the whole report; a
  segment still open at a border is carried into the next slice and written where it ends, so the
  segments are exactly those of painting the whole report at once (``translate.paint``).

What only one slice can do: read a report whose tables are not in the Parquet cache (or whose
lanes or launch calls are not), translate NCCL ranges (their payload count is per call), attribute
GPU metric samples to kernels (``OUT.gpu_metrics.csv``), compute the POP partial alone (``nsys2prv
pop``) and read again a damaged cache; ``plan`` gives such a report one slice.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv.core.memory import keep_heap, release
from nsys2prv.core.packed import Packed
from nsys2prv.core.writes import save_array
from nsys2prv.metrics import gpu_attribution, on_cpu, pop
from nsys2prv.model.resources import Model
from nsys2prv.nsys.cache import CacheDamage, TableCache
from nsys2prv.paraver.chunks import ChunkMeta, write_chunk
from nsys2prv.pipeline import report, stages
from nsys2prv.pipeline.lanes import lane_tag, launch_kinds, launch_tag
from nsys2prv.pipeline.row_groups import Decoded, Groups, at_positions, overlapping, owned, running_at, scan_groups
from nsys2prv.pipeline.stages import RankJob, RankResult
from nsys2prv.translate import event_spans, paint_spans
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import ACTIVITIES, Launches, restrict
from nsys2prv.translate.records import StateIntervals, Translation

LOW, HIGH = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@dataclass
class Plan:
    """How one report is sliced (``plan``); the arrays it derives wait in ``prefix``.* files."""

    index: int
    borders: list[int]  # slice k: borders[k] <= start < borders[k + 1] (report time)
    groups: dict[str, Groups]  # kind -> row groups (kinds with rows)
    lane_tag: str | None = None  # the overlap lanes in the table cache (None: no extra lane)
    launches: dict[str, str] = field(default_factory=dict)  # activity kind -> .npy of its call's row
    shared: int = 0  # calls sharing a correlation id (``Launches.shared``: noted by the first slice)

    @property
    def slices(self) -> int:
        return len(self.borders) - 1

    @staticmethod
    def whole(index: int) -> Plan:
        """One slice covering the report: its tables read whole (``stages.read_whole``)."""
        return Plan(index, [LOW, HIGH], {})


@dataclass
class SliceJob:
    job: RankJob  # the report's job (its chunk prefix: this slice's)
    plan: Plan
    k: int  # the slice


@dataclass
class SliceResult:
    index: int
    k: int
    counts: dict
    pop: Packed[pop.PopPartial]  # the slice's POP partial (_window_partial), packed for the main process
    chunk: ChunkMeta | None  # (None: ``pop.only``)
    attribution: pd.DataFrame | None = None  # one slice: its GPU metrics attribution partial
    warnings: list = field(default_factory=list)  # one slice: about the report (a damaged cache)
    # of several slices, for ``paint_report``: the .npy of the slice's state intervals (thread,
    # start, end, state, prio) and per thread of the report its first and last event time
    states: str = ""
    first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    last: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per thread: its state intervals


@dataclass
class PaintJob:
    job: RankJob
    plan: Plan
    states: list[str]  # per slice, its states file
    first: np.ndarray  # per thread of ``threads``: its first event ...
    last: np.ndarray  # ... and its last, over the whole report
    end: int  # the report's latest record (its lifetimes included)
    threads: np.ndarray  # the report's threads this job paints (sorted; ``paint_groups``)
    group: str = ""  # its chunks' names' suffix (several jobs a report)


# ---------------------------------------------------------------------------------------------------
# plan
def _borders(sample: np.ndarray, rows: int, slice_rows: int, clip) -> list[int]:
    """Slice borders at quantiles of the start sample: about ``slice_rows`` rows a slice.  With a -f
    window, every inner border lies inside it (no clipped start can equal a border's time)."""
    parts = max(1, round(rows / slice_rows))
    s = np.sort(sample)
    cuts = np.unique(s[(np.arange(1, parts) * len(s)) // parts]) if parts > 1 and len(s) else np.zeros(0, np.int64)
    if clip is not None:
        cuts = cuts[(cuts > clip[0]) & (cuts < clip[1])]
    return [LOW, *(int(c) for c in cuts), HIGH]


def plan(job: RankJob, rows: int, slice_rows: int, prefix: str) -> Plan:
    """Phase 0 for one report (one slice, ``Plan.whole``: what only a whole report can do)."""
    src = job.src
    whole = Plan.whole(src.index)
    kinds = report.default_kinds(src)
    sqlite = report.sqlite_of(src)
    cache = TableCache(Path(src.file.cache_root), sqlite)
    if any(not cache.has(k) for k in kinds):
        return whole  # not cached (a cache that cannot be written)
    groups, samples = {}, []
    try:
        for k in kinds:
            with cache.parquet_file(k) as pf:
                got = (
                    None
                    if pf is None
                    else scan_groups((src.file.cache_root, str(sqlite), k), pf, max(1, slice_rows // 64))
                )
            if pf is not None and got is None:
                return whole
            if got is not None:
                groups[k], sample = got
                samples.append(sample)
    except (OSError, CacheDamage):
        return whole  # (translated whole: stage C's own reading notes the damage)
    if "nccl" in src.reading.kinds and "nccl" in groups and "kernels" in groups and "nccl" in job.trace.categories:
        return whole
    if job.attribution and "gpu_metrics" in groups and "kernels" in groups:
        return whole
    borders = _borders(np.concatenate(samples) if samples else np.zeros(0, np.int64), rows, slice_rows, job.clip)
    if len(borders) < 3:
        return whole
    lanes = cache.lanes(lane_tag(src))
    if lanes is None or any(k not in groups or len(lane) != int(groups[k].rows.sum()) for k, lane in lanes.items()):
        return whole  # (not stored: translated whole, where stage C derives them)
    p = Plan(src.index, borders, groups, lane_tag(src) if lanes else None)
    del lanes
    links = [k for k in launch_kinds(src) if k in groups]
    if links and "cuda_api" in groups:
        found = cache.launches(launch_tag(src))  # (stage A's: ``scan._Facts.store_launches``)
        if found is None or any(k not in found[0] or len(found[0][k]) != int(groups[k].rows.sum()) for k in links):
            return whole  # (not stored: translated whole, where stage C derives them)
        calls_of, p.shared = found
        for k in links:
            p.launches[k] = f"{prefix}.calls-{k}.npy"
            save_array(p.launches[k], calls_of[k])
    release()
    return p


# ---------------------------------------------------------------------------------------------------
# translate
def _stored_lanes(plan: Plan, cache: TableCache) -> dict[str, np.ndarray]:
    """The report's overlap lanes (``Plan.lane_tag``), memory-mapped from the table cache."""
    if plan.lane_tag is None:
        return {}
    lanes = cache.lanes(plan.lane_tag)
    if lanes is None:
        raise CacheDamage("the overlap lanes are no longer in the table cache")
    return lanes


def _rows(plan: Plan, lanes: dict[str, np.ndarray], kinds, pick) -> dict[str, tuple[pd.DataFrame, np.ndarray] | None]:
    """The rows ``pick`` selects of each kind (and their positions), the GPU activities with their lanes."""
    out: dict[str, tuple[pd.DataFrame, np.ndarray] | None] = {}
    for k in kinds:
        g = plan.groups.get(k)
        if g is not None:
            df, pos = pick(g)
            out[k] = (df if k not in lanes else df.assign(lane=lanes[k][pos].astype(np.int64)), pos)
        else:
            out[k] = None
    return out


def _empty_table(cache: TableCache, kind: str) -> pd.DataFrame | None:
    return cache.table(kind) if cache.has(kind) else None


def _read_slice(sj: SliceJob, memo: Decoded) -> stages.Held:
    """A slice's rows (those starting in it, ``owned``), the GPU activities with their stored lanes,
    and their positions in their tables."""
    plan, k = sj.plan, sj.k
    lo, hi = plan.borders[k], plan.borders[k + 1]
    cache = report.table_cache(sj.job.src)
    kinds = report.default_kinds(sj.job.src)
    lanes = _stored_lanes(plan, cache)
    got = {
        kind: rows
        for kind, rows in _rows(plan, lanes, kinds, lambda g: owned(g, lo, hi, memo=memo)).items()
        if rows is not None
    }
    every = {kind: got[kind][0] if kind in got else _empty_table(cache, kind) for kind in kinds}
    tables, untranslated = stages.split_tables(sj.job, every)
    return stages.Held(tables, untranslated, positions={kind: got[kind][1] for kind in tables if kind in got})


def _running(sj: SliceJob, memo: Decoded) -> dict[str, pd.DataFrame]:
    """The rows still running at the slice's start (read once: their states, their POP time in the
    slice), clipped to the -f window."""
    plan, k, job = sj.plan, sj.k, sj.job
    if k == 0:
        return {}
    lanes = _stored_lanes(plan, report.table_cache(job.src))
    rows = _rows(plan, lanes, report.default_kinds(job.src), lambda g: running_at(g, plan.borders[k], memo=memo))
    running = {kind: t[0] for kind, t in rows.items() if t is not None}
    if job.clip is not None:
        stages.clip(running, job.clip[0], job.clip[1], Translation())
    return running


def translate_slice(sj: SliceJob, model: Model) -> SliceResult:
    """Stage C of one slice of a report (``model``: the run's resource model, sent once per worker):
    its rows, clipped to -f, its POP partial, its records.  A report of one slice (``Plan.whole``) is
    read whole, its GPU metric samples attributed (``job.attribution``), its links found on its own
    rows and its states painted here; with ``job.pop.only`` (``nsys2prv pop``: always one slice), only
    the POP partial is computed."""
    job, plan, k = sj.job, sj.plan, sj.k
    r = job.src.index
    keep = keep_heap()  # (a worker: the pages this job touches serve its next one)
    one = plan.slices == 1  # (what only a whole report can do: on this condition)
    memo = Decoded()  # (a slice of several: the row groups it decoded)
    held = stages.read_whole(job) if one else _read_slice(sj, memo)
    tables, positions, launches = held.tables, held.positions, held.launches
    out = Translation()
    kept = stages.clip_job(job, tables, held.untranslated, out)
    if kept is not None and positions is not None:
        positions = {kind: positions[kind][kept[kind]] for kind in positions}
    if kept is not None and launches is not None:  # (a call clipped away leaves its activities none)
        launches = restrict(launches, kept.get("cuda_api"), kept, launches.shared)
    running = _running(sj, memo)
    pop_tables = stages.pop_share(tables, held.untranslated)
    partial = _window_partial(job, model, plan, k, pop_tables, running).packed()
    held.untranslated = {}
    del pop_tables
    if job.pop.only:  # (no GPU metrics attribution either: ``nsys2prv pop`` writes no OUT.gpu_metrics.csv)
        return SliceResult(r, k, out.counts, partial, None, warnings=held.warnings)
    attributed = gpu_attribution.partial(r, tables, model) if job.attribution and one else None
    calls = tables.get("cuda_api", held.calls) if one else None
    ctx = stages.job_context(job, model, tables, calls, launches)
    stages.translate_tables(ctx, out, links=one)
    res = SliceResult(r, k, out.counts, partial, None, attribution=attributed, warnings=held.warnings)
    if one:
        del held, tables, calls, ctx, launches
        res.chunk = write_chunk(out, model, r, job.trace.types, job.chunk, consume=True)
    else:
        _links(ctx, out, plan, k, positions or {}, tables, job.clip, memo)
        del held, tables, ctx, memo
        res.states, res.first, res.last, res.sizes = _save_states(job, model, out, running)
        del running
        none = StateIntervals(*(np.zeros(0, np.int64),) * 5)
        res.chunk = write_chunk(out, model, r, job.trace.types, job.chunk, consume=True, painted=(none, LOW, LOW))
    del out
    release(keep)  # the next job of this worker starts from a trimmed heap, or one of at most ``keep`` free
    return res


def _save_states(
    job: RankJob, model: Model, out: Translation, running: dict
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """A slice of several: the state intervals of its rows (taken from ``out``) and of the rows
    running at its start, to a ``.states.npy`` file for ``paint_report``; and per thread of the
    report, its first and last event in the slice and its state intervals (``paint_groups``)."""
    threads = model.report_threads(job.src.index)
    first, last = event_spans(out, model, threads)
    states = out.states
    if running:  # their states
        before = Translation()
        stages.translate_tables(
            stages.job_context(job, model, {kind: t for kind, t in running.items() if kind in job.src.reading.kinds}),
            before,
            links=False,
        )
        states = [*states, *before.states]
        del before
    path = f"{job.chunk}.states.npy"
    arr = np.stack(
        [
            np.concatenate([np.asarray(getattr(x, f), np.int64) for x in states] or [np.zeros(0, np.int64)])
            for f in ("thread", "start", "end", "state", "prio")
        ]
    )
    out.states = []
    save_array(path, arr)
    sizes = np.bincount(np.searchsorted(threads, arr[0]), minlength=len(threads))[: len(threads)]
    return path, first, last, sizes.astype(np.int64)


def _window_partial(job: RankJob, model: Model, plan: Plan, k: int, tables: dict, running: dict):
    """The slice's POP partial: the intervals of the POP kinds that run in the slice's time (its rows
    ``tables`` and those running at its start), cut to it (the slices' times do not overlap, so their
    measures add up: ``pop.join_slices``); each task's first and last row, the ranges and the MPI
    calls are those of the slice's own rows (``collect_partial``'s ``cut``)."""
    if plan.slices == 1:  # (the report's rows: measured as they are)
        return pop.collect_partial(
            stages.pop_context(job, model, tables), job.pop.names, not job.pop.names, f"{job.chunk}.pop.npy"
        )
    lo, hi = plan.borders[k], plan.borders[k + 1]
    window = {x: _cut(t, running.get(x), lo, hi) for x, t in tables.items() if x in pop.KINDS + on_cpu.KINDS}
    return pop.collect_partial(
        stages.pop_context(job, model, tables), job.pop.names, not job.pop.names, f"{job.chunk}.pop.npy", cut=window
    )


def _cut(own: pd.DataFrame, running: pd.DataFrame | None, lo: int, hi: int) -> pd.DataFrame:
    """The columns POP measures (``pop.CUT_COLUMNS``) of a slice's rows ``own`` (starting in [lo, hi))
    and of those ``running`` at its start, cut to [lo, hi]: what ``stages.clip`` makes of them, built
    from their columns at once -- every row is kept (each starts in the slice or runs across its start),
    its start moved to ``lo`` at least and its end to ``hi`` at most."""
    cols = [c for c in own.columns if c in pop.CUT_COLUMNS]
    parts = [own] if running is None or not len(running) else [own, running]
    out = {c: pd.concat([p[c] for p in parts], ignore_index=True) if len(parts) > 1 else own[c] for c in cols}
    if "start" in out and "end" in out:
        out["start"] = np.maximum(out["start"].to_numpy(), lo)
        out["end"] = np.minimum(out["end"].to_numpy(), hi)
    return pd.DataFrame(out).reset_index(drop=True)


def _unique_rows(rows: np.ndarray) -> np.ndarray:
    """The sorted distinct rows >= 0 of ``rows`` (``np.unique`` without its sort: a slice's launch
    calls lie close together in their table, marked in a bitmap of their range)."""
    rows = rows[rows >= 0]
    if not len(rows):
        return rows.astype(np.int64)
    lo, hi = int(rows.min()), int(rows.max())
    if hi - lo > 8 * len(rows):  # (spread out: sorting costs less than the bitmap)
        return np.unique(rows).astype(np.int64)
    seen = np.zeros(hi - lo + 1, bool)
    seen[rows - lo] = True
    return np.flatnonzero(seen) + lo


def _links(
    ctx: Context, out: Translation, plan: Plan, k: int, positions: dict, tables: dict, clip, memo: Decoded
) -> None:
    """The links of the slice's GPU activities: each activity's launch call (wherever it starts) and
    the NVTX ranges around those calls, then the declared links on just those rows."""
    acts = {kind: tables[kind] for kind in ACTIVITIES if kind in tables}
    rows = {
        kind: np.load(plan.launches[kind], mmap_mode="r")[positions[kind]] for kind in acts if kind in plan.launches
    }
    calls_pos = _unique_rows(np.concatenate(list(rows.values())) if rows else np.zeros(0, np.int64))
    # the activities' calls, by their row among the slice's calls
    launches = Launches(
        {kind: np.where(r >= 0, np.searchsorted(calls_pos, r), -1).astype(np.int64) for kind, r in rows.items()},
        plan.shared if k == 0 else 0,
    )
    link_tables = dict(acts)
    calls = None
    if "cuda_api" in plan.groups and (len(calls_pos) or "cuda_api" in tables):
        calls = at_positions(plan.groups["cuda_api"], calls_pos, memo=memo)
        if clip is not None and "cuda_api" in tables:  # (as the whole report: untranslated calls unclipped)
            one = {"cuda_api": calls}
            kept = stages.clip(one, clip[0], clip[1], Translation())["cuda_api"]
            calls = one["cuda_api"]
            launches = restrict(launches, kept, None, launches.shared)
        calls = calls.reset_index(drop=True)
        if "cuda_api" in tables:
            link_tables["cuda_api"] = calls
        if len(calls):
            t0, t1 = int(calls["start"].min()), int(calls["start"].max())
            for kind in ("nvtx", "nccl"):
                if kind in tables and kind in plan.groups:
                    rng = overlapping(plan.groups[kind], t0, t1, memo=memo)[0]
                    if clip is not None:
                        one = {kind: rng}
                        stages.clip(one, clip[0], clip[1], Translation())
                        rng = one[kind]
                    link_tables[kind] = rng.reset_index(drop=True)
    lctx = replace(ctx, tables=link_tables, calls=calls, launches=launches)
    stages.translate_tables(lctx, out, translators=False)


# ---------------------------------------------------------------------------------------------------
# paint
def paint_report(pj: PaintJob, model: Model) -> list[ChunkMeta]:
    """Phase 2: the report's state timeline, slice after slice (one states chunk per slice)."""
    job, plan = pj.job, pj.plan
    r = job.src.index
    threads = pj.threads
    t_open = pj.end + 1
    carry_state = np.full(len(threads), -1, np.int64)
    carry_begin = np.zeros(len(threads), np.int64)
    chunks = []
    for k, path in enumerate(pj.states):
        lo_t = 0 if k == 0 else int(job.clock.apply_one(plan.borders[k]))
        hi_t = t_open if k == plan.slices - 1 else int(job.clock.apply_one(plan.borders[k + 1]))
        arr = np.load(path, mmap_mode="r")  # (mapped: each group's job reads the threads it paints)
        if not pj.group:  # (the report's only job: else the caller removes the files)
            os.remove(path)
        if hi_t <= lo_t:  # (no time of the trace in this slice: the carry goes on)
            continue
        s = paint_spans([StateIntervals(*arr)], model, threads, pj.first, pj.last, hi_t)
        del arr
        # segments cover [0, hi_t) (and beyond, up to the intervals' ends) on every thread, by thread and time
        keep = (s.end > lo_t) & (s.start < hi_t)
        row = np.searchsorted(threads, s.thread[keep])
        begin, end, state = np.maximum(s.start[keep], lo_t), np.minimum(s.end[keep], hi_t), s.state[keep]
        first = np.ones(len(row), bool)
        first[1:] = row[1:] != row[:-1]
        last = np.ones(len(row), bool)
        last[:-1] = row[1:] != row[:-1]
        # a segment carried from the slice before: continued by an equal first state, else closed here
        cont = first & (carry_state[row] == state)
        begin = np.where(cont, carry_begin[row], begin)
        closing = carry_state >= 0
        closing[row[cont]] = False
        ended = np.flatnonzero(closing)
        parts = [(threads[ended], carry_begin[ended], np.full(len(ended), lo_t, np.int64), carry_state[ended])]
        carry_state[:] = -1
        if k == plan.slices - 1:
            parts.append((threads[row], begin, end, state))
        else:
            parts.append((threads[row[~last]], begin[~last], end[~last], state[~last]))
            carry_state[row[last]] = state[last]
            carry_begin[row[last]] = begin[last]
        thread, start, stop, st = (np.concatenate(x) for x in zip(*parts))
        states = StateIntervals(thread, start, stop, st, np.zeros(len(thread), np.int64))
        chunks.append(
            write_chunk(
                Translation(),
                model,
                r,
                job.trace.types,
                f"{job.chunk}.p{k}{pj.group}",
                painted=(states, t_open, pj.end),
            )
        )
    release()
    return chunks


# ---------------------------------------------------------------------------------------------------
# the three phases, for every report of a run
def _plan(item: tuple) -> Plan:
    job, rows, size = item
    return plan(job, rows, size, job.chunk)


def slice_size(rows: int, workers: int, slice_rows: int, spread: bool) -> int:
    """Rows a slice of a report of ``rows`` rows is cut into.  Spread over the workers (few reports):
    ``slice_rows``, or twice that when the report still gives each worker at least four such
    slices (each slice decodes the row groups at its borders and its rows running at its start,
    and writes a chunk of its own: a tenth of r10m's stage C CPU is saved with half the slices,
    each worker 0.14 GB larger).  Otherwise (more reports than workers): 2.5 x ``slice_rows``."""
    if not spread:
        return int(2.5 * slice_rows)
    return 2 * slice_rows if rows >= 4 * max(1, workers) * 2 * slice_rows else slice_rows


def whole(job: RankJob) -> SliceJob:
    """A report as one slice."""
    return SliceJob(job, Plan.whole(job.src.index), 0)


def translate_all(ex, jobs: list[RankJob], rows: list[int], model: Model, slice_rows: int) -> list[RankResult]:
    """Stage C: every report translated, in slices (``jobs`` writing chunks), in ``ex`` (``model`` sent once
    per worker); the results in report order, a report of several slices'
    ``chunk`` a list of chunks.

    With fewer reports than twice the workers, a report of more than 2 x ``slice_rows`` rows is cut
    into slices of ``slice_rows`` (every worker on it; of 2 x ``slice_rows`` when there are still
    four a worker: ``slice_size``); with more, the reports keep the workers busy
    and only a report too large for a worker's memory (more than 5 x ``slice_rows``) is cut, into
    slices of 2.5 x ``slice_rows`` (slicing costs about a fifth more CPU).  Any other report is one
    slice."""
    workers = getattr(ex, "jobs", None) or 1
    spread = len(jobs) < 2 * workers
    least = 2 * slice_rows if spread else 5 * slice_rows
    big = [
        (j, n, slice_size(n, workers, slice_rows, spread)) for j, n in zip(jobs, rows) if not j.pop.only and n > least
    ]
    plans = dict(zip([j.src.index for j, _, _ in big], ex.map(_plan, big, desc="plan"))) if big else {}
    items: list[SliceJob] = []
    for j in jobs:
        p = plans.get(j.src.index)
        if p is None or p.slices == 1:
            items.append(whole(j))
        else:
            items += [SliceJob(replace(j, chunk=f"{j.chunk}.s{k}"), p, k) for k in range(p.slices)]
    parts_of: dict[int, list[SliceResult]] = {}
    for res in ex.map(translate_slice, items, desc="translate", shared=model):
        parts_of.setdefault(res.index, []).append(res)
    results, paints = [], []
    sliced = sum(p.slices > 1 for p in plans.values())
    for j in jobs:
        parts = sorted(parts_of.pop(j.src.index), key=lambda r: r.k)
        if len(parts) == 1:
            (one,) = parts
            results.append(RankResult(one.index, one.counts, one.pop, one.attribution, one.chunk, one.warnings))
            continue
        results.append(_join(j, parts))
        lives = [life[1] for i in model.report_tasks(j.src.index) if (life := model.tasks[i].life) is not None]
        first = np.minimum.reduce([r.first for r in parts])
        last = np.maximum.reduce([r.last for r in parts])
        end = max([r.chunk.end for r in parts if r.chunk] + lives)
        p = plans[j.src.index]
        threads = model.report_threads(j.src.index)
        groups = paint_groups(np.add.reduce([r.sizes for r in parts]), max(1, workers // sliced))
        for g, sel in enumerate(groups):
            suffix = f".g{g}" if len(groups) > 1 else ""
            paints.append(PaintJob(j, p, [r.states for r in parts], first[sel], last[sel], end, threads[sel], suffix))
    painted = ex.map(paint_report, paints, desc="paint", shared=model) if paints else []
    _remove_soon([path for pj in paints if pj.group for path in pj.states])
    by_index = {r.index: r for r in results}
    for pj, chunks in zip(paints, painted):
        by_index[pj.job.src.index].chunk += chunks
    return results


def paint_groups(sizes: np.ndarray, n: int) -> list[np.ndarray]:
    """A sliced report's threads (positions among its threads, ``sizes`` their state intervals) in at
    most ``n`` groups of about equal intervals, each painted by a job of its own (``paint_report``):
    a thread's segments depend on its own intervals only, and the merge orders the states of one
    time by thread whatever chunk holds them, so the trace's bytes are those of one job.  The
    largest first, each into the group with the fewest so far."""
    if n <= 1 or len(sizes) <= 1:
        return [np.arange(len(sizes))]
    load = np.zeros(min(n, len(sizes)), np.int64)
    of = np.empty(len(sizes), np.int64)
    for t in np.argsort(-np.asarray(sizes, np.int64), kind="stable"):
        g = int(np.argmin(load))
        of[t] = g
        load[g] += sizes[t]
    return [np.flatnonzero(of == g) for g in range(len(load)) if (of == g).any()]


def _remove_soon(paths: list[str]) -> None:
    """``paths`` removed in a thread (freeing a slice's states file took 20 ms of the kernel's time)."""

    def run() -> None:
        for p in paths:
            Path(p).unlink(missing_ok=True)

    if paths:
        threading.Thread(target=run, name="nsys2prv-states", daemon=True).start()


def _join(job: RankJob, parts: list[SliceResult]) -> RankResult:
    """A sliced report's RankResult: its slices' counts and POP partials joined (as translated whole)."""
    out = Translation()
    for r in parts:
        out.absorb(r.counts)
    return RankResult(
        job.src.index,
        out.counts,
        pop.join_slices([r.pop.unpack() for r in parts]).packed(),
        None,
        chunk=[r.chunk for r in parts],
    )

"""The conversion, stage by stage.

    A  per report (in parallel)   export -> read/normalise (or the Parquet cache) -> small metadata
    B  global                      resource models (trace, POP), clock alignment, -f window, lifetimes,
                                   type registry
    C  per report (in parallel)   clip -> POP / GPU-metric partials -> translate -> paint -> sorted chunk
    D  global                      POP reduction, value numbering, END, k-way merge of the chunks -> files

Per-report work runs in this process, local processes (--jobs) or on Dask (--dask): see
``stages.py`` and ``parallel.py``.  ``pop_of_reports`` (``nsys2prv pop`` on reports) runs the same
stages A and B and the POP part of stage C.  Memory in the main process is O(reports), not O(events).

-t chooses what goes into the trace, never the POP metrics: stages A and C also read the POP kinds
(``metrics.pop.KINDS``) and the POP processes are a model of their own, so OUT.pop.json is the same
whatever -t selects; the trace's model, clocks and records do not depend on them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.config import Config
from nsys2prv.core import registry as R
from nsys2prv.core.errors import UserError
from nsys2prv.core.memory import release
from nsys2prv.core.workers import in_fork
from nsys2prv.metrics import gpu_attribution, write_pop
from nsys2prv.metrics import pop as popm
from nsys2prv.model.align import P2P, parse_method
from nsys2prv.model.align import align as fit_alignment
from nsys2prv.model.resources import build_model
from nsys2prv.nsys.export import default_cache_dir
from nsys2prv.nsys.identity import check_same_job
from nsys2prv.paraver.cfgs import install_views
from nsys2prv.paraver.chunks import write_chunk
from nsys2prv.paraver.writer import write_merged, write_trace
from nsys2prv.pipeline import slices, stages
from nsys2prv.pipeline.gpu_rows import GpuRows
from nsys2prv.pipeline.outputs import OutputSet, check_not_an_input, write_error_cause
from nsys2prv.pipeline.parallel import Local, can_fork, default_jobs, executor
from nsys2prv.pipeline.stages import RankJob, Source
from nsys2prv.pipeline.summary import Summary, build_summary
from nsys2prv.pipeline.warmup import expect_rows, warm_numba
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.mpi_messages import match_messages, translate_messages
from nsys2prv.translate.records import Translation

__all__ = ["convert", "pop_of_reports", "Summary"]


def translated_kinds(cfg: Config) -> tuple[str, ...]:
    return K.kinds_of(cfg.categories)


def no_events_message(infos: list, kinds: tuple[str, ...]) -> str:
    """Why there is nothing to translate, and which -t would translate what the reports hold."""
    left: dict[str, dict[str, int]] = {}        # flag -> {kind: rows}
    for info in infos:
        for t in info.fates(kinds):
            for f in t["fates"]:
                if f["fate"] == "left out":
                    by_kind = left.setdefault(f["flag"], {})
                    by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + f["rows"]
    if not left:
        return "no events to translate (no CUDA, NVTX, MPI or OS runtime rows in the reports)"
    held = "; ".join(", ".join(f"{n:,} rows of {K.BY_NAME[k].doc}" for k, n in by_kind.items()) + f": add {flag}"
                     for flag, by_kind in left.items())
    return f"no events for the chosen categories; the reports hold {held}"


def _nvtx_window(name: str, windows: list, clocks: list, nvtx_on: bool = False) -> tuple[int, int]:
    """Aligned [start, end] spanning the first occurrence of NVTX range ``name`` in every report."""
    hits = [(c.apply_one(w[0]), c.apply_one(w[1])) for w, c in zip(windows, clocks) if w is not None]
    if not hits:
        raise UserError(f"NVTX range '{name}' (-f/--filter-nvtx) not found in any report"
                        + ("" if nvtx_on else " (is NVTX translated? it needs -t nvtx)"))
    return min(h[0] for h in hits), max(h[1] for h in hits)


def _dropped_by_report(scans: list, results: list) -> list[dict[str, int]]:
    """Per report, the rows of each kind its reader or translators dropped (the tables' fates)."""
    dropped: list[dict[str, int]] = [{} for _ in scans]
    for i, s in enumerate(scans):
        for kind, tally in s.tallies.items():
            dropped[i][kind] = dropped[i].get(kind, 0) + sum(tally["dropped"].values())
    for r in results:
        for name, c in r.counts.items():
            kind = K.KIND_OF_COUNT.get(name)
            if kind is not None:
                dropped[r.index][kind] = dropped[r.index].get(kind, 0) + sum(c.dropped.values())
    return dropped


def _align_sources(cfg: Config, kinds: tuple[str, ...], n_reports: int) -> dict:
    """What stage A must also read for the clock alignment and the MPI messages."""
    method, marker = parse_method(cfg.align)
    if n_reports < 2:
        return {"align_kinds": (), "marker": None, "p2p": False}
    extra = (("mpi",) if method in ("mpi", "auto") else ()) + (("kernels",) if method in ("nccl", "auto") else ()) \
        + (("nvtx",) if method == "marker" else ())
    # the MPI messages are read whatever -t: they serve the alignment and the POP replay too
    return {"align_kinds": tuple(k for k in extra if k not in kinds), "marker": marker, "p2p": True}


def align_run(cfg: Config, infos: list, scans: list, model):
    """Stage B alignment from the per-report reductions: job checks, matched MPI messages, clocks."""
    sources = [i.source for i in infos]
    notes = check_same_job([i.identity for i in infos], sources, cfg.force)
    messages = match_messages([s.p2p for s in scans], model)
    p2p = P2P(messages.send_report, messages.recv_report, messages.log_send, messages.phys_recv)
    alignment = fit_alignment(cfg.align, infos, [s.sync for s in scans], model, p2p, cfg.force)
    alignment.notes[:0] = notes
    return alignment, messages


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _rss_mb(field: str = "VmRSS") -> float:
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024
    except (OSError, StopIteration):
        return 0.0


def _reset_peak() -> None:
    """Start a new VmHWM (peak RSS) period for this process (Linux; elsewhere a no-op)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


class _Timer:
    """Stage times on stderr when NSYS2PRV_TIMING is set (the benchmark script sets it)."""

    def __init__(self):
        self.on, self.now, self.err = bool(os.environ.get("NSYS2PRV_TIMING")), time.perf_counter, sys.stderr
        self.t = self.now()

    def __call__(self, stage: str) -> None:
        if self.on:
            t = self.now()
            self.err.write(f"nsys2prv timing: {stage} {t - self.t:.3f} s (rss {_rss_mb():.0f} MB, "
                           f"peak {_rss_mb('VmHWM'):.0f} MB)\n")
            _reset_peak()
            self.t = t


@dataclass
class Prepared:
    """What stages A and B know of a run: the reports, the resource model and the clocks."""
    sources: list
    scans: list
    model: object
    alignment: object
    messages: object
    clocks: list
    clips: list
    origin_epoch: int
    out: Translation = field(default_factory=Translation)     # the readers' tallies
    pop_model: object = None        # the POP processes: a model over the POP kinds, whatever -t
    lifetimes: list = field(default_factory=list)   # per report, pid -> aligned (first, last) activity
    run_end: int | None = None      # the run's end (POP's T) on the trace's timeline: the trace lasts until then

    @property
    def infos(self) -> list:
        return [s.info for s in self.scans]


def _cache_root(cfg: Config, work: Path) -> Path:
    return (cfg.cache_dir or default_cache_dir()) / "tables" if cfg.table_cache else work / "tables"


def prepare(cfg: Config, ex, cache_root: Path, tick=lambda stage: None) -> Prepared:
    """Stage A on every report (in ``ex``), then stage B: model, alignment, -f window."""
    kinds = translated_kinds(cfg)
    calls = any(K.CATEGORY_BY_NAME[c].needs_calls for c in cfg.categories) and "cuda_api" not in kinds
    extra = _align_sources(cfg, kinds, len(cfg.inputs))
    pop_kinds = tuple(k for k in popm.KINDS + (popm.REGION_KINDS if cfg.region or cfg.iterations else ())
                      if k not in kinds)
    sources = [Source(i, str(p), str(cache_root), str(cfg.cache_dir) if cfg.cache_dir else None,
                      cfg.force_sqlite, kinds, calls, **extra, pop_kinds=pop_kinds) for i, p in enumerate(cfg.inputs)]

    # -- A: per report, read (or load the cache) -> small metadata -------------------------------
    scans = ex.map(stages.scan_report, sources, cfg.filter_nvtx, desc="read")
    infos = [s.info for s in scans]
    stages.name_unknown_hosts(infos)
    tick("A: read/scan")
    out = Translation()
    for s in scans:
        for kind, tally in s.tallies.items():
            c = out.count(kind)
            c.source_rows += tally["source_rows"]
            for why, n in tally["dropped"].items():
                c.drop(why, n)
            for why, n in tally["notes"].items():
                c.note(why, n)
    if not any(s.rows for s in scans):
        raise UserError(no_events_message(infos, kinds), ", ".join(str(p) for p in cfg.inputs))

    # -- B: global: model, alignment, window ---------------------------------------------------------
    model = build_model([s.keys for s in scans], [i.identity for i in infos], force=cfg.force,
                        sources=[i.source for i in infos], devmaps=[i.devmap for i in infos], gpu_rows=True)
    alignment, messages = align_run(cfg, infos, scans, model)
    clocks = list(alignment.clocks)
    origin_epoch = min((i.session_start_ns or 0) + c.offset for i, c in zip(infos, clocks)) if infos else 0
    clips = [None] * len(infos)
    if cfg.filter_nvtx:
        lo, hi = _nvtx_window(cfg.filter_nvtx, [s.window for s in scans], clocks,
                              any(c.startswith("nvtx") for c in cfg.categories))
        clips = [(c.local(lo), c.local(hi)) for c in clocks]
        messages = messages.within(clocks, lo, hi)
        clocks = [c.shifted(-lo) for c in clocks]
    pop_model = build_model([s.pop_keys for s in scans], [i.identity for i in infos], force=cfg.force,
                            sources=[i.source for i in infos], devmaps=[i.devmap for i in infos])
    lifetimes = popm.aligned_lifetimes([i.lifetimes for i in infos], clocks, clips)
    run_end = None
    if not cfg.filter_nvtx:
        mins = [c.apply_one(s.min_time) for s, c in zip(scans, clocks) if s.min_time is not None]
        shift = -min(mins) if mins and min(mins) < 0 else 0
        if cfg.time_origin == "run":
            # Paraver's 0 = the start of the run (POP's T), unless a record comes earlier
            t0, run_end = popm.run_window(*popm.task_lifetimes([], pop_model, lifetimes), lifetimes)
            shift = -min([t0, *mins])
        elif shift:
            alignment.notes.append(f"events before the earliest session start: all times shifted by +{shift} ns")
        if shift:
            clocks = [c.shifted(shift) for c in clocks]
            lifetimes = popm.aligned_lifetimes([i.lifetimes for i in infos], clocks, clips)
            origin_epoch -= shift
            run_end = None if run_end is None else run_end + shift
    for rep_info, c in zip(alignment.reports, clocks):
        rep_info["trace_offset_ns"] = c.offset
    for task in model.tasks:
        task.life = lifetimes[task.report].get(task.pid) if task.report < len(lifetimes) else None
    for s in scans:         # the models and the alignment are built: their inputs (per report) go
        s.keys = s.pop_keys = s.sync = s.p2p = None
    release()               # (before the workers fork: they start from a trimmed heap)
    return Prepared(sources, scans, model, alignment, messages, clocks, clips, origin_epoch, out, pop_model,
                    lifetimes, run_end)


def _pop_messages(run: Prepared):
    """Matched MPI messages for the POP replay: send and receive tasks of the POP model, the send call's
    start and the end of the call completing the receive, on the aligned timeline (None: no peers)."""
    m = run.messages
    if m is None or not len(m):
        return None
    lookup = popm.task_lookup(run.pop_model)
    threads, tasks = run.model.threads, run.model.tasks

    def pop_task(thread_ids):
        out = []
        for g in thread_ids.tolist():
            t = tasks[threads[g].task]
            out.append(lookup.get((t.report, t.pid), -1))
        return np.array(out, np.int64)

    def aligned(reports, times):
        out = np.empty(len(times), np.int64)
        for r in np.unique(reports):
            sel = reports == r
            out[sel] = run.clocks[int(r)].apply(times[sel])
        return out

    return pd.DataFrame({"send_task": pop_task(m.send_thread), "recv_task": pop_task(m.recv_thread),
                         "send_start": aligned(m.send_report, m.log_send),
                         "recv_end": aligned(m.recv_report, m.phys_recv)})


def pop_lookups(pop_model, n_reports: int, keep_devices: bool = False) -> tuple[list[dict], list[set | None]]:
    """collect_partial's lookups, derived once per run and split per report (each job carries only
    its own): (report, pid) -> POP task, and the (task, device) of GPUs one task uses alone (None:
    no reduction in the workers; ``keep_devices``: none, every GPU's intervals reach the GPU rows)."""
    tasks: list[dict] = [{} for _ in range(n_reports)]
    for key, task in popm.task_lookup(pop_model).items():
        tasks[key[0]][key] = task
    exclusive = set() if keep_devices else popm.exclusive_devices(pop_model)
    if exclusive is None:
        return tasks, [None] * n_reports
    mine: list[set] = [set() for _ in range(n_reports)]
    for t, d in exclusive:
        mine[pop_model.tasks[t].report].add((t, d))
    return tasks, mine


def _rank_jobs(cfg: Config, run: Prepared, types: dict, nvtx_index: dict, metric_types: dict,
               work: Path | None) -> list[RankJob]:
    pop_names = tuple(n for n in (cfg.region, cfg.iterations) if n)
    keep = bool(run.model.device_rows) and work is not None         # (a trace is written: its GPU rows)
    tasks, mine = pop_lookups(run.pop_model, len(run.sources), keep_devices=keep)
    return [RankJob(src, info, clock, cfg.categories, nvtx_index, {n: t.id for n, t in metric_types.items()},
                    types, clip, pop_names, tasks[src.index], mine[src.index], cfg.wants("gpu_metrics"),
                    None if cfg.in_memory or work is None else str(work / f"r{src.index}.chunk"),
                    pop_only=work is None)
            for src, info, clock, clip in zip(run.sources, run.infos, run.clocks, run.clips)]


def convert(cfg: Config, log=print) -> Summary:
    if len(cfg.inputs) > 1 and not cfg.merge:
        raise UserError(f"{len(cfg.inputs)} inputs given: pass -m/--merge to merge several reports into one trace")
    check_not_an_input(cfg.output)
    outputs = OutputSet(cfg.output, cfg.cfgs).open()
    try:
        summary = _convert(dataclasses.replace(cfg, output=outputs.staged, cfgs=outputs.staged_cfgs), outputs)
        outputs.commit()
    except OSError as exc:
        if exc.filename:
            raise
        # a write that failed without naming its file (a full disk, a file size limit): the outputs'
        raise UserError(f"cannot write the outputs ({write_error_cause(exc, cfg.output.parent)})",
                        str(cfg.output)) from None
    finally:
        outputs.close()
    return summary


def _convert(cfg: Config, outputs: OutputSet) -> Summary:
    """The conversion into the staging directory of ``outputs`` (``cfg.output`` points there)."""
    tick = _Timer()
    work = outputs.work
    ex = None
    try:
        ex = executor(cfg.jobs, cfg.dask, progress=cfg.show_progress)
        lean = lean_main(cfg, ex)
        if cfg.dask is None:
            # before the workers fork: they inherit it (lean: each loads what it runs)
            warm_numba(skip_blas_probe=cfg.own_process, say=_stderr if cfg.show_progress else None, load=not lean)
        tick("start-up (numba)")
        run = prepare(cfg, ex, _cache_root(cfg, work), tick)
        model, clocks, infos, out = run.model, run.clocks, run.infos, run.out
        domains = sorted({d for s in run.scans for d in s.domains})
        nvtx_index = {d: i for i, d in enumerate(domains)}
        metric_names = list(dict.fromkeys(m for s in run.scans for m in s.metrics))
        metric_types = R.gpu_metric_types(metric_names)
        types = dict(R.BY_ID)
        for d, i in nvtx_index.items():
            types.update({t.id: t for t in R.nvtx_types(i, d).values()})
        types.update({t.id: t for t in metric_types.values()})

        # -- C: per report: clip, partial metrics, translate, paint, sort -> chunk ---------------------
        jobs = _rank_jobs(cfg, run, types, nvtx_index, metric_types, work)
        if cfg.dask is None and run.scans and not lean:
            expect_rows(max(s.rows for s in run.scans))
        tick("B: model/align")
        results = slices.translate_all(ex, jobs, [s.rows for s in run.scans], model, cfg.slice_rows)
        ex.close()                                  # the workers' memory is not needed by the merge
        tick("C: translate/sort")
        for r in results:
            out.absorb(r.counts)
            infos[r.index].capture_warnings = [*infos[r.index].capture_warnings, *r.warnings]
        dropped = _dropped_by_report(run.scans, results)
        msg = _message_chunk(cfg, run.messages, clocks, model, types, work, len(run.sources), out)

        # -- D: reductions and the merge ----------------------------------------------------------------
        parts = [r.pop for r in results]
        for r in results:
            r.pop = None                # the reports' partials: only in ``parts`` until combined
        rows = (GpuRows(model, run.pop_model, types, cfg.nccl_as, None if cfg.in_memory else work, len(run.sources) + 1)
                if model.device_rows else None)
        pop, gpu_rows = in_fork(_pop_and_rows, cfg, run, parts, rows) if lean else _pop_and_rows(cfg, run, parts, rows)
        del parts
        release()                       # (the merge starts from a trimmed heap)
        tick("POP")
        mpi_world = "mpi" in out.counts and out.counts["mpi"].translated_rows > 0
        if cfg.in_memory:
            stats = _write_in_memory(results, model, types, cfg, run.origin_epoch, [msg, *gpu_rows], mpi_world,
                                     run.run_end or 0)
        else:
            chunks = [c for r in results for c in (r.chunk if isinstance(r.chunk, list) else [r.chunk])] \
                + ([msg] if msg is not None else []) + gpu_rows
            stats = write_merged(chunks, model, types, cfg.output, run.origin_epoch, cfg.compress,
                                 cfg.chunk_records, progress=cfg.show_progress, parts=merge_parts(cfg),
                                 work_dir=work, mpi_world=mpi_world, min_end=run.run_end or 0, lean=lean)
        if cfg.wants("gpu_metrics"):
            attributed = gpu_attribution.combine([r.attribution for r in results], sorted(set(metric_names)))
            if attributed is not None:
                stats.files.append(gpu_attribution.write_csv(
                    attributed, cfg.output.with_name(cfg.output.name + ".gpu_metrics.csv")))
        tick("D: merge/write")
    finally:
        if ex is not None:
            ex.close(final=True)
        shutil.rmtree(work, ignore_errors=True)
    if cfg.cfgs is not None:
        views = install_views(cfg.cfgs, cfg.output.with_name(cfg.output.name + ".pcf"),
                              present={k for k, c in out.counts.items() if c.records})
        stats.files.append(Path(f"{outputs.cfgs}/ ({len(views)} views)"))

    pop_paths, pop_notes, pop_text = write_pop(pop, cfg.output, stats.end_ns)

    summary = build_summary(cfg, infos, model, out, stats, run.alignment, clocks, dropped)
    summary.notes += outputs.notes
    summary.outputs += pop_paths
    summary.pop_text = "\n".join([pop_text, *(f"  note: {n}" for n in pop_notes)])
    sync_path = cfg.output.with_name(cfg.output.name + ".sync.json")
    with open(sync_path, "w", encoding="utf-8") as fh:
        json.dump(run.alignment.to_dict(), fh, indent=2)
    summary.outputs.append(str(sync_path))
    summary_path = cfg.output.with_name(cfg.output.name + ".summary.json")
    summary.outputs = [outputs.final_path(p) for p in summary.outputs]
    summary.write_json(summary_path)
    summary.outputs.append(outputs.final_path(summary_path))
    tick("E: views, POP tables, summary")
    return summary


def pop_of_reports(cfg: Config) -> dict:
    """POP metrics of one run's reports without a trace: stages A and B and the POP part of stage C,
    exactly as a conversion with the same Config computes them (cache and workers included)."""
    ex = None
    try:
        ex = executor(cfg.jobs, cfg.dask, progress=cfg.show_progress)
        if cfg.dask is None:
            warm_numba(skip_blas_probe=cfg.own_process)
        run = prepare(cfg, ex, _cache_root(cfg, Path(".")))
        results = ex.map(stages.translate_report, _rank_jobs(cfg, run, {}, {}, {}, None), desc="POP", shared=run.model)
    finally:
        if ex is not None:
            ex.close(final=True)
    res = pop_metrics(cfg, run, [r.pop for r in results])
    res["source"] = [str(p) for p in cfg.inputs]
    return res


LEAN_REPORTS = 64      # from this many reports on, the main process runs no kernel (see lean_main)


def lean_main(cfg: Config, ex) -> bool:
    """Many reports: the main process holds every report's small results, so it runs no kernel
    (numba's compiler would add ~45 MB to it) and does no heavy step itself: the POP reduction and
    every part of the merge run in forked processes, whose memory goes with them.  Fewer reports:
    everything is loaded once here and inherited by the workers (faster to start)."""
    return (cfg.dask is None and can_fork() and isinstance(ex, Local) and not cfg.in_memory
            and len(cfg.inputs) >= LEAN_REPORTS)


def _pop_and_rows(cfg: Config, run, parts: list, rows: GpuRows | None) -> tuple[dict, list]:
    """POP's result and the GPU activity rows' chunks (or Translations), made from the same reduction."""
    pop = pop_metrics(cfg, run, parts, rows)
    return pop, (rows.finish() if rows is not None else [])


def pop_metrics(cfg: Config, run, parts: list, rows: GpuRows | None = None) -> dict:
    """OUT.pop.json's content from the reports' partial results (``rows``: given the device intervals)."""
    inputs = popm.combine(parts, run.pop_model, cfg.nccl_as, run.lifetimes, _pop_messages(run), on_devices=rows)
    parts.clear()
    res = popm.compute(inputs, region=cfg.region, iterations=cfg.iterations, warmup=cfg.warmup,
                       label=cfg.output.name, filter_nvtx=cfg.filter_nvtx)
    res["job_ids"] = sorted({i.identity.job_id for i in run.infos if i.identity.job_id})   # (nsys2prv pop)
    return res


def merge_parts(cfg: Config) -> int:
    """Processes for the merge: --jobs (default: the cores); one with --dask (the client's threads
    are still up: no fork then) or where workers are not forked (``parallel.can_fork``)."""
    if cfg.dask is not None or not can_fork():
        return 1
    return cfg.jobs if cfg.jobs and cfg.jobs > 0 else default_jobs()


def _message_chunk(cfg: Config, messages, clocks, model, types, work: Path, index: int, out: Translation):
    """MPI point-to-point messages (they join two reports): translated here, after every report's
    records, as one more chunk (or a Translation for the in-memory writer); counts go into ``out``."""
    if not cfg.wants("mpi") or not len(messages):
        return None
    msgs = Translation()
    translate_messages(messages, clocks, msgs)
    out.absorb(msgs.counts)
    if cfg.in_memory:
        return msgs
    return write_chunk(msgs, model, index, types, str(work / "messages.chunk"))


def _write_in_memory(results, model, types, cfg: Config, origin_epoch, extra=(), mpi_world: bool = False,
                     min_end: int = 0):
    """The reference writer: every report's records in memory, one global sort (``--in-memory``);
    ``extra``: Translations after the reports' (messages, GPU activity rows; None: none)."""
    out = Translation()
    for part in [r.out for r in results] + [x for x in extra if x is not None]:
        out.events += part.events
        out.states += part.states
        out.comms += part.comms
    end_ns = max([trace_end(out), min_end, *(t.life[1] for t in model.tasks if t.life is not None)])
    states = paint(out, model, end_ns)
    return write_trace(out, states, model, types, cfg.output, end_ns, origin_epoch, cfg.compress, mpi_world)

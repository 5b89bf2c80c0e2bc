"""The two entry points: ``convert`` (stages A to D into the output files) and ``pop_of_reports``
(stages A, B and the POP part of C, no trace)."""

from __future__ import annotations

import dataclasses
import errno
import json
import shutil
import sys
import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from nsys2prv import kinds as K
from nsys2prv.config import Config
from nsys2prv.core import registry as R
from nsys2prv.core.dirs import remove_later, wait_removed
from nsys2prv.core.errors import UserError
from nsys2prv.core.memory import release
from nsys2prv.core.workers import forked, in_fork
from nsys2prv.metrics import gpu_attribution, write_pop
from nsys2prv.nsys import sqlite_mode
from nsys2prv.nsys.cache import entry_dir
from nsys2prv.nsys.cache_names import tables_root
from nsys2prv.nsys.cache_size import cache_max, enforce
from nsys2prv.nsys.export import default_cache_dir
from nsys2prv.paraver.chunks import write_chunk
from nsys2prv.paraver.writer import write_merged
from nsys2prv.pipeline import slices
from nsys2prv.pipeline.gpu_rows import GpuRows
from nsys2prv.pipeline.outputs import OutputSet, check_not_an_input, write_error_cause
from nsys2prv.pipeline.parallel import Executor, Local, can_fork, default_jobs, executor
from nsys2prv.pipeline.pop_run import measure_devices, pop_metrics, rest_rows
from nsys2prv.pipeline.prepare import Prepared, prepare
from nsys2prv.pipeline.report import sqlite_of
from nsys2prv.pipeline.stages import PopShare, RankJob, TraceSpec
from nsys2prv.pipeline.summary import Summary, build_summary
from nsys2prv.pipeline.timing import Timer
from nsys2prv.pipeline.warmup import expect_rows, precompile, stop_early, warm_numba
from nsys2prv.translate.communicators import communicator_members
from nsys2prv.translate.host import application_events
from nsys2prv.translate.mpi_messages import translate_messages
from nsys2prv.translate.records import Translation


def _dropped_by_report(read: list[dict[str, int]], results: list) -> list[dict[str, int]]:
    """Per report, the rows of each kind its reader (``read``: ``Prepared.read_dropped``) or
    translators dropped (the tables' fates)."""
    dropped: list[dict[str, int]] = [dict(d) for d in read]
    for r in results:
        for name, c in r.counts.items():
            kind = K.KIND_OF_COUNT.get(name)
            if kind is not None:
                dropped[r.index][kind] = dropped[r.index].get(kind, 0) + sum(c.dropped.values())
    return dropped


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _cache_root(cfg: Config, work: Path) -> Path:
    return tables_root(cfg.cache_dir) if cfg.table_cache else work / "tables"


def _rank_jobs(
    cfg: Config, run: Prepared, types: dict, nvtx_index: dict, metric_types: dict, work: Path, pop_only: bool = False
) -> list[RankJob]:
    pop_names = tuple(n for n in (*cfg.region, cfg.iterations) if n)
    trace = TraceSpec(cfg.categories, nvtx_index, {n: t.id for n, t in metric_types.items()}, types)
    return [
        RankJob(
            src,
            info,
            clock,
            clip,
            trace,
            PopShare(pop_names, only=pop_only),
            cfg.wants("gpu_metrics"),
            str(work / f"r{src.index}.chunk"),
            run.comms,
        )
        for src, info, clock, clip in zip(run.sources, run.infos, run.timeline.clocks, run.timeline.clips)
    ]


def convert(cfg: Config, log=print) -> Summary:
    if len(cfg.inputs) > 1 and not cfg.merge:
        raise UserError(f"{len(cfg.inputs)} inputs given: pass -m/--merge to merge several reports into one trace")
    check_not_an_input(cfg.output)
    outputs = OutputSet(cfg.output, cfg.cfgs).open()
    try:
        summary = _convert(dataclasses.replace(cfg, output=outputs.staged, cfgs=outputs.staged_cfgs), outputs)
        outputs.commit()
    except OSError as exc:
        work = bool(exc.filename) and outputs.holds_work(exc.filename)
        if exc.filename and not work:  # (a staged file: named where it was to go, the staging directory is gone)
            exc.filename = outputs.final_path(exc.filename)
            raise
        # a write that failed without naming its file (a full disk, a file size limit), or one of the run's
        # work files (a name the user never sees, gone with the staging directory): the outputs'
        if work:  # (space or a limit: written; else read back, or removed by another, ...: used)
            full = exc.errno in (None, errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            what = f"{'write' if full else 'use'} the run's work files beside the outputs"
        else:
            what = "write the outputs"
        raise UserError(f"cannot {what} ({write_error_cause(exc, cfg.output.parent)})", str(cfg.output)) from None
    finally:
        outputs.close()
        wait_removed()  # (the work files and the old outputs swapped out by the commit: gone on return)
    return summary


def _executor(cfg: Config) -> Executor:
    """The run's executor; before it (its workers fork from this process, whose modes they inherit),
    in a process nsys2prv owns, the ADBC driver's SQLite may run in multi-thread mode (``sqlite_mode``)."""
    if cfg.own_process:
        sqlite_mode.claim()
    return executor(cfg.jobs, cfg.dask, progress=cfg.show_progress)


def _convert(cfg: Config, outputs: OutputSet) -> Summary:
    """The conversion into the staging directory of ``outputs`` (``cfg.output`` points there)."""
    tick = Timer()
    work = outputs.work
    ex = pre = None
    try:
        ex = _executor(cfg)
        fork_heavy = forks_heavy_steps(cfg, ex)
        if cfg.dask is None:
            # before the workers fork: they inherit it (fork_heavy: each loads what it runs)
            say = _stderr if cfg.show_progress else None
            warm_numba(skip_blas_probe=cfg.own_process, say=say, load=not fork_heavy)
            if not fork_heavy and can_fork():
                readers = min(len(cfg.inputs), cfg.jobs if cfg.jobs and cfg.jobs > 0 else default_jobs())
                pre = precompile(cfg.inputs, readers, default_jobs(), say)  # (while stage A reads)
        tick("start-up (numba)")
        run = prepare(cfg, ex, _cache_root(cfg, work), tick)
        model, clocks, infos, counts = run.model, run.timeline.clocks, run.infos, run.counts
        domains = sorted({d for s in run.scans for d in s.domains})
        nvtx_index = {d: i for i, d in enumerate(domains)}
        metric_names = list(dict.fromkeys(m for s in run.scans for m in s.metrics))
        metric_types = R.gpu_metric_types(metric_names)
        types = dict(R.ALWAYS_LISTED)
        tables = {t for i in run.infos for t, n in i.table_counts.items() if n}
        types.update({t.id: t for t in K.table_types(K.kinds_of(cfg.categories), tables)})
        for d, i in nvtx_index.items():
            types.update({t.id: t for t in R.nvtx_types(i, d).values()})
        types.update({t.id: t for t in metric_types.values()})

        # -- C: per report: clip, partial metrics, translate, paint, sort -> chunk ---------------------
        jobs = _rank_jobs(cfg, run, types, nvtx_index, metric_types, work)
        if cfg.dask is None and run.scans and not fork_heavy:
            if pre is not None:
                pre.wait("_paint", "_sweep")
            expect_rows(max(s.rows for s in run.scans))
        tick("B: model/align")
        results = slices.translate_all(ex, jobs, [s.rows for s in run.scans], model, cfg.slice_rows)
        ex.close()  # the workers' memory is not needed by the merge
        if not cfg.table_cache:
            remove_later(_cache_root(cfg, work))  # (the run's own tables, read by nothing now: freed beside POP)
        tick("C: translate/sort")
        for r in results:
            counts.absorb(r.counts)
            infos[r.index].capture_warnings = [*infos[r.index].capture_warnings, *r.warnings]
        dropped = _dropped_by_report(run.read_dropped, results)
        for r in results:
            r.counts, r.warnings = {}, []  # (absorbed: until the merge the main process keeps their chunks)
        has_mpi = "mpi" in counts.counts and counts.counts["mpi"].translated_rows > 0
        message_chunk = _mpi_chunk(cfg, run.messages, clocks, model, types, work, len(run.sources), counts, has_mpi)

        # -- D: the GPU activity rows (POP's device reduction), then the merge; the rest of POP beside it
        parts = [r.pop for r in results]  # (each packed: unpacked by each step of the reduction where it runs)
        for r in results:
            r.pop = None  # the reports' partials: only in ``parts`` until combined
        activity_rows = GpuRows(model, types, cfg.nccl_as, work, len(run.sources) + 1) if model.device_rows else None
        measured, activity_chunks = (
            in_fork(_devices_and_rows, cfg, run, parts, activity_rows)
            if fork_heavy
            else _devices_and_rows(cfg, run, parts, activity_rows)
        )
        tick("POP")
        chunks = (
            [c for r in results for c in (r.chunk if isinstance(r.chunk, list) else [r.chunk])]
            + ([message_chunk] if message_chunk is not None else [])
            + activity_chunks
        )
        # the rest of POP beside the merge: in this process while the merge's forked parts run (its own
        # part the smaller for it); with many reports (no heavy step here) in a forked process of its own
        got: dict = {}

        def rest() -> None:
            got["pop"] = pop_metrics(cfg, run, parts, None, measured)

        beside_merge: AbstractContextManager[list] = (
            forked([(pop_metrics, (cfg, run, parts, None, measured))]) if fork_heavy else nullcontext([])
        )
        with beside_merge as pops:
            if fork_heavy:
                parts.clear()  # (the forked reduction has its own)
            elif pre is not None and "_format_compact" in pre.pending:
                rest()  # (a first run: while the merge's kernel compiles)
            release()  # (the merge starts from a trimmed heap)
            if pre is not None:
                pre.wait("_format_compact")
            here = not fork_heavy and not got  # (the rest of POP still to do, in this process)
            stats = write_merged(
                chunks,
                model,
                types,
                cfg.output,
                run.timeline.origin_epoch,
                cfg.compress,
                cfg.merge_round_records,
                progress=cfg.show_progress,
                parts=merge_parts(cfg),
                work_dir=work,
                communicators=communicator_members(model, run.comms) if has_mpi else None,
                min_end=run.timeline.run_end or 0,
                fork_every_part=fork_heavy,
                beside=rest if here else None,
                beside_records=rest_rows(parts) if here else 0,
            )
            pop = pops[0].result() if pops else got["pop"]  # (its error, if any, raised here: outputs staged)
        if cfg.wants("gpu_metrics"):
            attributed = gpu_attribution.combine([r.attribution for r in results], sorted(set(metric_names)))
            if attributed is not None:
                stats.files.append(
                    gpu_attribution.write_csv(attributed, cfg.output.with_name(cfg.output.name + ".gpu_metrics.csv"))
                )
        tick("D: merge/write")
    finally:
        if ex is not None:
            ex.close(final=True)
        if pre is not None:
            pre.stop()
        stop_early()  # (the command line's compiler, where this conversion did not take it)
        remove_later(work)  # (while stage E runs: freeing the chunks' pages takes the kernel a while)
    view_notes = []
    if cfg.cfgs is not None:
        # (here: the views' renderer is loaded by the runs that write them)
        from nsys2prv.paraver.cfgs import COLLECTIVE_SIZES, COLLECTIVES_TABLE, host_views_left_out, install_views

        present = {k for k, c in counts.counts.items() if c.records}
        left_out = host_views_left_out(present, pop.get("host") or {})
        views = install_views(
            cfg.cfgs,
            cfg.output.with_name(cfg.output.name + ".pcf"),
            present=present
            | ({COLLECTIVE_SIZES} if any(i.table_counts.get(COLLECTIVES_TABLE) for i in run.infos) else set()),
            written=set(stats.types),
            left_out=left_out,
        )
        stats.files.append(Path(f"{outputs.cfgs}/ ({len(views)} views)"))
        for why in dict.fromkeys(left_out.values()):  # (one note per reason)
            paths = ", ".join(p for p, w in left_out.items() if w == why)
            view_notes.append(f"--cfgs: {paths} not written, their numbers would not be OUT.pop.json's: {why}")

    pop_paths, pop_notes, pop_text = write_pop(pop, cfg.output, stats.end_ns)

    evicted = _bound_cache(cfg, run, work)  # (first: the summary says what the cache holds after it)
    summary = build_summary(cfg, infos, model, counts, stats, run.alignment, clocks, dropped)
    summary.notes += outputs.notes + view_notes
    if evicted:
        summary.notes.append(evicted)
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


def _bound_cache(cfg: Config, run, work: Path) -> str | None:
    """The cache kept within its cap (``nsys.cache_size``): what was removed, or None."""
    cache_dir = cfg.cache_dir or default_cache_dir()
    sqlite = [sqlite_of(src) for src in run.sources]
    entries = [entry_dir(_cache_root(cfg, work), p) for p in sqlite] if cfg.table_cache else []
    return enforce(cache_dir, cache_max(cfg.cache_max), entries, sqlite)


def pop_of_reports(cfg: Config) -> dict:
    """POP metrics of one run's reports without a trace: stages A and B and the POP part of stage C,
    exactly as a conversion with the same Config computes them (cache and workers included)."""
    work = Path(tempfile.mkdtemp(prefix="nsys2prv-pop."))  # the workers' files of GPU intervals
    try:
        ex = None
        try:
            ex = _executor(cfg)
            if cfg.dask is None:
                warm_numba(skip_blas_probe=cfg.own_process)
            run = prepare(cfg, ex, _cache_root(cfg, Path(".")))
            results = ex.map(
                slices.translate_slice,
                [slices.whole(j) for j in _rank_jobs(cfg, run, {}, {}, {}, work, pop_only=True)],
                desc="POP",
                shared=run.model,
            )
        finally:
            if ex is not None:
                ex.close(final=True)
        res = pop_metrics(cfg, run, [r.pop for r in results])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["source"] = [str(p) for p in cfg.inputs]
    return res


FORK_HEAVY_FROM_REPORTS = 64  # from this many reports on, the heavy steps run in forked processes


def forks_heavy_steps(cfg: Config, ex: Executor) -> bool:
    """Where the conversion's heavy main-process steps run, decided here only.  Many reports (at
    least FORK_HEAVY_FROM_REPORTS, local workers that fork): the main process holds every report's
    small results, so it loads no kernel (numba and the kernels add ~45 MB to a process) and does no
    heavy step itself: the POP reduction and every part of the merge run in forked processes, whose
    memory goes with them, and each process loads the kernels it runs.  Otherwise the kernels are
    loaded once here and inherited by every process forked after (forking the heavy steps always
    cost 8 ranks 1.1-1.8 times the wall time and 1.4-1.8 times the CPU time, one rank ~10 %: each
    forked process loads its own kernels)."""
    return cfg.dask is None and can_fork() and isinstance(ex, Local) and len(cfg.inputs) >= FORK_HEAVY_FROM_REPORTS


def _devices_and_rows(cfg: Config, run, parts: list, rows: GpuRows | None) -> tuple:
    """POP's devices measured over the run and the GPU activity rows' chunks, made from the same
    reduction (the rest of POP: ``pop_metrics`` with them)."""
    measured = measure_devices(cfg, run, parts, rows)
    return measured, (rows.finish() if rows is not None else [])


def merge_parts(cfg: Config) -> int:
    """Processes for the merge: --jobs (default: the cores); one with --dask (the client's threads
    are still up: no fork then) or where workers are not forked (``parallel.can_fork``)."""
    if cfg.dask is not None or not can_fork():
        return 1
    return cfg.jobs if cfg.jobs and cfg.jobs > 0 else default_jobs()


def _mpi_chunk(cfg: Config, messages, clocks, model, types, work: Path, index: int, out: Translation, has_mpi: bool):
    """The run's MPI records that no one report owns, as one more chunk after every report's: the
    point-to-point messages (they join two reports; counts go into ``out``) and, in a trace with MPI
    calls, each process's life marked as Extrae marks it (``host.application_events``)."""
    if not cfg.wants("mpi") or (not len(messages) and not has_mpi):
        return None
    msgs = Translation()
    if len(messages):
        translate_messages(messages, clocks, msgs)
        out.absorb(msgs.counts)
    if has_mpi:
        msgs.events += application_events(model)
    return write_chunk(msgs, model, index, types, str(work / "messages.chunk"))

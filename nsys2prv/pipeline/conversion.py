"""The two entry points: ``convert`` (stages A to D into the output files) and ``pop_of_reports``
(stages A, B and the POP part of C, no trace)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

from nsys2prv import kinds as K
from nsys2prv.config import Config
from nsys2prv.core import registry as R
from nsys2prv.core.errors import UserError
from nsys2prv.core.memory import release
from nsys2prv.core.workers import in_fork
from nsys2prv.metrics import gpu_attribution, write_pop
from nsys2prv.nsys.export import default_cache_dir
from nsys2prv.paraver.cfgs import install_views
from nsys2prv.paraver.chunks import write_chunk
from nsys2prv.paraver.writer import write_merged, write_trace
from nsys2prv.pipeline import slices, stages
from nsys2prv.pipeline.gpu_rows import GpuRows
from nsys2prv.pipeline.outputs import OutputSet, check_not_an_input, write_error_cause
from nsys2prv.pipeline.parallel import Local, can_fork, default_jobs, executor
from nsys2prv.pipeline.pop_run import pop_lookups, pop_metrics
from nsys2prv.pipeline.prepare import Prepared, prepare
from nsys2prv.pipeline.stages import PopShare, RankJob, TraceSpec
from nsys2prv.pipeline.summary import Summary, build_summary
from nsys2prv.pipeline.timing import Timer
from nsys2prv.pipeline.warmup import expect_rows, warm_numba
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.mpi_messages import translate_messages
from nsys2prv.translate.records import Translation


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


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _cache_root(cfg: Config, work: Path) -> Path:
    return (cfg.cache_dir or default_cache_dir()) / "tables" if cfg.table_cache else work / "tables"


def _rank_jobs(cfg: Config, run: Prepared, types: dict, nvtx_index: dict, metric_types: dict,
               work: Path | None) -> list[RankJob]:
    pop_names = tuple(n for n in (cfg.region, cfg.iterations) if n)
    keep = bool(run.model.device_rows) and work is not None         # (a trace is written: its GPU rows)
    tasks, mine = pop_lookups(run.pop_model, len(run.sources), keep_devices=keep)
    trace = TraceSpec(cfg.categories, nvtx_index, {n: t.id for n, t in metric_types.items()}, types)
    return [RankJob(src, info, clock, clip, trace, PopShare(pop_names, tasks[src.index], mine[src.index], work is None),
                    cfg.wants("gpu_metrics"),
                    None if cfg.in_memory or work is None else str(work / f"r{src.index}.chunk"))
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
    tick = Timer()
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

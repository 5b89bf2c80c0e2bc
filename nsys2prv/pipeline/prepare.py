"""Stages A and B: every report read (or its cache loaded) into small metadata, then the resource
model, the clock alignment and the run's timeline (-f window, origin, lifetimes): ``Prepared``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsys2prv import kinds as K
from nsys2prv.config import Config
from nsys2prv.core.errors import UserError
from nsys2prv.core.memory import settle_heap
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics import pop as popm
from nsys2prv.model.align import P2P, Alignment, parse_method, session_offsets
from nsys2prv.model.align import align as fit_alignment
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.communicators import Communicators, build_communicators
from nsys2prv.model.resources import Model, build_model
from nsys2prv.nsys.identity import check_same_job
from nsys2prv.pipeline import early, report, scan
from nsys2prv.pipeline.parallel import Executor
from nsys2prv.pipeline.report import Reading, ReportFile, ReportInfo, Source
from nsys2prv.pipeline.scan import Scan, StageBInput
from nsys2prv.translate.mpi_messages import Messages, match_messages
from nsys2prv.translate.records import Translation

# A --no-cache run whose reports' files take at most this many bytes keeps its own table cache in Arrow
# IPC (``TableCache.ipc``: a third of Parquet's CPU to write, a tenth to decode, about 1.2-1.3x the
# reports' size on disk), its large tables too (``codec.write_ipc_batches``); larger runs, Parquet: the
# staging directory of 1,000 small reports (2.1 GB) would take 1.7 GB as IPC. One 10M-row report (468
# MB) staged as IPC (543 MB, 15 MB as Parquet) spends about 0.8 CPU s less: its slices decode their row
# groups again and again (BENCHMARKS.md, "Issue 40, fifth stop: one large report's tables").
IPC_BYTES = 1 << 30


def _own_tables_as_ipc(cfg: Config) -> bool:
    """A ``--no-cache`` run small enough (IPC_BYTES) for its own tables in Arrow IPC."""
    if cfg.table_cache:
        return False
    total = 0
    for p in cfg.inputs:
        try:
            total += Path(p).stat().st_size
        except OSError:  # (said by its reader, naming it)
            return False
    return total <= IPC_BYTES


def translated_kinds(cfg: Config) -> tuple[str, ...]:
    return K.kinds_of(cfg.categories)


def no_events_message(infos: list[ReportInfo], kinds: tuple[str, ...]) -> str:
    """Why there is nothing to translate, and which -t would translate what the reports hold."""
    left: dict[str, dict[str, int]] = {}  # flag -> {kind: rows}
    for info in infos:
        for t in info.fates(kinds):
            for f in t["fates"]:
                if f["fate"] == "left out":
                    by_kind = left.setdefault(f["flag"], {})
                    by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + f["rows"]
    if not left:
        return "no events to translate (no CUDA, NVTX, MPI or OS runtime rows in the reports)"
    held = "; ".join(
        ", ".join(f"{n:,} rows of {K.BY_NAME[k].doc}" for k, n in by_kind.items()) + f": add {flag}"
        for flag, by_kind in left.items()
    )
    return f"no events for the chosen categories; the reports hold {held}"


def _nvtx_window(name: str, windows: list, clocks: list, nvtx_on: bool = False) -> tuple[int, int]:
    """Aligned [start, end] spanning the first occurrence of NVTX range ``name`` in every report."""
    hits = [(c.apply_one(w[0]), c.apply_one(w[1])) for w, c in zip(windows, clocks) if w is not None]
    if not hits:
        raise UserError(
            f"NVTX range '{name}' (-f/--filter-nvtx) not found in any report"
            + ("" if nvtx_on else " (is NVTX translated? it needs -t nvtx)")
        )
    return min(h[0] for h in hits), max(h[1] for h in hits)


def _align_sources(cfg: Config, kinds: tuple[str, ...], n_reports: int) -> dict:
    """What stage A must also read for the clock alignment and the MPI messages."""
    method, marker = parse_method(cfg.align)
    if n_reports < 2:
        return {"align_kinds": (), "marker": None, "p2p": False}
    extra = (
        (("mpi",) if method in ("mpi", "auto") else ())
        + (("kernels",) if method in ("nccl", "auto") else ())
        + (("nvtx",) if method == "marker" else ())
    )
    # the MPI messages are read whatever -t: they serve the alignment and the POP replay too
    return {"align_kinds": tuple(k for k in extra if k not in kinds), "marker": marker, "p2p": True}


def align_run(
    cfg: Config, infos: list[ReportInfo], scans: list[Scan], model: Model
) -> tuple[Alignment, Messages, Communicators]:
    """Stage B alignment from the per-report reductions: job checks, the MPI communicators and matched
    messages, clocks."""
    sources = [i.source for i in infos]
    notes = check_same_job([i.identity for i in infos], sources, cfg.force)
    raws = StageBInput(scans, "p2p")
    comms = build_communicators(raws, model)
    messages = match_messages(raws, model, session_offsets(infos)[0], comms)
    m = messages
    p2p = P2P.of(m.send_report, m.recv_report, m.log_send, m.phys_send, m.recv_start, m.phys_recv, m.synchronous)
    # (align reads the facts a ReportInfo shares with a Report: its annotation names Report)
    alignment = fit_alignment(cfg.align, infos, StageBInput(scans, "sync"), model, p2p, cfg.force, comms)
    alignment.notes[:0] = notes
    return alignment, messages, comms


@dataclass
class Timeline:
    """The trace's one time axis (stage B): where each report's times go on it, and its bounds."""

    clocks: list[Clock]  # per report: its times -> trace times
    clips: list[tuple[int, int] | None]  # per report: the -f window in its own times (None: no -f)
    origin_epoch: int  # the trace's 0, in ns since the epoch
    lifetimes: list[dict[int, tuple[int, int]]]  # per report: pid -> (first, last) activity, trace times
    run_end: int | None  # the run's end (POP's T) when the trace lasts until then


@dataclass
class Prepared:
    """What stages A and B know of a run: the reports, the resource model, the clock fit, the matched
    MPI messages and the timeline."""

    sources: list[Source]  # per report: what stage A read and how
    scans: list[Scan]  # per report: its small metadata
    counts: Translation  # every kind's counts: the readers' here, stage C adds its own
    model: Model  # the trace's resources (-t) and the POP processes (``Model.pop``: the POP kinds, whatever -t)
    alignment: Alignment  # the clock fit and its notes (OUT.sync.json)
    messages: Messages  # matched MPI point-to-point messages (inside the -f window)
    timeline: Timeline
    comms: Communicators  # the MPI communicators across the reports (ids, members in the trace's tasks)
    # per report, the rows of each kind its readers dropped (its scan's tallies, counted in ``counts``)
    read_dropped: list[dict[str, int]] = field(default_factory=list)

    @property
    def infos(self) -> list[ReportInfo]:
        return [s.info for s in self.scans]


def prepare(cfg: Config, ex: Executor, cache_root: Path, tick=lambda stage: None) -> Prepared:
    """Stage A on every report (in ``ex``), then stage B: model, alignment, -f window."""
    kinds = translated_kinds(cfg)
    calls = any(K.CATEGORY_BY_NAME[c].needs_calls for c in cfg.categories) and "cuda_api" not in kinds
    extra = _align_sources(cfg, kinds, len(cfg.inputs))
    pop_kinds = tuple(
        k
        for k in popm.KINDS + on_cpu.KINDS + (popm.REGION_KINDS if cfg.region or cfg.iterations else ())
        if k not in kinds
    )
    reading = Reading(kinds, calls, **extra, pop_kinds=pop_kinds)
    ipc = _own_tables_as_ipc(cfg)
    sources = [
        Source(
            i,
            ReportFile(
                str(p),
                str(cache_root),
                str(cfg.cache_dir) if cfg.cache_dir else None,
                cfg.force_sqlite,
                private=not cfg.table_cache,
                ipc=ipc,
            ),
            reading,
        )
        for i, p in enumerate(cfg.inputs)
    ]

    # -- A: per report, read (or load the cache) -> small metadata -------------------------------
    early.take()  # (the command line's early lifetimes, before the workers fork: they inherit them)
    scans = ex.map(scan.scan_for_stage_b, sources, cfg.filter_nvtx, desc="read", helped=True)
    infos = [s.info for s in scans]
    report.name_unknown_hosts(infos)
    tick("A: read/scan")
    out = Translation()
    read_dropped: list[dict[str, int]] = []
    for s in scans:
        for kind, tally in s.tallies.items():
            c = out.count(kind)
            c.source_rows += tally["source_rows"]
            for why, n in tally["dropped"].items():
                c.drop(why, n)
            for why, n in tally["notes"].items():
                c.note(why, n)
        read_dropped.append({kind: sum(tally["dropped"].values()) for kind, tally in s.tallies.items()})
        s.tallies = {}  # (counted: ~2.4 KB a report of small dicts)
    if not any(s.rows for s in scans):
        raise UserError(no_events_message(infos, kinds), ", ".join(str(p) for p in cfg.inputs))

    # -- B: global: model, alignment, window ---------------------------------------------------------
    model = build_model(
        StageBInput(scans, "keys"),
        [i.identity for i in infos],
        force=cfg.force,
        sources=[i.source for i in infos],
        devmaps=StageBInput(scans, scan.DEVMAP),
        gpu_rows=True,
        pop_keys=StageBInput(scans, "pop_keys"),
    )
    alignment, messages, comms = align_run(cfg, infos, scans, model)
    clocks = list(alignment.clocks)
    origin_epoch = min((i.session_start_ns or 0) + c.offset for i, c in zip(infos, clocks)) if infos else 0
    clips: list[tuple[int, int] | None] = [None] * len(infos)
    if cfg.filter_nvtx:
        lo, hi = _nvtx_window(
            cfg.filter_nvtx, [s.window for s in scans], clocks, any(c.startswith("nvtx") for c in cfg.categories)
        )
        clips = [(c.local(lo), c.local(hi)) for c in clocks]
        messages = messages.within(clocks, lo, hi)
        clocks = [c.shifted(-lo) for c in clocks]
    lifetimes = popm.aligned_lifetimes([i.lifetimes for i in infos], clocks, clips)
    run_end = None
    if not cfg.filter_nvtx:
        mins = [c.apply_one(s.min_time) for s, c in zip(scans, clocks) if s.min_time is not None]
        shift = -min(mins) if mins and min(mins) < 0 else 0
        if cfg.time_origin == "run":
            # Paraver's 0 = the start of the run (POP's T), unless a record comes earlier
            t0, run_end = popm.run_window(*popm.task_lifetimes([], model.pop, lifetimes), lifetimes)
            shift = -min([t0, *mins])
        elif shift:
            alignment.notes.append(f"events before the earliest session start: all times shifted by +{shift} ns")
        if shift:
            clocks = [c.shifted(shift) for c in clocks]
            lifetimes = popm.aligned_lifetimes([i.lifetimes for i in infos], clocks, clips)
            origin_epoch -= shift
            run_end = None if run_end is None else run_end + shift
    for rep_info, clock in zip(alignment.reports, clocks):
        rep_info["trace_offset_ns"] = clock.offset
    for task in model.tasks:
        task.life = lifetimes[task.report].get(task.pid) if task.report < len(lifetimes) else None
    for s in scans:  # the model and the alignment are built: their inputs (per report) go
        s.drop_stage_b_inputs()
    settle_heap()  # (before the workers fork: they start from a trimmed heap)
    return Prepared(
        sources,
        scans,
        out,
        model,
        alignment,
        messages,
        Timeline(clocks, clips, origin_epoch, lifetimes, run_end),
        comms,
        read_dropped,
    )

"""The conversion, stage by stage: export -> read -> model -> align -> translate -> write."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from nsys2prv.config import CATEGORIES, Config
from nsys2prv.errors import UserError
from nsys2prv.metrics import pop_for_tables, write_pop
from nsys2prv.model.align import Clock, P2P, align, parse_method
from nsys2prv.model.resources import build_model
from nsys2prv.nsys.diagnostics import capture_warnings
from nsys2prv.nsys.export import resolve_input
from nsys2prv.nsys.identity import check_same_job, identify
from nsys2prv.metrics.gpu_attribution import attribute, write_csv
from nsys2prv.nsys.readers import READERS, cuda_api
from nsys2prv.nsys.readers import mpi as mpi_reader
from nsys2prv.nsys.readers import nvtx as nvtx_reader
from nsys2prv.nsys.readers.gpu_metrics import device_map
from nsys2prv.nsys.schema import Report
from nsys2prv.paraver import registry as R
from nsys2prv.paraver.cfgs import install_views
from nsys2prv.paraver.writer import write_trace
from nsys2prv.translate import paint, trace_end, translate_report
from nsys2prv.translate.context import Context
from nsys2prv.translate.mpi_messages import Messages, match_messages, translate_messages
from nsys2prv.translate.records import Translation

METADATA_TABLES = ("StringIds", "ThreadNames", "PROCESSES", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME",
                   "TARGET_INFO_GPU", "TARGET_INFO_CUDA_STREAM", "META_DATA_EXPORT", "META_DATA_CAPTURE",
                   "EXPORT_META_DATA", "MPI_RANKS", "ENUM_CUDA_MEMCPY_OPER")
# Event tables this version reads for no category: reported, never silently ignored.
UNTRANSLATED_TABLES = {
    "gpu": ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",),
}
# Event tables of optional categories: reported when their category was not requested.
OPTIONAL_TABLES = {
    "gpu_metrics": ("GPU_METRICS", "GENERIC_EVENTS"),
    "openacc": ("CUPTI_ACTIVITY_KIND_OPENACC_DATA", "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
                "CUPTI_ACTIVITY_KIND_OPENACC_OTHER"),
    "graphs": ("CUDA_GRAPH_EVENTS", "CUDA_GRAPH_NODE_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
}
LINK_CATEGORIES = ("nccl", "nvtx_pushpop")   # need the CUDA API calls even without -t cuda_api


@dataclass
class Summary:
    outputs: list[str]
    reports: list[dict]
    ranks: int
    nodes: list[str]
    threads: int
    streams: int
    metric_rows: int
    records: dict[str, int]
    categories: dict[str, dict]
    untranslated: list[dict]
    alignment: dict
    notes: list[str] = field(default_factory=list)
    pop_text: str = ""            # the printed POP table (the numbers are in OUT.pop.json)

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in self.__dict__.items() if k != "pop_text"}, indent=2, default=str)


def _progress(items, desc: str, cfg: Config):
    return tqdm(items, desc=desc, unit="report", disable=not cfg.show_progress or len(items) < 2, leave=False)


def _read_report(report: Report, cfg: Config, out: Translation) -> dict[str, pd.DataFrame]:
    tables: dict[str, pd.DataFrame] = {}
    for reader in READERS:
        if not any(cfg.wants(c) for c in reader.categories):
            continue
        res = reader.read(report)
        if res is None:
            continue
        out.count(reader.kind).absorb(res)
        tables[reader.kind] = res.table
    return tables


def _nvtx_window(name: str, tables: list[dict], clocks: list[Clock]) -> tuple[int, int]:
    """Aligned [start, end] spanning the first occurrence of NVTX range ``name`` in every report."""
    starts, ends = [], []
    for tabs, clock in zip(tables, clocks):
        df = tabs.get("nvtx")
        if df is None:
            continue
        hit = df[(df["name"] == name) & (df["kind"] != "mark")]
        if len(hit):
            first = hit.loc[hit["start"].idxmin()]
            starts.append(clock.apply_one(int(first["start"])))
            ends.append(clock.apply_one(int(first["end"])))
    if not starts:
        raise UserError(f"NVTX range '{name}' (-f/--filter-nvtx) not found in any report "
                        "(is NVTX translated? it needs -t nvtx)")
    return min(starts), max(ends)


def _clip(tables: dict[str, pd.DataFrame], lo: int, hi: int, out: Translation) -> None:
    for kind, df in tables.items():
        start, end = df["start"], df["end"]
        point = start == end   # marks: inside when within the window; intervals: when they overlap it
        inside = ((end > lo) & (start < hi) | point & (start >= lo) & (start <= hi)).to_numpy()
        out.count(kind).drop("outside the -f/--filter-nvtx window", int((~inside).sum()))
        df = df[inside].copy()
        df["start"] = df["start"].clip(lower=lo)
        df["end"] = df["end"].clip(upper=hi)
        tables[kind] = df


def _calls(report: Report, tabs: dict[str, pd.DataFrame], cfg: Config) -> pd.DataFrame | None:
    """CUDA API calls for the host -> GPU links; read for the links alone when not translated."""
    if "cuda_api" in tabs:
        return tabs["cuda_api"]
    if any(cfg.wants(c) for c in LINK_CATEGORIES):
        res = cuda_api.read(report)
        return res.table if res is not None else None
    return None


def _min_time(tables: dict[str, pd.DataFrame]) -> int | None:
    mins = [int(df["start"].min()) for df in tables.values() if len(df)]
    return min(mins) if mins else None


def _check_output(base: Path) -> None:
    """Fail before any work when OUT cannot be written (the trace itself is written atomically)."""
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        probe = base.with_name(f".{base.name}.probe{os.getpid()}")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write the output there ({exc.strerror})", str(base.parent)) from None


def convert(cfg: Config, log=print) -> Summary:
    if len(cfg.inputs) > 1 and not cfg.merge:
        raise UserError(f"{len(cfg.inputs)} inputs given: pass -m/--merge to merge several reports into one trace")
    _check_output(cfg.output)
    needed = tuple(dict.fromkeys([t for r in READERS for t in r.tables] + list(METADATA_TABLES)))
    sqlite_paths = [resolve_input(Path(p), cfg.cache_dir, cfg.force_sqlite, needed)
                    for p in _progress(cfg.inputs, "export", cfg)]
    reports = [Report(sp, i, source=str(src)) for i, (sp, src) in enumerate(zip(sqlite_paths, cfg.inputs))]
    out = Translation()
    tables = [_read_report(r, cfg, out) for r in _progress(reports, "read", cfg)]
    identities = [identify(r) for r in reports]
    if not any(len(df) for tabs in tables for df in tabs.values()):
        raise UserError("no events to translate (no CUDA, NVTX, MPI or OS runtime rows for the chosen "
                        "categories)", ", ".join(str(p) for p in cfg.inputs))
    devmaps = [device_map(r) for r in reports]
    sources = [r.source for r in reports]
    model = build_model(tables, identities, force=cfg.force, sources=sources, devmaps=devmaps)
    job_notes = check_same_job(identities, sources, cfg.force)
    messages = _messages(reports, model, cfg)
    p2p = P2P(messages.send_report, messages.recv_report, messages.log_send, messages.phys_recv)
    alignment = align(cfg.align, reports, _align_tables(reports, tables, cfg), model, p2p, cfg.force)
    alignment.notes[:0] = job_notes
    clocks = list(alignment.clocks)
    origin_epoch = min((r.session_start_ns or 0) + c.offset for r, c in zip(reports, clocks)) if reports else 0

    if cfg.filter_nvtx:
        lo, hi = _nvtx_window(cfg.filter_nvtx, tables, clocks)
        for tabs, clock in zip(tables, clocks):
            _clip(tabs, clock.local(lo), clock.local(hi), out)
        messages = messages.within(clocks, lo, hi)
        clocks = [c.shifted(-lo) for c in clocks]
    mins = [int(c.apply_one(m)) for tabs, c in zip(tables, clocks) if (m := _min_time(tabs)) is not None]
    if mins and min(mins) < 0:
        shift = -min(mins)
        clocks = [c.shifted(shift) for c in clocks]
        alignment.notes.append(f"events before the earliest session start: all times shifted by +{shift} ns")
    for rep_info, c in zip(alignment.reports, clocks):
        rep_info["trace_offset_ns"] = c.offset

    pop = pop_for_tables(tables, model, clocks, cfg.nccl_as, cfg.region, cfg.iterations, cfg.warmup,
                         label=cfg.output.name)

    domains = sorted({d for tabs in tables for d in (tabs["nvtx"]["domain"].unique()
                                                       if "nvtx" in tabs else ())})
    nvtx_index = {d: i for i, d in enumerate(domains)}
    metric_types = R.gpu_metric_types([m for tabs in tables if "gpu_metrics" in tabs
                                       for m in tabs["gpu_metrics"]["metric"].unique()])
    for r, tabs in enumerate(_progress(tables, "translate", cfg)):
        ctx = Context(r, clocks[r], model, cfg.categories, nvtx_index, tabs, calls=_calls(reports[r], tabs, cfg),
                      metric_types={n: t.id for n, t in metric_types.items()}, devmap=devmaps[r])
        translate_report(ctx, out)
    if cfg.wants("mpi"):
        translate_messages(messages, clocks, out)

    end_ns = trace_end(out)
    states = paint(out, model, end_ns)
    types = dict(R.BY_ID)
    for d, i in nvtx_index.items():
        types.update({t.id: t for t in R.nvtx_types(i, d).values()})
    types.update({t.id: t for t in metric_types.values()})
    try:
        stats = write_trace(out, states, model, types, cfg.output, end_ns, origin_epoch, cfg.compress)
        attributed = attribute(tables, model, devmaps) if cfg.wants("gpu_metrics") else None
        if attributed is not None:
            stats.files.append(write_csv(attributed, cfg.output.with_name(cfg.output.name + ".gpu_metrics.csv")))
    except OSError as exc:
        raise UserError(f"cannot write the trace ({exc.strerror})", str(cfg.output)) from None
    if cfg.cfgs is not None:
        try:
            views = install_views(cfg.cfgs, cfg.output.with_name(cfg.output.name + ".pcf"))
        except OSError as exc:
            raise UserError(f"cannot write the Paraver views ({exc.strerror})", str(cfg.cfgs)) from None
        stats.files.append(Path(f"{cfg.cfgs}/ ({len(views)} views)"))

    pop_paths, pop_notes, pop_text = write_pop(pop, cfg.output)

    summary = _summary(cfg, reports, model, out, stats, alignment, clocks)
    summary.outputs += pop_paths
    summary.pop_text = "\n".join([pop_text, *(f"  note: {n}" for n in pop_notes)])
    sync_path = cfg.output.with_name(cfg.output.name + ".sync.json")
    sync_path.write_text(json.dumps(alignment.to_dict(), indent=2), encoding="utf-8")
    summary.outputs.append(str(sync_path))
    summary_path = cfg.output.with_name(cfg.output.name + ".summary.json")
    summary_path.write_text(summary.to_json(), encoding="utf-8")
    summary.outputs.append(str(summary_path))
    for r in reports:
        r.close()
    return summary


def _messages(reports: list[Report], model, cfg: Config) -> Messages:
    """Matched MPI point-to-point messages (only exports with MPI_P2P_EVENTS identify peers)."""
    if not cfg.wants("mpi") or len(reports) < 2:
        return match_messages([], model)
    return match_messages([mpi_reader.read_p2p(r) for r in reports], model)


def _align_tables(reports: list[Report], tables: list[dict], cfg: Config) -> list[dict]:
    """The tables alignment needs: what was read, plus MPI/NVTX rows read only for alignment when
    their category was not requested (they are not translated)."""
    method, _ = parse_method(cfg.align)
    if len(reports) < 2 or method in ("session", "none"):
        return tables
    extra = {"mpi": mpi_reader.read} if method in ("mpi", "auto") else {}
    if method == "marker":
        extra["nvtx"] = nvtx_reader.READER.read
    out = []
    for rep, tabs in zip(reports, tables):
        tabs = dict(tabs)
        for kind, read in extra.items():
            if kind not in tabs:
                res = read(rep)
                if res is not None:
                    tabs[kind] = res.table
        out.append(tabs)
    return out


def _summary(cfg, reports, model, out: Translation, stats, alignment, clocks) -> Summary:
    cats = {}
    for kind, c in out.counts.items():
        cats[kind] = {"source_rows": c.source_rows, "translated_rows": c.translated_rows,
                      "event_records": c.records, "dropped": dict(c.dropped), "notes": dict(c.notes)}
    untranslated = []
    for category, tabs in [*UNTRANSLATED_TABLES.items(), *OPTIONAL_TABLES.items()]:
        if category in OPTIONAL_TABLES and cfg.wants(category):
            continue    # translated: its rows are in the category counts
        for r in reports:
            for t in tabs:
                n = r.count(t)
                if n:
                    why = ("category not requested with -t" if not cfg.wants(category)
                           else "not translated by this version of nsys2prv")
                    untranslated.append({"report": r.source, "table": t, "rows": n, "reason": why})
    return Summary(
        outputs=[str(p) for p in stats.files],
        reports=[{"path": r.source, "schema": r.schema_version, "nsys": r.product_version,
                  "host": r.hostname, "offset_ns": c.offset, "drift_ppm": c.drift * 1e6,
                  "capture_warnings": capture_warnings(r)}
                 for r, c in zip(reports, clocks)],
        ranks=len(model.tasks), nodes=list(model.nodes),
        threads=sum(t.kind == "cpu" for t in model.threads),
        streams=sum(t.kind == "gpu" for t in model.threads),
        metric_rows=sum(t.kind == "metric" for t in model.threads),
        records={"states": stats.states, "events": stats.events, "communications": stats.comms,
                 "end_ns": stats.end_ns},
        categories=cats, untranslated=untranslated,
        alignment=alignment.to_dict(),
        notes=[_task_note(model, reports)])


def _task_note(model, reports, shown: int = 8) -> str:
    items = [f"{t.label}={Path(reports[t.report].source).name}"
             + (f" (rank from {t.rank_source})" if t.rank_source else "") for t in model.tasks]
    more = f", ... ({len(items) - shown} more)" if len(items) > shown else ""
    return "tasks: " + ", ".join(items[:shown]) + more


__all__ = ["convert", "Summary", "CATEGORIES"]

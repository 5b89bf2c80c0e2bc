"""The conversion summary: what was read, translated, dropped and not translated (OUT.summary.json),
and the short text printed at the end of a conversion."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import click

from nsys2prv import kinds as K
from nsys2prv.config import ALWAYS, CATEGORIES, parse_categories
from nsys2prv.core.categories import GROUP_ALIASES
from nsys2prv.nsys.readers.base import OPTIONAL_MISSING
from nsys2prv.pipeline.report import MISSING_COLUMNS, STRINGS_MISSING
from nsys2prv.translate.records import Translation


@dataclass
class Summary:
    outputs: list[str]
    reports: list[dict]
    ranks: int
    nodes: list[str]
    threads: int
    streams: int
    metric_rows: int
    overlap_rows: int  # extra rows of streams whose activities overlap (CUDA-Dd.Ss-<host>-overlap<n>)
    records: dict[str, int]
    categories: dict[str, dict]
    tables: list[dict]  # every non-metadata table of every report: rows and their fate
    untranslated: list[dict]  # the rows of those tables not translated (why) or left out (which -t)
    alignment: dict
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # data that could not be read (``--strict``: exit 4)
    pop_text: str = ""  # the printed POP table (the numbers are in OUT.pop.json)
    cache: dict | None = None  # where the exports of .nsys-rep inputs are cached, and how big

    def write_json(self, path: Path) -> None:
        """OUT.summary.json, streamed to the file (megabytes at a thousand ranks: never one string)."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({k: v for k, v in self.__dict__.items() if k != "pop_text"}, fh, indent=2, default=str)


def build_summary(
    cfg, reports, model, out: Translation, stats, alignment, clocks, dropped: list[dict[str, int]] | None = None
) -> Summary:
    """``dropped``: per report, the rows of each kind dropped (their tables' fate "dropped")."""
    cats = {}
    for kind, c in out.counts.items():
        cats[kind] = {
            "source_rows": c.source_rows,
            "translated_rows": c.translated_rows,
            "event_records": c.records,
            "dropped": dict(c.dropped),
            "notes": dict(c.notes),
        }
    kinds = K.kinds_of(cfg.categories)
    tables = [
        {"report": r.source, **t}
        for i, r in enumerate(reports)
        for t in r.fates(kinds, dropped[i] if dropped else None)
    ]
    untranslated = [
        {
            "report": t["report"],
            "table": t["table"],
            "rows": f["rows"],
            "reason": f["reason"]
            if f["fate"] == "not translated"
            else f"category not requested with -t (add {f['flag']})",
        }
        for t in tables
        for f in t["fates"]
        if f["fate"] not in ("translated", "dropped")
    ]
    return Summary(
        outputs=[str(p) for p in stats.files],
        reports=[
            {
                "path": r.source,
                "schema": r.schema_version,
                "nsys": r.product_version,
                "host": r.hostname,
                "offset_ns": c.offset,
                "drift_ppm": c.drift * 1e6,
                "capture_warnings": r.capture_warnings,
                "notes": r.notes,
            }
            for r, c in zip(reports, clocks)
        ],
        ranks=len(model.tasks),
        nodes=list(model.nodes),
        threads=sum(t.kind == "cpu" for t in model.threads),
        streams=sum(t.kind == "gpu" and not t.key[3] for t in model.threads),
        overlap_rows=sum(t.kind == "gpu" and bool(t.key[3]) for t in model.threads),
        metric_rows=sum(t.kind == "metric" for t in model.threads),
        records={"states": stats.states, "events": stats.events, "communications": stats.comms, "end_ns": stats.end_ns},
        categories=cats,
        tables=tables,
        untranslated=untranslated,
        alignment=alignment.to_dict(),
        notes=(
            [_task_note(model, reports)]
            + model.notes
            + _host_notes(reports)
            + _gpu_row_notes(model)
            + _empty_categories(cfg.categories, cats)
            + _wrapper_notes(model, reports)
            + _cache_notes(cache := _cache(reports))
        ),
        warnings=_warnings(cats, reports),
        cache=cache,
    )


def _wrapper_notes(model, reports, late_s: float = 0.1) -> list[str]:
    """Ranks whose nsys the profiling wrapper started late (waiting for its turn, retried): said, so that
    a late start in the POP advice is known to be the wrapper's, not the program's."""
    late = []
    for t in model.tasks:
        ident = reports[t.report].identity
        delay, attempt = getattr(ident, "wrapper_delay_s", None), getattr(ident, "wrapper_attempt", None)
        if (delay is not None and delay >= late_s) or (attempt or 1) > 1:
            late.append(f"{t.label} {delay or 0:.3f} s" + (f" (attempt {attempt})" if (attempt or 1) > 1 else ""))
    if not late:
        return []
    return [
        "nsys2prv's profiling wrapper started nsys late for " + ", ".join(late) + " (NSYS2PRV_DELAY_S in the "
        "report: waiting for its turn to start nsys on the node, or retried): a late start of these ranks is "
        "the wrapper's, not the program's"
    ]


def _cache(reports) -> dict | None:
    """The directory holding the exports of .nsys-rep inputs (not beside them), with its size."""
    exports = [
        Path(r.path)
        for r in reports
        if Path(r.path) != Path(r.source) and Path(r.path) != Path(r.source).with_suffix(".sqlite")
    ]
    if not exports:
        return None
    root = exports[0].parent
    total = 0
    for dirpath, _dirs, files in os.walk(root):  # never follows links
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    size = sum(p.lstat().st_size for p in exports if p.exists())
    return {"dir": str(root), "exports": len(exports), "export_bytes": size, "total_bytes": total}


def _cache_notes(cache: dict | None) -> list[str]:
    if cache is None:
        return []
    return [
        f"{cache['exports']} report(s) exported to the cache {cache['dir']} ({cache['export_bytes'] / 1e6:.1f} MB;"
        f" the cache holds {cache['total_bytes'] / 1e6:.1f} MB in all: --cache-dir DIR puts it elsewhere, "
        "deleting it is safe, it is rebuilt)"
    ]


def _empty_categories(chosen, cats: dict) -> list[str]:
    """The -t categories asked for (not the default set) that found no row in any report: said, so that
    a missing category is not mistaken for one without problems (e.g. -t cuda_api,gpu_metrics on a
    CPU-only run).  A category of a -t group (nvtx: push/pop and start/end) whose sibling found rows is
    not said; neither are the always-translated ones nobody asked for."""
    if frozenset(chosen) == parse_categories(None):
        return []

    def found(cat: str) -> bool:
        return any(cats.get(k.name, {}).get("source_rows", 0) > 0 for k in K.KINDS if cat in k.categories)

    empty = []
    for cat in sorted(set(chosen) - ALWAYS):
        siblings = {c for group in GROUP_ALIASES.values() if cat in group for c in group} - {cat}
        if not found(cat) and not any(found(c) for c in siblings & set(chosen)):
            empty.append(f"{cat} ({CATEGORIES[cat]})")
    if not empty:
        return []
    return [
        f"-t found no data for {', '.join(empty)}: none in these reports (not traced by nsys, or not in this export)"
    ]


def _gpu_row_notes(model) -> list[str]:
    if not model.device_rows:
        return []
    return [
        f"processes and GPUs are not one to one: {len(model.device_rows)} GPU row(s) 'Metrics GPU<id>' carry "
        "each GPU's activity over all its streams and processes (type 63000090; analysis/gpu_activity.cfg)"
    ]


def _warnings(cats: dict, reports) -> list[str]:
    """What the exports held but could not be read: tables lacking a column the reader needs, an export
    without its string table (every name would be '<unknown name #id>')."""
    out = [
        f"{kind}: {n} rows of {why}"
        for kind, c in cats.items()
        for why, n in c["dropped"].items()
        if MISSING_COLUMNS in why
    ]
    out += [
        f"{kind}: {n} rows of {why}"
        for kind, c in cats.items()
        for why, n in c.get("notes", {}).items()
        if OPTIONAL_MISSING in why
    ]  # a column whose values are then missing from the trace
    names = [r.source for r in reports if any(STRINGS_MISSING in w for w in r.capture_warnings)]
    if names:
        out.append(
            f"{STRINGS_MISSING} in {len(names)} report(s) ({', '.join(names[:3])}"
            f"{' ...' if len(names) > 3 else ''}): names are shown as '<unknown name #id>'"
        )
    return out


def _host_notes(reports, shown: int = 3) -> list[str]:
    """One note for every report whose export names no host (said once per run)."""
    unknown = [r for r in reports if not r.host_known]
    if not unknown:
        return []
    items = [f"{Path(r.source).name} -> {r.hostname}" for r in unknown]
    more = f", ... ({len(items) - shown} more)" if len(items) > shown else ""
    return [
        f"host unknown in {len(unknown)} report(s) (no Hostname, DEVICE_DISPLAY_NAME or host variable in the "
        f"export): named after the file ({', '.join(items[:shown])}{more}); reports with unknown hosts are "
        "each treated as their own node, with its own clock"
    ]


def _task_note(model, reports, shown: int = 8) -> str:
    items = [
        f"{t.label}={Path(reports[t.report].source).name}" + (f" (rank from {t.rank_source})" if t.rank_source else "")
        for t in model.tasks
    ]
    more = f", ... ({len(items) - shown} more)" if len(items) > shown else ""
    return "tasks: " + ", ".join(items[:shown]) + more


def print_summary(s: Summary, seconds: float) -> None:
    rec = s.records
    click.echo(
        f"nsys2prv: {len(s.reports)} report(s) -> {s.ranks} task(s) on {len(s.nodes)} node(s) "
        f"({', '.join(s.nodes)}), {s.threads} CPU thread(s), {s.streams} GPU stream(s)"
        + (f", {s.overlap_rows} extra stream row(s) for overlapping GPU activities" if s.overlap_rows else "")
        + (f", {s.metric_rows} GPU metric row(s)" if s.metric_rows else "")
    )
    click.echo(
        f"  records: {rec['states']} states, {rec['events']} events, {rec['communications']} "
        f"communications; Paraver trace length {rec['end_ns'] / 1e9:.6f} s (POP's T below is the run's "
        f"elapsed time); {seconds:.2f} s wall"
    )
    click.echo(f"  {'category':<14} {'source rows':>12} {'translated':>11} {'records':>9}  dropped / notes")
    for kind, c in sorted(s.categories.items()):
        extra = "; ".join(f"{n} {why}" for why, n in {**c["dropped"], **c["notes"]}.items())
        click.echo(f"  {kind:<14} {c['source_rows']:>12} {c['translated_rows']:>11} {c['event_records']:>9}  {extra}")
    for (table, reason), items in _grouped(s.untranslated, lambda u: (u["table"], u["reason"])).items():
        rows = sum(u["rows"] for u in items)
        where = items[0]["report"] if len(items) == 1 else f"{len(items)} reports"
        click.echo(f"  not translated: {rows} rows of {table} in {where} ({reason})")
    warnings = [(r["path"], w) for r in s.reports for w in r["capture_warnings"]]
    for w, items in _grouped(warnings, lambda pw: pw[1]).items():
        where = items[0][0] if len(items) == 1 else f"{len(items)} reports"
        click.echo(f"  {where}: {w}")
    notes = [(r["path"], n) for r in s.reports for n in r["notes"]]
    for n, items in _grouped(notes, lambda pn: pn[1]).items():
        where = items[0][0] if len(items) == 1 else f"{len(items)} reports"
        click.echo(f"  {where}: note: {n}")
    for w in s.warnings:
        click.echo(f"  warning: {w}")
    _alignment_table(s.alignment)
    for note in s.alignment["notes"] + s.notes:
        click.echo(f"  note: {note}")
    click.echo("  wrote: " + ", ".join(s.outputs))


ALIGNMENT_WARNING_NS = 100_000  # estimated alignment errors above this are said


def _error_ns(r: dict):
    """A report's alignment error: the half-width of its interval where the bounds placed it, else the
    standard error of its fitted offset (None: not known)."""
    return r.get("bound_ns", r.get("stderr_ns"))


def _fitted(method: str) -> bool:
    """Whether a report's clock was fitted to sync points (else its error is no estimate's)."""
    return not (method.startswith("session") or method == "none")


def _grouped(items, key) -> dict:
    """Items by ``key``, in first-seen order: what repeats per report is said once."""
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def _alignment_table(al: dict, shown: int = 16) -> None:
    """One line per report: method, offset, drift, residual spread of its sync points; then the
    causality of the MPI/NCCL collectives and messages on the clocks the method produced."""
    reports = al.get("reports", [])
    if len(reports) < 2:
        return
    v = al.get("violations", {})
    estimating = max((r["sync_points"] for r in reports), default=0)
    total = al.get("sync_points", 0)
    only = (
        f" ({estimating} estimate the offsets, {total - estimating} -- MPI_Init/MPI_Finalize -- only constrain them)"
        if 0 < estimating < total
        else ""
    )
    click.echo(
        f"  clock alignment: {al['method']}; {total} sync point(s){only}, "
        f"{al.get('messages', 0)} matched message(s); violated constraints "
        f"{v.get('after_estimate', 0)} after the estimate, {v.get('after_fix', 0)} after the fix"
    )
    cau = al.get("causality")
    if cau is not None:
        click.echo(
            f"  causality on these clocks: {cau['collectives_violated']} of {cau['collectives_checked']} "
            "MPI/NCCL collective(s) left by a rank before the last rank entered"
            + (f" (up to {cau['collective_max_violation_ns'] / 1e3:.1f} us)" if cau["collectives_violated"] else "")
            + f", {cau['messages_violated']} of {cau['messages_checked']} message(s) received before sent"
            + (f" (up to {cau['message_max_violation_ns'] / 1e3:.1f} us)" if cau["messages_violated"] else "")
        )
    wide = max([16, *(len(r["method"]) for r in reports[:shown])])  # the methods whole ("... (bounds: ...)")
    click.echo(
        f"  {'ranks':<10} {'method':<{wide}} {'started (s)':>12} {'correction (ns)':>16} {'drift ppm':>10} "
        f"{'spread (us)':>12} {'error (us)':>11} {'points':>7}"
    )
    for r in reports[:shown]:
        ranks = ",".join(str(x) for x in r["ranks"]) or "-"
        spread = "-" if r["residual_spread_ns"] is None else f"{r['residual_spread_ns'] / 1e3:.1f}"
        is_fit = _fitted(r["method"])
        e_ns = _error_ns(r)
        err = "-" if e_ns is None or not is_fit else f"{e_ns / 1e3:.1f}"
        click.echo(
            f"  {ranks:<10} {r['method']:<{wide}} {r['session_offset_ns'] / 1e9:>12.6f} "
            f"{r['correction_ns']:>16} {r['drift_ppm']:>10.3f} {spread:>12} {err:>11} {r['sync_points']:>7}"
        )
    if len(reports) > shown:
        click.echo(f"  ... {len(reports) - shown} more in the .sync.json")
    click.echo(
        "  (started: the report's session start after the first one's; correction: what the sync points "
        "moved it by; spread: how far this report's exits from the sync points lie from the others' on "
        "these clocks (robust sigma, us) -- with session clocks, how unevenly the ranks leave their "
        "collectives, not an alignment error; error: the standard error of a fitted offset, or the "
        "half-width of the interval the data allow for one placed by the bounds (us); points: "
        "the sync points that estimate this report's offset)"
    )
    fitted = [r for r in reports if _error_ns(r) is not None and r["correction_ns"] != 0 and _fitted(r["method"])]
    worst = max(fitted, key=_error_ns, default=None)
    if worst is not None and _error_ns(worst) > ALIGNMENT_WARNING_NS:
        click.echo(
            f"  warning: estimated clock alignment error up to {_error_ns(worst) / 1e3:.0f} us (ranks "
            f"{','.join(map(str, worst['ranks']))}): events of different ranks closer than that may be "
            "shown in the wrong order"
        )

"""Scalability over several runs (``nsys2prv pop RUN...``).

A RUN is an earlier conversion's ``OUT.pop.json`` or a (quoted) glob of reports of one run,
whose POP metrics are then computed without writing a trace.  The first run is the
reference; the scaling mode is always stated (--scaling), never detected.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

from nsys2prv.core.errors import UserError
from nsys2prv.metrics.pop import SCHEMA

SCALING_SCHEMA = "nsys2prv-pop-scaling/1"
MODES = ("strong", "weak")


def run_reports(paths: list[Path], nccl_as: str, region=None, iterations=None, warmup: int = 0,
                cache_dir=None, force: bool = False, label: str = "", align_method: str = "auto") -> dict:
    """POP metrics of one run's reports: the conversion's read -> model -> align stages only."""
    from nsys2prv.config import Config
    from nsys2prv.metrics import pop_for_tables
    from nsys2prv.model.align import align
    from nsys2prv.model.resources import build_model
    from nsys2prv.nsys.export import resolve_input
    from nsys2prv.nsys.identity import identify
    from nsys2prv.nsys.readers import READERS
    from nsys2prv.nsys.database import Report
    from nsys2prv.pipeline import METADATA_TABLES, _read_report
    from nsys2prv.translate.records import Translation

    cfg = Config(inputs=list(paths), output=Path(label or "run"), merge=True, force=force, cache_dir=cache_dir,
                 show_progress=False)
    needed = tuple(dict.fromkeys([t for r in READERS for t in r.tables] + list(METADATA_TABLES)))
    sqlite_paths = [resolve_input(Path(p), cache_dir, False, needed) for p in paths]
    reports = [Report(sp, i, source=str(src)) for i, (sp, src) in enumerate(zip(sqlite_paths, paths))]
    try:
        out = Translation()
        tables = [_read_report(r, cfg, out) for r in reports]
        model = build_model(tables, [identify(r) for r in reports], force=force, sources=[r.source for r in reports])
        clocks = list(align(align_method, reports, tables, model, None, force).clocks)
        res = pop_for_tables(tables, model, clocks, nccl_as, region, iterations, warmup, label=label)
    finally:
        for r in reports:
            r.close()
    res["source"] = [str(p) for p in paths]
    return res


def load_run(spec: str, nccl_as: str, region=None, iterations=None, warmup: int = 0, cache_dir=None,
             force: bool = False, align_method: str = "auto") -> dict:
    p = Path(spec)
    if p.suffix == ".json" and p.exists():
        try:
            res = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"not a readable POP JSON file ({exc})", spec) from None
        if not isinstance(res, dict) or res.get("schema") != SCHEMA:
            raise UserError(f"not an OUT.pop.json of a conversion (schema {SCHEMA})", spec)
        res["source"] = [spec]
        return res
    matches = sorted(glob.glob(spec)) or ([spec] if p.exists() else [])
    if not matches:
        raise UserError("matches no file (give an OUT.pop.json or a quoted glob of one run's reports)", spec)
    return run_reports([Path(m) for m in matches], nccl_as, region, iterations, warmup, cache_dir, force,
                       label=Path(matches[0]).parent.name, align_method=align_method)


def select_scope(res: dict, region=None, iterations=None) -> dict:
    """The scope a run contributes: the whole trace, its --region or its --iterations steady state."""
    if region and iterations:
        raise UserError("give --region or --iterations, not both, for a scalability table")
    if not (region or iterations):
        return res
    for reg in res.get("regions", []):
        if region and reg["kind"] == "region" and reg["name"] == region:
            return reg
        if iterations and reg["kind"] == "iterations" and reg["name"].startswith(f"{iterations} ("):
            return reg
    what = f"--region {region}" if region else f"--iterations {iterations}"
    raise UserError(f"run has no {what} table (convert it again with {what})", ", ".join(res.get("source", [])))


def _div(a, b):
    return None if a is None or b in (None, 0) else a / b


def scaling(runs: list[dict], labels: list[str], mode: str, region=None, iterations=None) -> dict:
    if mode not in MODES:
        raise UserError(f"--scaling must be one of {', '.join(MODES)}")
    rules = {r.get("nccl_as") for r in runs}
    if len(rules) > 1:
        raise UserError(f"runs were computed with different --nccl-as rules ({', '.join(sorted(rules))}): "
                        "recompute them with one rule")
    scopes = [select_scope(r, region, iterations) for r in runs]
    ref = scopes[0]

    def units(s):
        return s["host"]["count"] or s["device"]["count"]

    out_runs = []
    for label, run, s in zip(labels, runs, scopes):
        row = {"label": label, "source": run.get("source"), "elapsed_ns": s["elapsed_ns"],
               "device": dict(s["device"]), "host": dict(s["host"])}
        for tree in ("device", "host"):
            su0, su = ref[tree].get("useful_time_total_ns"), s[tree].get("useful_time_total_ns")
            n0, n = ref[tree]["count"], s[tree]["count"]
            cs = _div(su0, su)
            if cs is not None and mode == "weak":
                cs = cs * n / n0 if n0 else None
            pe = s[tree].get("parallel_efficiency")
            row[tree]["computation_scalability"] = cs
            row[tree]["global_efficiency"] = pe * cs if pe is not None and cs is not None else None
        t = _div(ref["elapsed_ns"], s["elapsed_ns"])
        p0, p = units(ref), units(s)
        if t is None or not p0 or not p:
            row["speedup"] = row["efficiency"] = None
        elif mode == "strong":
            row["speedup"], row["efficiency"] = t, t * p0 / p
        else:
            row["speedup"], row["efficiency"] = t * p / p0, t
        out_runs.append(row)
    return {
        "schema": SCALING_SCHEMA, "scaling": mode, "reference": labels[0], "nccl_as": runs[0].get("nccl_as"),
        "scope": region or (f"{iterations} (iterations)" if iterations else "trace"),
        "runs": out_runs,
        "definitions": {
            "reference": "the first RUN given; its scalability factors are 100% by definition",
            "scaling": f"{mode} scaling, stated with --scaling (no auto-detection)",
            "device_computation_scalability": "sum_d U_d(0) / sum_d U_d(n)"
                                              + (" x D(n)/D(0) (physical GPUs)" if mode == "weak" else ""),
            "host_computation_scalability": "sum_i UsefulHost_i(0) / sum_i UsefulHost_i(n)"
                                            + (" x H(n)/H(0) (host processes)" if mode == "weak" else ""),
            "global_efficiency": "parallel efficiency x computation scalability, per tree (host and device "
                                 "trees are never multiplied together)",
            "speedup": "T(0)/T(n)" + (" x P(n)/P(0)" if mode == "weak" else ""),
            "efficiency": "T(0)/T(n)" + (" x P(0)/P(n)" if mode == "strong" else ""),
            "units": "P = host processes counted in the host tree (those owning GPU streams), else physical GPUs",
            "per_run": "each run's own definitions are in its OUT.pop.json",
        },
    }


def default_labels(scopes: list[dict]) -> list[str]:
    labels = [f"{s['host']['count']} proc [{s['device']['count']} GPU]" for s in scopes]
    seen: dict[str, int] = {}
    out = []
    for l in labels:
        seen[l] = seen.get(l, 0) + 1
        out.append(l if labels.count(l) == 1 else f"{l} #{seen[l]}")
    return out


__all__ = ["scaling", "load_run", "select_scope", "run_reports", "default_labels", "MODES"]

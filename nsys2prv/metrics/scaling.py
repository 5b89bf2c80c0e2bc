"""Scalability over several runs (``nsys2prv pop RUN...``): the table from each run's POP result.

The first run is the reference; the scaling mode is always stated (--scaling), never detected.
Loading a run (an ``OUT.pop.json`` or one run's reports) is ``pipeline.runs.load_run``.
"""

from __future__ import annotations

from pathlib import Path

from nsys2prv.core.errors import UserError

SCALING_SCHEMA = "nsys2prv-pop-scaling/1"
MODES = ("strong", "weak")


def select_scope(res: dict, region=None, iterations=None) -> dict:
    """The scope a run contributes: the whole trace, its --region or its --iterations steady state."""
    if region and iterations:
        raise UserError("give --region or --iterations, not both, for a scalability table")
    if not (region or iterations):
        return res
    for reg in res.get("regions", []):
        if region and reg["kind"] in ("region", "steady") and reg["name"] == region:
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
        named = sorted(rule or "not recorded" for rule in rules)
        raise UserError(
            f"runs were computed with different --nccl-as rules ({', '.join(named)}): recompute them with one rule"
        )
    scopes = [select_scope(r, region, iterations) for r in runs]
    ref = scopes[0]

    def units(s):
        return s["host"]["count"] or s["device"]["count"]

    single = len(runs) == 1
    out_runs = []
    for label, run, s in zip(labels, runs, scopes):
        row = {
            "label": label,
            "source": run.get("source"),
            "elapsed_ns": s["elapsed_ns"],
            "device": dict(s["device"]),
            "host": dict(s["host"]),
        }
        for tree in ("device", "host"):
            su0, su = ref[tree].get("useful_time_total_ns"), s[tree].get("useful_time_total_ns")
            n0, n = ref[tree]["count"], s[tree]["count"]
            cs = None if single else _div(su0, su)
            if cs is not None and mode == "weak":
                cs = cs * n / n0 if n0 else None
            pe = s[tree].get("parallel_efficiency")
            row[tree]["computation_scalability"] = cs
            row[tree]["global_efficiency"] = pe if single else pe * cs if pe is not None and cs is not None else None
            na = row[tree].get("not_available")
            if isinstance(na, dict) and not single:  # a run's own "single run" reason no longer holds
                row[tree]["not_available"] = {k: v for k, v in na.items() if row[tree].get(k) is None or k == "all"}
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
        "schema": SCALING_SCHEMA,
        "scaling": None if single else mode,
        "reference": labels[0],
        "nccl_as": runs[0].get("nccl_as"),
        "warnings": run_warnings(runs, labels),
        "scope": region or (f"{iterations} (iterations)" if iterations else "trace"),
        "runs": out_runs,
        "definitions": {
            "reference": "the first RUN given; its scalability factors are 100% by definition",
            "scaling": (
                "one run: no scalability (computation scalability n/a, global efficiency = parallel efficiency)"
                if single
                else f"{mode} scaling, stated with --scaling (no auto-detection)"
            ),
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


def run_warnings(runs: list[dict], labels: list[str]) -> list[str]:
    """Runs that look like one run split up: RUNs sharing a job id (the reports of one job), or every
    RUN a single report of one directory (an unquoted glob the shell expanded into one RUN per file)."""
    out = []
    by_job: dict[str, list[str]] = {}
    for label, run in zip(labels, runs):
        for job in run.get("job_ids") or []:
            by_job.setdefault(job, []).append(label)
    for job, names in by_job.items():
        if len(names) > 1:
            out.append(
                f"runs {', '.join(names)} come from one job ({job}): if they are the reports of one run, "
                "give them as one RUN, a quoted glob ('dir/rank*.nsys-rep')"
            )
    sources = [run.get("source") or [] for run in runs]
    reports = [src for src in sources if len(src) == 1 and not str(src[0]).endswith(".json")]
    if (
        not out
        and len(runs) > 1
        and len(reports) == len(runs)
        and len({str(Path(src[0]).parent) for src in reports}) == 1
    ):
        out.append(
            f"each of the {len(runs)} RUNs is a single report of one directory: if they are the ranks of "
            "one run, the shell expanded an unquoted glob -- quote it ('dir/rank*.nsys-rep') to make one RUN"
        )
    return out


def default_labels(scopes: list[dict]) -> list[str]:
    labels = [f"{s['host']['count']} proc [{s['device']['count']} GPU]" for s in scopes]
    seen: dict[str, int] = {}
    out = []
    for l in labels:
        seen[l] = seen.get(l, 0) + 1
        out.append(l if labels.count(l) == 1 else f"{l} #{seen[l]}")
    return out


__all__ = ["scaling", "select_scope", "default_labels", "MODES"]

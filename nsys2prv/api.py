"""nsys2prv from Python (a notebook): ``run = nsys2prv.open(paths, align=...)``.

A :class:`Run` is the reports of one run on the aligned timeline the conversion uses: the same stages
(``pipeline.prepare``: stages A and B, ``pipeline.conversion``: the POP reduction and the trace), no
second path.  It is lazy: opening reads nothing; the first table, ``pop()`` or ``to_paraver()`` runs
stages A and B once (reading each report, or its cache), and a table is loaded from the normalised-table
cache when it is asked for.  docs/api.md has a worked example.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.config import Config, parse_categories
from nsys2prv.core import registry as R
from nsys2prv.core.errors import UserError
from nsys2prv.metrics import tables as pop_tables
from nsys2prv.metrics.pop import region_names
from nsys2prv.model.align import parse_method
from nsys2prv.nsys.export import default_cache_dir
from nsys2prv.nsys.identity import check_distinct_inputs
from nsys2prv.nsys.ids import pid_of, tid_of
from nsys2prv.pipeline import convert, pop_of_reports
from nsys2prv.pipeline.parallel import executor
from nsys2prv.pipeline.prepare import Prepared, prepare
from nsys2prv.pipeline.report import table_cache
from nsys2prv.pipeline.summary import Summary
from nsys2prv.translate.cuda import memcpy_values

TABLES = {  # Run attribute -> the normalised tables (data kinds, nsys2prv/kinds.py) it joins
    "kernels": ("kernels",),
    "cuda_api": ("cuda_api",),
    "memops": ("memcpy", "memset"),
    "nvtx": ("nvtx",),
    "mpi": ("mpi",),
    "nccl": ("nccl",),
    "gpu_metrics": ("gpu_metrics",),
}
TIME_COLUMNS = ("start", "end")  # (every reader's times: start, end; a sample's start = end)
NAME_COLUMNS = ("name", "kind", "operation", "domain", "category", "demangled", "metric")  # categorical strings


@dataclasses.dataclass
class Pop:
    """The POP metrics of a run: ``result`` is OUT.pop.json's content (a dict, JSON types), ``table`` the
    metrics as rows and the scopes (whole run, steady state, regions) as columns, as OUT.pop.csv holds
    them (fractions, seconds, counts; NaN = n/a), ``iterations`` one row per iteration (``--iterations``)."""

    result: dict
    table: pd.DataFrame
    iterations: pd.DataFrame | None

    def to_markdown(self) -> str:
        """The table as OUT.pop.md writes it (GitHub Markdown)."""
        return pop_tables.markdown_table(pop_tables.single_run_columns(self.result), pop_tables.caption(self.result))


class Run:
    """One run's reports (one per rank), opened with :func:`open`."""

    def __init__(
        self,
        paths: Iterable[str | Path] | str | Path,
        align: str = "auto",
        *,
        force: bool = False,
        cache_dir: str | Path | None = None,
        jobs: int | None = None,
    ) -> None:
        self.paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
        if not self.paths:
            raise UserError("give at least one report (.sqlite, .nsys-rep or .qdstrm)")
        check_distinct_inputs(self.paths)
        parse_method(align)
        self.align = align
        self.force = force
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.jobs = jobs

    def config(self, output: str | Path = "run", **options) -> Config:
        """The conversion's Config for these reports (``options``: any Config field, e.g. ``region``)."""
        return Config(
            inputs=list(self.paths),
            output=Path(str(output)).with_suffix("") if str(output).endswith(".prv") else Path(output),
            merge=len(self.paths) > 1,
            align=self.align,
            force=self.force,
            cache_dir=self.cache_dir,
            show_progress=False,
            jobs=self.jobs,
            **options,
        )

    # -- stages A and B, once ----------------------------------------------------------------------
    @functools.cached_property
    def prepared(self) -> Prepared:
        """Stages A and B (every kind read, whatever a trace would translate): the reports' resource
        model, clocks and timeline."""
        cfg = self.config(categories=parse_categories("all"))
        ex = executor(cfg.jobs, None)
        try:
            return prepare(cfg, ex, (self.cache_dir or default_cache_dir()) / "tables")
        finally:
            ex.close(final=True)

    def table(self, kind: str) -> pd.DataFrame:
        """One normalised table of every report, on the aligned timeline (ns; time 0 = the run's start, as
        in the trace), with the columns ``report``, ``host``, ``rank`` (None: not an MPI rank), ``pid``, ``thread``
        (the OS thread id, where the table has one), ``gpu`` and ``stream`` (GPU activity), beside the
        reader's own columns; names (kernels, calls, ranges) are categorical strings."""
        parts = TABLES.get(kind, (kind,))
        if any(p not in K.BY_NAME for p in parts):
            raise UserError(f"no data kind {kind!r}: one of {', '.join(sorted({*TABLES, *K.BY_NAME}))}")
        run = self.prepared
        frames = []
        for src, clock, info in zip(run.sources, run.timeline.clocks, run.infos):
            src_host = info.hostname
            cache = table_cache(src)
            for part in parts:
                df = cache.table(part) if cache.has(part) else None
                if df is None or not len(df):
                    continue
                df = df.copy()
                for col in TIME_COLUMNS:
                    if col in df:
                        df[col] = clock.apply(df[col].to_numpy(np.int64))
                ids = df["gpid"] if "gpid" in df else df["tid"] if "tid" in df else None
                pids = pid_of(ids.to_numpy(np.int64)) if ids is not None else np.full(len(df), -1, np.int64)
                owner = [run.model.processes[i] if i >= 0 else None for i in run.model.processes_of(src.index, pids)]
                extra = {
                    "report": np.full(len(df), src.index, np.int64),
                    "host": pd.Categorical([src_host] * len(df)),
                    "rank": pd.array([t.rank if t is not None else None for t in owner], dtype="Int64"),
                    "pid": pids,
                }
                if "tid" in df:
                    extra["thread"] = tid_of(df["tid"].to_numpy(np.int64))
                if "streamId" in df and "stream" not in df:
                    extra["stream"] = df["streamId"].to_numpy()
                if len(parts) > 1:
                    extra["kind"] = np.full(len(df), part)
                if part in ("memcpy", "memset"):  # the trace's label of the operation (type 63000001)
                    values = (
                        memcpy_values(df["copy_kind"])
                        if part == "memcpy"
                        else np.full(len(df), R.MEMSET_VALUE, np.int64)
                    )
                    extra["operation"] = np.array([R.MEMOP.values[int(v)] for v in values], dtype=object)
                frames.append(pd.concat([pd.DataFrame(extra, index=df.index), df], axis=1))
        if not frames:
            return pd.DataFrame()
        out = pd.concat(frames, ignore_index=True)
        for col in NAME_COLUMNS:
            if col in out and not isinstance(out[col].dtype, pd.CategoricalDtype):
                out[col] = out[col].astype("category")
        order = ["start"] if "start" in out else ["report"]
        return out.sort_values(order, kind="stable").reset_index(drop=True)

    kernels = property(lambda self: self.table("kernels"), doc="GPU kernels (the NCCL ones too: column nccl).")
    cuda_api = property(lambda self: self.table("cuda_api"), doc="CUDA runtime and driver API calls.")
    memops = property(lambda self: self.table("memops"), doc="Memory copies and memsets (column kind).")
    nvtx = property(lambda self: self.table("nvtx"), doc="NVTX ranges and marks.")
    mpi = property(lambda self: self.table("mpi"), doc="MPI calls.")
    nccl = property(lambda self: self.table("nccl"), doc="NCCL collectives (NVTX payloads).")
    gpu_metrics = property(lambda self: self.table("gpu_metrics"), doc="GPU metrics samples.")

    # -- POP and the trace, by the conversion's own stages ------------------------------------------
    def pop(
        self,
        region: str | Iterable[str] | None = None,
        nccl_as: str = "communication",
        iterations: str | None = None,
        warmup: int = 0,
    ) -> Pop:
        """The POP metrics, as a conversion with the same options writes them in OUT.pop.json
        (``region``: one NVTX range name or several, a column each; ``nccl_as``: "communication" or
        "useful")."""
        names = region_names(region if isinstance(region, str) or region is None else tuple(region))
        cfg = self.config(region=names, nccl_as=nccl_as, iterations=iterations, warmup=warmup)
        res = pop_of_reports(cfg)
        res.pop("source", None)  # (what ``nsys2prv pop`` adds; the conversion's OUT.pop.json has no such key)
        return pop_frames(json.loads(json.dumps(res, default=pop_tables.json_default)))

    def to_paraver(self, out: str | Path, **options) -> Summary:
        """Write the trace OUT.prv/.pcf/.row and every output of ``nsys2prv ... OUT`` (``options``: Config
        fields, e.g. ``categories=parse_categories("mpi,nvtx")``, ``region=("solve",)``, ``cfgs=Path(...)``)."""
        if isinstance(options.get("categories"), str):
            options["categories"] = parse_categories(options["categories"])
        return convert(self.config(out, **options))


def pop_frames(result: dict) -> Pop:
    """A POP result (OUT.pop.json's content) as DataFrames."""
    cols = pop_tables.single_run_columns(result)
    rows = list(pop_tables.visible_rows(cols))
    table = pd.DataFrame(
        {c["header"]: [np.nan if c["values"][k] is None else c["values"][k] for k, *_ in rows] for c in cols},
        index=pd.Index([k for k, *_ in rows], name="metric"),
    )
    table.insert(0, "label", [label for _, label, *_ in rows])
    it = result.get("iterations")
    iterations = None
    if it:
        keys = [k for k, *_ in pop_tables.ROWS if k not in pop_tables.OPTIONAL_ROWS]
        iterations = pd.DataFrame(
            [
                {
                    "iteration": row["index"],
                    "start_ns": row["start_ns"],
                    "end_ns": row["end_ns"],
                    **{
                        k: np.nan if v is None else v
                        for k, v in pop_tables.column(row, "")["values"].items()
                        if k in keys
                    },
                }
                for row in it["table"]
            ]
        ).set_index("iteration")
    return Pop(result, table, iterations)


def open(  # noqa: A001 (nsys2prv.open, as in pandas.read_*/h5py.File: the package's entry point)
    paths: Iterable[str | Path] | str | Path,
    align: str = "auto",
    *,
    force: bool = False,
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
) -> Run:
    """The run of ``paths`` (one report per rank; .sqlite, .nsys-rep or .qdstrm), aligned with ``align``
    (auto, session, mpi, nccl, marker:NAME or none, as ``--align``).  Nothing is read yet."""
    return Run(paths, align, force=force, cache_dir=cache_dir, jobs=jobs)


__all__ = ["open", "Run", "Pop", "pop_frames", "TABLES"]

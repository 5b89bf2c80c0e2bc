"""NVTX ranges and marks (NVTX_EVENTS), split by domain into NVTX, MPI and NCCL.

``load_nvtx`` reads the table once per report (cached on the report) and resolves
names, domains (per process), categories and thread names.  Normalised columns of
the range tables: start, end, tid, kind ('pushpop' | 'startend' | 'mark'),
domain (name, '' = default domain), name, category (id), category_name, depth
(push/pop nesting level per thread and domain, 0 = outermost), json (payload text
or None).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys2prv.core.intervals import nesting_depth
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.ids import PROCESS_KEY_MASK
from nsys2prv.nsys.readers.base import (
    Reader,
    ReadResult,
    int64,
    interval_frame,
    to_int64,
)

TABLE = "NVTX_EVENTS"
PUSHPOP, STARTEND, MARK = 59, 60, 34
NVTXT_PUSHPOP, NVTXT_STARTEND = 70, 71
DOMAIN_CREATE, CATEGORY_NAME, THREAD_NAME = 75, 33, 39
KINDS = {PUSHPOP: "pushpop", NVTXT_PUSHPOP: "pushpop", STARTEND: "startend", NVTXT_STARTEND: "startend", MARK: "mark"}
MPI_DOMAIN, NCCL_DOMAIN = "MPI", "NCCL"


@dataclass
class NvtxRows:
    """A report's NVTX rows, resolved once (``load_nvtx``)."""

    events: pd.DataFrame  # ranges and marks, every domain, names resolved
    thread_names: dict[int, str]  # globalTid -> name given by nvtxNameOsThread
    classes: dict[str, int]  # rows by class (``row_classes``)
    nccl_by_name: int  # rows recognised as NCCL by their names (``_nccl_by_name``)
    type_drops: dict[str, int]  # rows dropped for text in a numeric column, by reason
    max_time: int  # the latest start or end in the table (0: none)


def _text(report: Report, df: pd.DataFrame) -> np.ndarray:
    """COALESCE(text, StringIds[textId])."""
    text = df["text"].to_numpy(dtype=object).copy()
    missing = pd.isna(text)
    if missing.any():
        text[missing] = report.lookup(df["textId"][missing])
    return text


def load_nvtx(report: Report) -> NvtxRows | None:
    """All NVTX rows of a report, resolved; cached on the report."""
    if "nvtx" in report.cache:
        return report.cache["nvtx"]
    if not report.has(TABLE, "start", "eventType", "globalTid"):
        report.cache["nvtx"] = None
        return None
    optional = ", ".join(
        report.col_or_null(TABLE, col)
        for col in ("text", "textId", "domainId", "category", "jsonText", "jsonTextId", "binaryData")
    )
    # (rows with text in a numeric column: the nvtx reader counts them, whoever reads first)
    with report.counting_type_drops() as type_drops:
        df = report.query(f"SELECT start, end, eventType, globalTid AS tid, {optional} FROM {TABLE}")
    etype = int64(df["eventType"], fill=-1)
    for c in ("tid", "domainId", "category"):
        to_int64(df, c)
    df["pkey"] = df["tid"].to_numpy() & PROCESS_KEY_MASK
    text = _text(report, df)

    # Domain names are per process: (domainId, process) -> name.
    dom = etype == DOMAIN_CREATE
    domains = {
        (int(d), int(p)): str(t) for d, p, t in zip(df["domainId"][dom], df["pkey"][dom], text[dom]) if t is not None
    }
    cat = etype == CATEGORY_NAME
    categories = {
        (int(ci), int(d), int(p)): str(t)
        for ci, d, p, t in zip(df["category"][cat], df["domainId"][cat], df["pkey"][cat], text[cat])
        if t is not None
    }
    thr = etype == THREAD_NAME
    thread_names = {int(t): str(n) for t, n in zip(df["tid"][thr], text[thr]) if n is not None}

    used = np.isin(etype, list(KINDS))
    ev = df[used].copy()
    ev["name"] = text[used]
    ev["kind"] = pd.Series(etype[used]).map(KINDS).to_numpy()
    pairs = pd.MultiIndex.from_arrays([ev["domainId"], ev["pkey"]])
    ev["domain"] = [domains.get((d, p), "" if d == 0 else f"domain {d}") for d, p in pairs]
    nccl_by_name = _nccl_by_name(ev, domains)
    ev["category_name"] = [
        categories.get((ci, d, p)) if ci else None for ci, d, p in zip(ev["category"], ev["domainId"], ev["pkey"])
    ]
    json = ev["jsonText"].to_numpy(dtype=object).copy()
    jmiss = pd.isna(json) & ev["jsonTextId"].notna().to_numpy()
    if jmiss.any():
        json[jmiss] = report.lookup(ev["jsonTextId"][jmiss])
    ev["json"] = json
    # "Unused" NVTX rows: domain/category/thread naming is metadata, the rest is not translated.
    other = int((~used & ~dom & ~cat & ~thr).sum())
    domain = ev["domain"].to_numpy(object)
    mark = ev["kind"].to_numpy(object) == "mark"
    in_mpi, in_nccl = domain == MPI_DOMAIN, domain == NCCL_DOMAIN
    classes = {
        "names": int((dom | cat | thr).sum()),
        "ranges": int((~in_mpi & ~in_nccl).sum()) + sum(type_drops.values()),
        "nccl": int(in_nccl.sum()),
        "mpi": int((in_mpi & ~mark).sum()),
        "mpi_marks": int((in_mpi & mark).sum()),
        "other": other,
    }
    out = NvtxRows(
        events=ev,
        thread_names=thread_names,
        classes=classes,
        nccl_by_name=nccl_by_name,
        type_drops=type_drops,
        max_time=_max_time(df),
    )
    report.cache["nvtx"] = out
    return out


def _nccl_by_name(ev: pd.DataFrame, domains: dict) -> int:
    """NCCL without its domain name: newer NCCL versions register their domain through the NVTX
    payload extension, and some exports have no domain-creation row for it, so its ranges
    (ncclSend, ncclGroupStart, ...) arrive in a domain without a name.  A non-default domain without
    a name whose every range and mark is named ``nccl*`` is the NCCL domain (``ev`` changed in
    place); returns the rows recognised so."""
    unnamed = np.array([(d, p) not in domains and d != 0 for d, p in zip(ev["domainId"], ev["pkey"])], bool)
    if not unnamed.any():
        return 0
    sub = ev[unnamed]
    nccl = sub["name"].map(lambda n: isinstance(n, str) and n.startswith("nccl")).to_numpy(bool)
    whole = pd.Series(nccl).groupby([sub["domainId"].to_numpy(), sub["pkey"].to_numpy()]).transform("all")
    hit = np.flatnonzero(unnamed)[whole.to_numpy(bool)]
    if len(hit):
        ev.iloc[hit, ev.columns.get_loc("domain")] = NCCL_DOMAIN
    return len(hit)


def row_classes(report: Report) -> dict[str, int]:
    """NVTX_EVENTS rows by class (``kinds.NVTX_CLASS_KINDS`` / ``NVTX_CLASS_REASONS``): names, ranges
    (and marks) of the other domains, NCCL, MPI (read by the MPI reader whether the report's MPI calls come
    from the domain or from the MPI_* tables: nsys 2023.4 puts other threads' calls there), MPI marks,
    other event types."""
    nv = load_nvtx(report)
    if nv is None:
        return {}
    return {c: n for c, n in nv.classes.items() if n}


def _max_time(df: pd.DataFrame) -> int:
    times = pd.concat([pd.to_numeric(df["start"], errors="coerce"), pd.to_numeric(df["end"], errors="coerce")])
    return int(times.max()) if times.notna().any() else 0


def _ranges(report: Report, select) -> ReadResult | None:
    nv = load_nvtx(report)
    if nv is None:
        return None
    ev = nv.events
    ev = ev[select(ev)]
    res = ReadResult(table=ev, source_rows=len(ev))
    marks = ev["kind"].to_numpy() == "mark"
    ranges = interval_frame(ev[~marks], res, max_time=nv.max_time)
    mk = ev[marks].copy()
    mk["start"] = int64(mk["start"])
    mk["end"] = mk["start"]
    df = pd.concat([ranges, mk], ignore_index=True)
    df["name"] = df["name"].where(df["name"].notna(), "<unnamed>")
    pp = (df["kind"] == "pushpop").to_numpy()
    depth = np.zeros(len(df), dtype=np.int64)
    if pp.any():
        sub = df[pp]
        group = pd.factorize(pd.MultiIndex.from_arrays([sub["tid"], sub["domain"]]))[0]
        depth[pp] = nesting_depth(
            group.astype(np.int64), sub["start"].to_numpy(np.int64), sub["end"].to_numpy(np.int64)
        )
    df["depth"] = depth
    res.table = df[
        [
            "start",
            "end",
            "tid",
            "kind",
            "domain",
            "domainId",
            "name",
            "category",
            "category_name",
            "depth",
            "json",
            "binaryData",
        ]
    ].reset_index(drop=True)
    return res


def read_nvtx(report: Report) -> ReadResult | None:
    res = _ranges(report, lambda ev: ~ev["domain"].isin([MPI_DOMAIN, NCCL_DOMAIN]).to_numpy())
    nv = load_nvtx(report)  # (cached: read by _ranges)
    if res is not None and nv is not None:
        for reason, n in nv.type_drops.items():
            res.source_rows += n
            res.drop(reason, n)
    return res


def read_nccl_ranges(report: Report) -> ReadResult | None:
    return _ranges(report, lambda ev: (ev["domain"] == NCCL_DOMAIN).to_numpy())


def read_mpi_domain(report: Report) -> ReadResult | None:
    """MPI calls as the NVTX domain "MPI" (nsys 2022.x exports, schema <= 3.0.0)."""
    return _ranges(report, lambda ev: ((ev["domain"] == MPI_DOMAIN) & (ev["kind"] != "mark")).to_numpy())


READER = Reader((TABLE,), read_nvtx)

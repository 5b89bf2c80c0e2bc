"""MPI calls: the dedicated MPI_* tables (newer exports) or the NVTX domain "MPI" (2022.x).

Normalised columns: start, end, tid, name (e.g. ``MPI_Send``), peer (remote or
root world rank, -1 = none), size (bytes sent), recv_size, tag (-1 = none),
comm (communicator handle, 0 = unknown), source ('tables' | 'nvtx').
Wait/Test rows that the export repeats once per request are merged into one call;
MPI_Sendrecv split into a send row and a receive row is one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys2prv.core.extrae_mpi import SENDRECV_CALLS
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    Reader,
    ReadResult,
    host_rows,
    int64,
    text_names,
    to_int64,
)
from nsys2prv.nsys.readers.nvtx import read_mpi_domain

TABLES = {  # table -> normalised column -> export column
    "MPI_P2P_EVENTS": {"peer": "remoteRank", "size": "size", "tag": "tag", "comm": "commHandle"},
    "MPI_COLLECTIVES_EVENTS": {"peer": "rootRank", "size": "size", "recv_size": "recvSize", "comm": "commHandle"},
    "MPI_START_WAIT_EVENTS": {},
    "MPI_OTHER_EVENTS": {},
}
EXTRA = ("peer", "size", "recv_size", "tag", "comm")
_DEFAULTS = {"peer": -1, "size": 0, "recv_size": 0, "tag": -1, "comm": 0}
COLUMNS = ["start", "end", "tid", "name", *EXTRA, "source"]


def _read_tables(report: Report) -> ReadResult | None:
    frames = []
    for table, cols in TABLES.items():
        if not report.has(table, "start", "end", "globalTid", "textId"):
            continue
        sel = ", ".join(report.col_or_null(table, src, dst) for dst, src in cols.items())
        df = report.query(f"SELECT start, end, globalTid AS tid, textId{', ' + sel if sel else ''} FROM {table}")
        df["table"] = table
        frames.append(df)
    got = host_rows(frames)
    if got is None:
        return None
    df, res = got
    df["name"] = text_names(report, df["textId"])
    for c in EXTRA:
        to_int64(df, c, fill=_DEFAULTS[c])
    # One call may be several rows (per request in START_WAIT, send+recv halves of Sendrecv).  The halves
    # of a split Sendrecv share their start; nsys 2023.4 ends the send half at its start: the call ends
    # with its last half.
    both = df["name"].astype(str).isin(SENDRECV_CALLS).to_numpy()
    if both.any():
        ends = df.loc[both].groupby(["tid", "start", "name"], sort=False, observed=True)["end"].transform("max")
        df.loc[both, "end"] = ends.to_numpy()
    dup = df.duplicated(["tid", "start", "end", "name"], keep="first").to_numpy()
    res.drop("repeated row of one call (per-request Wait/Test, split Sendrecv): merged", int(dup.sum()))
    df = df[~dup]
    df["source"] = "tables"
    res.table = df[COLUMNS].reset_index(drop=True)
    return res


def _nvtx_calls(res: ReadResult) -> pd.DataFrame:
    """NVTX domain "MPI" ranges as MPI call rows (no peer, size, tag or communicator)."""
    df = res.table
    out = pd.DataFrame({"start": df["start"], "end": df["end"], "tid": df["tid"], "name": df["name"]})
    for c in EXTRA:
        out[c] = _DEFAULTS[c]
    out["source"] = "nvtx"
    return out[COLUMNS]


def _with_nvtx_threads(res: ReadResult, nv: ReadResult | None) -> ReadResult:
    """nsys 2023.4 writes the MPI calls of a process's other threads (MPI_THREAD_MULTIPLE) into the NVTX
    domain "MPI", only the main thread's into the MPI_* tables: the ranges of threads the tables do not
    cover are the calls of those threads (calls only: no peer, tag or size, so no message); a range on a
    thread the tables cover is the same call recorded twice."""
    if nv is None or nv.table.empty:
        return res
    covered = nv.table["tid"].isin(np.unique(res.table["tid"].to_numpy(np.int64))).to_numpy()
    res.absorb(nv)
    res.drop('NVTX domain "MPI" range on a thread the MPI_* tables cover (the same call): not used', int(covered.sum()))
    extra = _nvtx_calls(ReadResult(table=nv.table[~covered]))
    if len(extra):
        res.note(
            'MPI call of a thread the MPI_* tables do not cover, from the NVTX domain "MPI" (no peers)', len(extra)
        )
        res.table = pd.concat([res.table, extra], ignore_index=True).sort_values("start", kind="stable")
        res.table = res.table.reset_index(drop=True)
    return res


def read(report: Report) -> ReadResult | None:
    res = _read_tables(report)
    if res is not None:
        return _with_nvtx_threads(res, read_mpi_domain(report))
    res = read_mpi_domain(report)
    if res is None:
        return None
    if res.table.empty and not report.has("MPI_RANKS", "rank"):
        return None  # NVTX without an MPI domain and no MPI table at all: MPI was not traced
    if res.table.empty:  # e.g. MPI_RANKS alone, no MPI calls: an empty table with the right columns
        res.table = pd.DataFrame({c: pd.Series(dtype=object if c in ("name", "source") else np.int64) for c in COLUMNS})
        return res
    res.table = _nvtx_calls(res)
    return res


READER = Reader((*TABLES, "MPI_RANKS", "NVTX_EVENTS"), read)


# -- raw point-to-point rows, for message matching (not a Reader: the calls are counted above) --------
P2P_COLUMNS = ["row", "start", "end", "tid", "name", "peer", "tag", "size", "request", "comm"]
WAIT_COLUMNS = ["start", "end", "tid", "name", "request"]
COMM_COLUMNS = ["rank", "time", "handle", "parent", "local_rank", "size", "group_root"]


@dataclass
class RawMpi:
    """One report's raw MPI rows for message matching and communicators (mpi.read_p2p)."""

    p2p: pd.DataFrame  # every MPI_P2P_EVENTS row, as exported (a split MPI_Sendrecv stays two rows); peer is
    # the rank in the call's communicator (comm: its handle)
    waits: pd.DataFrame  # MPI_START_WAIT_EVENTS: one row per request of MPI_Start*/Wait*/Test*
    comms: pd.DataFrame  # MPI_COMMUNICATORS: this rank's communicators as it created them


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c == "name" else np.int64) for c in columns})


def _communicators(report: Report) -> pd.DataFrame:
    """MPI_COMMUNICATORS (nsys 2023+): the world rank of the report, creation time, handle, parent handle
    (0: none, i.e. world), the rank's place in it and its size, the world rank of its local rank 0 (-1:
    not recorded)."""
    t = "MPI_COMMUNICATORS"
    if not report.has(t, "timestamp", "commHandle"):
        return _empty(COMM_COLUMNS)
    cols = {
        "rank": "rank",
        "parent": "parentHandle",
        "local_rank": "localRank",
        "size": "size",
        "group_root": "groupRoot",
    }
    sel = ", ".join(report.col_or_null(t, src, dst) for dst, src in cols.items())
    df = report.query(f"SELECT timestamp AS time, commHandle AS handle, {sel} FROM {t} ORDER BY timestamp, rowid")
    df = df[pd.to_numeric(df["handle"], errors="coerce").notna()]
    fills = {"rank": -1, "time": 0, "handle": 0, "parent": 0, "local_rank": -1, "size": -1, "group_root": -1}
    for c, fill in fills.items():
        to_int64(df, c, fill=fill)
    return df[COMM_COLUMNS].reset_index(drop=True)


def read_p2p(report: Report) -> RawMpi | None:
    """The report's raw point-to-point, request completion and communicator rows (None: no
    MPI_P2P_EVENTS with peers, i.e. nothing to match)."""
    t = "MPI_P2P_EVENTS"
    if not report.has(t, "start", "end", "globalTid", "textId", "remoteRank"):
        return None
    df = report.query(
        f"SELECT rowid AS row, start, end, globalTid AS tid, textId, remoteRank AS peer, "
        f"{report.col_or_null(t, 'tag')}, {report.col_or_null(t, 'size')}, "
        f"{report.col_or_null(t, 'requestHandle', 'request')}, {report.col_or_null(t, 'commHandle', 'comm')} "
        f"FROM {t} ORDER BY rowid"
    )
    df = df[pd.to_numeric(df["start"], errors="coerce").notna() & pd.to_numeric(df["end"], errors="coerce").notna()]
    df["name"] = text_names(report, df["textId"])
    for c, fill in (
        ("row", 0),
        ("start", 0),
        ("end", 0),
        ("tid", 0),
        ("peer", -1),
        ("tag", -1),
        ("size", 0),
        ("request", 0),
        ("comm", 0),
    ):
        to_int64(df, c, fill=fill)
    waits = _empty(WAIT_COLUMNS)
    w = "MPI_START_WAIT_EVENTS"
    if report.has(w, "start", "end", "globalTid", "requestHandle", "textId"):
        wq = report.query(f"SELECT start, end, globalTid AS tid, textId, requestHandle AS request FROM {w}")
        wq = wq.dropna(subset=["start", "end", "tid", "request"])
        waits = pd.DataFrame({c: int64(wq[c]) for c in WAIT_COLUMNS if c != "name"})
        waits["name"] = np.asarray(text_names(report, wq["textId"]), dtype=object)
        waits = waits[WAIT_COLUMNS]
    return RawMpi(df[P2P_COLUMNS].reset_index(drop=True), waits, _communicators(report))

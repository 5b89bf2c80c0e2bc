"""Synchronisation points: events that every rank (task) has, paired across ranks.

A sync point i gives every participating task r an entry e[r, i] and an exit
x[r, i] on that task's report timeline (call start/end, kernel start/end, range
start/end).  The k-th occurrence of a name on one task is paired with the k-th on
every other task, and only when every participating task has the same count of
that name: otherwise the name is used on a sub-communicator (or lost rows), and
pairing by position would pair different operations.

Columns carry two flags:
- ``estimate``: the exits are close to simultaneous on all ranks, so exit
  differences estimate the clock offsets;
- ``constrain``: no rank can leave before the last rank entered (a truly
  synchronising collective), so for tasks r, q: aligned x[r, i] >= aligned e[q, i].

MPI: Barrier, Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter(_block), Init,
Finalize.  Rooted collectives (Bcast, Reduce, Gather, Scatter) are not used: the
root may leave before the others arrive.  MPI_Init/MPI_Finalize are constraints
(they contain a PMIx fence) but their exits are poor estimates (tests/data/mpi4:
exits of MPI_Init spread over 16 ms, of MPI_Finalize over 3 ms, against 20-150 us
for MPI_Allreduce), so they estimate only when nothing else does.
NCCL: the kernels whose ``nccl`` column (``core.classify.is_nccl``, applied by the kernels reader) is
set; only all-to-all kinds (AllReduce, AllGather, ReduceScatter, AllToAll) are constraints (a Broadcast root can finish
first).  marker:NAME: the user asserts the range is a sync point: both flags (a mark, with no duration,
only estimates).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.core.extrae_mpi import ALL_TO_ALL_COLLECTIVES
from nsys2prv.core.names import per_name
from nsys2prv.model.communicators import WORLD, Communicators
from nsys2prv.model.resources import Model
from nsys2prv.nsys.ids import pid_of

MPI_SYNC = ALL_TO_ALL_COLLECTIVES
MPI_BOUNDS = ("MPI_Init", "MPI_Finalize")  # constraints; estimates only as a last resort
MPI_ALIASES = {"MPI_Init_thread": "MPI_Init"}
NCCL_ALL_TO_ALL = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.IGNORECASE)


@dataclass
class SyncPoints:
    tasks: np.ndarray  # (R,) task index (model.tasks) of each row
    reports: np.ndarray  # (R,) report index of each row
    names: list[str]  # (N,) "name#k" per column
    entry: np.ndarray  # (R, N) int64 report-local times
    exit: np.ndarray  # (R, N) int64
    estimate: np.ndarray  # (N,) bool
    constrain: np.ndarray  # (N,) bool
    sources: list[str] = field(default_factory=list)  # which methods contributed columns

    @property
    def n(self) -> int:
        return self.entry.shape[1]

    @classmethod
    def empty(cls) -> "SyncPoints":
        z = np.zeros((0, 0), np.int64)
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), [], z, z, np.zeros(0, bool), np.zeros(0, bool))


def _rows(frames: list[pd.DataFrame], model: Model) -> pd.DataFrame:
    """Concatenate per-report frames (report, pid, name, start, end, estimate, constrain) and add task."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["task", "report", "name", "start", "end", "estimate", "constrain"])
    df = pd.concat(frames, ignore_index=True)
    report, pid = df["report"].to_numpy(np.int64), df["pid"].to_numpy(np.int64)
    task = np.full(len(df), -1, np.int64)
    for r in np.unique(report):  # (the model's table of its processes: the trace's task of each)
        sel = report == r
        task[sel] = model.tasks_of(int(r), pid[sel])
    df = df[task >= 0].copy()
    df["task"] = task[task >= 0]
    return df


def _frame(report: int, df: pd.DataFrame, id_col: str, keep: np.ndarray, name, estimate, constrain) -> pd.DataFrame:
    """The sync rows of one report: the ``keep`` rows of ``df`` with their process and labels."""
    return pd.DataFrame(
        {
            "report": report,
            "pid": pid_of(df[id_col].to_numpy(np.int64)[keep]),
            "name": name,
            "start": df["start"].to_numpy(np.int64)[keep],
            "end": df["end"].to_numpy(np.int64)[keep],
            "estimate": estimate,
            "constrain": constrain,
        }
    )


def mpi_rows(tables: Sequence[dict], model: Model, comms: Communicators | None = None) -> pd.DataFrame:
    """The synchronising and bounding MPI calls; a collective on a communicator other than the world
    (``comms``) is named with it (``mpi:MPI_Allreduce@comm2``: its members synchronise, no one else)."""
    frames = []
    for r, tabs in enumerate(tables):
        df = tabs.get("mpi")
        if df is None or df.empty:
            continue
        name = df["name"].astype(str).replace(MPI_ALIASES)
        keep = name.isin(MPI_SYNC + MPI_BOUNDS).to_numpy()
        if not keep.any():
            continue
        sync = name[keep].isin(MPI_SYNC).to_numpy()
        label = "mpi:" + name[keep].to_numpy(object)
        if comms is not None and "comm" in df:
            ids = comms.of_calls(r, df["comm"].to_numpy(np.int64)[keep], df["start"].to_numpy(np.int64)[keep])
            label = np.where(ids == WORLD, label, label + np.char.add("@comm", ids.astype(str)).astype(object))
        frames.append(_frame(r, df, "tid", keep, label, sync, True))
    return _rows(frames, model)


def mpi_scopes(rows: pd.DataFrame, comms: Communicators | None) -> dict[str, tuple[int, ...]]:
    """name -> the tasks of its communicator, for the sync rows of communicators other than the world
    (those not known complete -- a member's report missing -- are left out: no task is expected)."""
    if comms is None or rows.empty:
        return {}
    out = {}
    for name in rows["name"].unique():
        if "@comm" in name:
            cid = int(name.rsplit("@comm", 1)[1])
            out[name] = comms.members.get(cid, ()) if comms.complete.get(cid, False) else ()
    return out


def nccl_rows(tables: Sequence[dict], model: Model) -> pd.DataFrame:
    """The NCCL kernels of ``sync_tables``' per-report tables (their "kernels" rows are NCCL kernels only)."""
    frames = []
    for r, tabs in enumerate(tables):
        df = tabs.get("kernels")
        if df is None or df.empty:
            continue
        name = df["name"].astype(str)
        frames.append(
            _frame(
                r,
                df,
                "gpid",
                np.ones(len(df), bool),  # (every row: the kernels are NCCL kernels only)
                "nccl:" + name.to_numpy(object),
                True,
                per_name(name, lambda n: NCCL_ALL_TO_ALL.search(n) is not None),
            )
        )
    return _rows(frames, model)


def marker_rows(tables: Sequence[dict], model: Model, marker: str) -> pd.DataFrame:
    frames = []
    for r, tabs in enumerate(tables):
        df = tabs.get("nvtx")
        if df is None or df.empty:
            continue
        name = df["name"].astype(str)
        qualified = df["domain"].astype(str) + ":" + name
        keep = ((name == marker) | (qualified == marker)).to_numpy()
        if not keep.any():
            continue
        # a range: a sync point, both flags; a mark (no duration) cannot bound entries and exits: estimate only
        point = (df["start"].to_numpy(np.int64) == df["end"].to_numpy(np.int64))[keep]
        frames.append(_frame(r, df, "tid", keep, "marker:" + marker, True, ~point))
    return _rows(frames, model)


def sync_tables(tables: dict, marker: str | None = None) -> dict:
    """The rows of one report's tables that the sync-point finders above can use (MPI calls that
    synchronise or bound, NCCL kernels, the marker range): what a worker hands to the global
    alignment stage instead of the whole tables."""
    out = {}
    df = tables.get("mpi")
    if df is not None and len(df):
        name = df["name"].astype(str).replace(MPI_ALIASES)
        cols = ["start", "end", "tid", "name"] + (["comm"] if "comm" in df else [])
        out["mpi"] = df.loc[name.isin(MPI_SYNC + MPI_BOUNDS).to_numpy(), cols]
    df = tables.get("kernels")
    if df is not None and len(df):
        out["kernels"] = df.loc[df["nccl"].to_numpy(bool), ["start", "end", "gpid", "name"]]
    df = tables.get("nvtx")
    if marker and df is not None and len(df):
        name = df["name"].astype(str)
        keep = ((name == marker) | (df["domain"].astype(str) + ":" + name == marker)).to_numpy()
        out["nvtx"] = df.loc[keep, ["start", "end", "tid", "name", "domain"]]
    return {k: v.reset_index(drop=True) for k, v in out.items()}


ABSENT_ENTRY = -(1 << 60)  # a task outside a sync point's communicator: never the last to enter ...
ABSENT_EXIT = 1 << 60  # ... nor the first to leave (so it constrains nothing)


def build(rows: pd.DataFrame, sources: list[str], scopes: dict[str, tuple[int, ...]] | None = None) -> SyncPoints:
    """Pair the k-th occurrence of every name across the tasks that have it: every task with sync rows,
    or the tasks of its communicator for the names in ``scopes`` (name -> tasks).  A scoped point only
    constrains (its members' exits are not simultaneous with the other tasks'); the tasks outside it hold
    ABSENT_ENTRY/ABSENT_EXIT."""
    scopes = scopes or {}
    if rows.empty or rows["task"].nunique() < 2:
        return SyncPoints.empty()
    counts = rows.groupby(["task", "name"]).size().unstack(fill_value=0)
    tasks = counts.index.to_numpy(np.int64)
    need = pd.DataFrame(True, index=counts.index, columns=counts.columns)
    for name in counts.columns.intersection(list(scopes)):
        need[name] = counts.index.isin(scopes[name])
    have = counts.where(need)  # (NaN outside a name's scope)
    valid = counts.columns[
        (have.min(axis=0) == have.max(axis=0))
        & (have.min(axis=0) > 0)
        & (need.sum(axis=0) >= 2)
        & (counts.where(~need).fillna(0).max(axis=0) == 0)
    ]
    if len(valid) == 0:
        return SyncPoints.empty()
    per_name = have[valid].max(axis=0).astype(np.int64)
    col0 = pd.Series(np.concatenate([[0], np.cumsum(per_name.to_numpy())[:-1]]), index=valid)
    sub = rows[rows["name"].isin(valid)].sort_values(["task", "name", "start", "end"], kind="stable")
    k = sub.groupby(["task", "name"], sort=False).cumcount().to_numpy()
    col = col0.reindex(sub["name"]).to_numpy() + k
    row = np.searchsorted(tasks, sub["task"].to_numpy(np.int64))
    n = int(per_name.sum())
    entry = np.full((len(tasks), n), ABSENT_ENTRY, np.int64)
    exit_ = np.full((len(tasks), n), ABSENT_EXIT, np.int64)
    entry[row, col] = sub["start"].to_numpy(np.int64)
    exit_[row, col] = sub["end"].to_numpy(np.int64)
    flags = rows.drop_duplicates("name").set_index("name")
    scoped = np.repeat(~need[valid].all(axis=0).to_numpy(bool), per_name.to_numpy())
    est = np.repeat(flags.loc[valid, "estimate"].to_numpy(bool), per_name.to_numpy()) & ~scoped
    con = np.repeat(flags.loc[valid, "constrain"].to_numpy(bool), per_name.to_numpy())
    if not est.any():  # e.g. only MPI_Init/MPI_Finalize: their exits are all there is
        est = con & ~scoped
    names = [f"{nm}#{i}" for nm, c in zip(valid, per_name) for i in range(int(c))]
    reports = rows.drop_duplicates("task").set_index("task").loc[tasks, "report"].to_numpy(np.int64)
    return SyncPoints(tasks, reports, names, entry, exit_, est, con, sources)

"""MPI communicators across ranks, from each rank's MPI_COMMUNICATORS (nsys 2023+).

Handles are process-local, and nsys 2023.4 records no member list (``members`` is NULL): a
communicator is recognised on every rank by how it was made.  Its parent (the communicator of the
MPI_Comm_split/dup call: parentHandle, 0 for MPI_COMM_WORLD), the creation's number among the
rank's creations from that parent (creation is collective over the parent, so the n-th creation is
the same call on every member of the parent), and, where recorded, the world rank of its local rank
0 (groupRoot: the halves of one split differ there) and its size.  The ranks that hold the same key
are its members; a communicator whose recorded size is not its member count (a rank's report
missing) is kept but marked incomplete.

Ids: 1 is MPI_COMM_WORLD (every task; also every call whose handle the report does not list, and
every call of an export without the table: nsys 2022.x's NVTX form), 2, 3, ... the others in order
of their first creation.  These are the communicator ids of the trace (Extrae's 50100004 and the
.prv header's ``c:`` lines) and the scopes of the alignment's synchronising collectives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.model.resources import Model
from nsys2prv.nsys.readers.mpi import RawMpi

WORLD = 1


@dataclass
class Communicators:
    members: dict[int, tuple[int, ...]]  # id -> its tasks (model.tasks indices), in rank order
    complete: dict[int, bool]  # id -> every member's report lists it (its recorded size is met)
    world_rank: dict[int, dict[int, int]] = field(default_factory=dict)  # id -> {rank in it: world rank}
    _handles: dict[int, pd.DataFrame] = field(default_factory=dict)  # report -> handle, time, id

    def of_calls(self, report: int, handle: np.ndarray, time: np.ndarray) -> np.ndarray:
        """The communicator id of calls of ``report`` on ``handle`` at ``time`` (the handle's latest
        creation before the call: handles of freed communicators are reused); WORLD where unknown."""
        out = np.full(len(handle), WORLD, np.int64)
        known = self._handles.get(report)
        if known is None or not len(handle):
            return out
        calls = pd.DataFrame(
            {"handle": np.asarray(handle, np.int64), "t": np.asarray(time, np.int64), "i": np.arange(len(handle))}
        )
        m = pd.merge_asof(calls.sort_values("t"), known, on="t", by="handle", direction="backward")
        ok = m["id"].notna().to_numpy()
        out[m["i"].to_numpy()[ok]] = m["id"].to_numpy()[ok].astype(np.int64)
        return out

    def to_world(self, ids: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """Ranks in the communicators ``ids`` (of_calls) as world ranks; negative ranks (wildcards,
        MPI_PROC_NULL) and ranks of communicators without a known numbering stay as they are."""
        rank = np.asarray(rank, np.int64).copy()
        for cid in np.unique(ids):
            table = self.world_rank.get(int(cid))
            if cid == WORLD or not table:
                continue
            sel = (ids == cid) & (rank >= 0)
            rank[sel] = [table.get(int(x), int(x)) for x in rank[sel]]
        return rank

    def resolve(self, report: int, calls: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(global communicator id, peer or root as a world rank) of each of ``report``'s MPI call rows (the
        mpi table: comm, start, peer)."""
        if "comm" not in calls:
            return np.full(len(calls), WORLD, np.int64), calls["peer"].to_numpy(np.int64)
        ids = self.of_calls(report, calls["comm"].to_numpy(np.int64), calls["start"].to_numpy(np.int64))
        return ids, self.to_world(ids, calls["peer"].to_numpy())


def _keys(comms: pd.DataFrame) -> list[tuple]:
    """Each row's key (module doc), rows in creation order."""
    keys: list[tuple] = []
    key_of_handle: dict[int, tuple] = {}
    made: dict[tuple, int] = {}
    for handle, parent, size, root in zip(comms["handle"], comms["parent"], comms["size"], comms["group_root"]):
        if parent == 0:
            key: tuple = ("world",)
        else:
            p = key_of_handle.get(int(parent), ("unknown", int(parent)))
            n = made.get(p, 0)
            made[p] = n + 1
            key = (p, n, int(root), int(size))
        key_of_handle[int(handle)] = key
        keys.append(key)
    return keys


def build_communicators(raws: Sequence[RawMpi | None], model: Model) -> Communicators:
    """The run's communicators from every report's MPI_COMMUNICATORS rows (none: world only).  Ids and
    world ranks come from the rows alone; members are ``model``'s tasks (the trace's)."""
    task_of_rank = {t.rank: i for i, t in enumerate(model.tasks) if t.rank is not None}
    ids: dict[tuple, int] = {("world",): WORLD}
    members: dict[int, list[int]] = {WORLD: list(range(len(model.tasks)))}
    sizes: dict[int, int] = {}
    local: dict[int, dict[int, int]] = {}  # id -> {rank in it: world rank}, where recorded
    parent_of: dict[int, int] = {}
    handles: dict[int, pd.DataFrame] = {}
    for r, raw in enumerate(raws):
        if raw is None or raw.comms.empty:
            continue
        comms = raw.comms.sort_values("time", kind="stable")
        row_ids = []
        for key, rank, size, lr in zip(_keys(comms), comms["rank"], comms["size"], comms["local_rank"]):
            cid = ids.setdefault(key, len(ids) + 1)
            if cid != WORLD:
                parent_of[cid] = ids.get(key[0], WORLD)  # (key[0]: the parent's key)
                if rank in task_of_rank:
                    members.setdefault(cid, []).append(task_of_rank[int(rank)])
                if size > 0:
                    sizes[cid] = int(size)
                if lr >= 0 and rank >= 0:
                    local.setdefault(cid, {})[int(lr)] = int(rank)
            row_ids.append(cid)
        handles[r] = pd.DataFrame(
            {"t": comms["time"].to_numpy(np.int64), "handle": comms["handle"].to_numpy(np.int64), "id": row_ids}
        ).sort_values("t")
    rank = lambda t: (model.tasks[t].rank is None, model.tasks[t].rank or 0, t)  # noqa: E731
    out = {c: tuple(sorted(set(m), key=rank)) for c, m in members.items()}
    for cid in ids.values():
        out.setdefault(cid, ())
    complete = {c: sizes.get(c, len(m)) == len(m) and (c == WORLD or len(m) > 0) for c, m in out.items()}
    # a communicator whose ranks nsys did not record (MPI_Comm_dup: only its parent) numbers its members
    # as its parent does
    for cid in sorted(out):
        if cid != WORLD and cid not in local and parent_of.get(cid, WORLD) in local:
            local[cid] = local[parent_of[cid]]
    return Communicators(out, complete, local, handles)

"""The communicators of the MPI collectives, as the trace states them (Extrae's and Dimemas's form).

Every collective call record carries a *global* communicator id (``MPI_GLOBAL_OP_COMM``, 50100004)
and the .prv header declares each id with its member tasks (``c:1:ID:N:task...:task``): prv2dim
replays a collective on exactly those members.  Id 1 is MPI_COMM_WORLD (every task).

The ids are the run's communicators (``model/communicators.py``, from the reports'
MPI_COMMUNICATORS; exports without the table: every call on MPI_COMM_WORLD).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.model.communicators import WORLD, Communicators
from nsys2prv.model.resources import Model
from nsys2prv.translate.context import Context


def global_comms(calls: pd.DataFrame, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Per MPI call row of the context's report (the mpi table): its global communicator id and its peer
    (a collective's root) as a world rank (nsys records the rank in the call's communicator)."""
    if ctx.comms is None:
        return np.full(len(calls), WORLD, np.int64), calls["peer"].to_numpy(np.int64)
    return ctx.comms.resolve(ctx.report, calls)


def communicator_members(model: Model, comms: Communicators | None = None) -> dict[int, tuple[int, ...]]:
    """Global communicator id -> its member tasks (1-based trace task numbers), ids ascending.  The
    world: the tasks that are MPI ranks (every task where none is known to be one); the others: their
    members that the trace has."""
    ranked = tuple(i + 1 for i, t in enumerate(model.tasks) if t.rank is not None)
    out = {WORLD: ranked or tuple(range(1, len(model.tasks) + 1))}
    for cid, tasks in sorted((comms.members if comms is not None else {}).items()):
        if cid != WORLD and tasks:
            out[cid] = tuple(t + 1 for t in tasks)
    return out

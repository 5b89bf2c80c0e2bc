"""The communicators of the MPI collectives, as the trace states them (Extrae's and Dimemas's form).

Every collective call record carries a *global* communicator id (``MPI_GLOBAL_OP_COMM``, 50100004)
and the .prv header declares each id with its member tasks (``c:1:ID:N:task...:task``): prv2dim
replays a collective on exactly those members.  Id 1 is MPI_COMM_WORLD (every task).

For now every collective is taken to be on MPI_COMM_WORLD: ``collective_comm_ids`` and
``communicator_members`` are the one place that says so (a communicator model resolving the
reports' handles from MPI_COMMUNICATORS to global ids replaces these two functions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.model.resources import Model

WORLD = 1  # the communicator id of MPI_COMM_WORLD, as Extrae numbers it


def collective_comm_ids(calls: pd.DataFrame, model: Model, report: int) -> np.ndarray:
    """Per MPI call row of report ``report`` (the mpi table), its global communicator id (int64):
    every call on MPI_COMM_WORLD."""
    return np.full(len(calls), WORLD, np.int64)


def communicator_members(model: Model) -> dict[int, tuple[int, ...]]:
    """Global communicator id -> its member tasks (1-based trace task numbers), ids ascending.  The
    world: the tasks that are MPI ranks (every task where none is known to be one)."""
    ranked = tuple(i + 1 for i, t in enumerate(model.tasks) if t.rank is not None)
    return {WORLD: ranked or tuple(range(1, len(model.tasks) + 1))}

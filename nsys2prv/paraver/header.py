"""The .prv header, exactly in Paraver's grammar:
``#Paraver (dd/mm/yyyy at hh:mm):END_ns:N(c1,...,cN):1:T(th1:node1,...)[,1]``, then, for a trace with MPI
calls, the communicator line of MPI_COMM_WORLD as Extrae writes it (``c:1:1:T:1:2:...:T``): Dimemas's
prv2dim needs it to replay the collectives."""

from __future__ import annotations

import datetime as dt

from nsys2prv.model.resources import Model

WORLD = 1  # the communicator id of MPI_COMM_WORLD, as Extrae numbers it


def render_header(model: Model, end_ns: int, epoch_ns: int | None, mpi_world: bool = False) -> str:
    when = dt.datetime.fromtimestamp((epoch_ns or 0) / 1e9, tz=dt.timezone.utc)
    date = when.strftime("%d/%m/%Y at %H:%M")
    cpus = ",".join(str(c) for c in model.cpus_per_node())
    tasks = ",".join(f"{len(t.threads)}:{t.node + 1}" for t in model.tasks)
    head = f"#Paraver ({date}):{int(end_ns)}_ns:{len(model.nodes)}({cpus}):1:{len(model.tasks)}({tasks})"
    if not mpi_world:
        return head + "\n"
    n = len(model.tasks)
    return f"{head},1\nc:1:{WORLD}:{n}:" + ":".join(str(t) for t in range(1, n + 1)) + "\n"

"""The .prv header, exactly in Paraver's grammar:
``#Paraver (dd/mm/yyyy at hh:mm):END_ns:N(c1,...,cN):1:T(th1:node1,...)[,NCOMM]``, then, for a trace with
MPI calls, one communicator line per communicator its collectives name, as Extrae writes them
(``c:1:ID:SIZE:task:...:task``, MPI_COMM_WORLD = id 1 with every task): Dimemas's prv2dim replays each
collective on the members of its communicator (``translate/communicators.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from nsys2prv.model.resources import Model


def render_header(
    model: Model, end_ns: int, epoch_ns: int | None, communicators: Mapping[int, Sequence[int]] | None = None
) -> str:
    when = dt.datetime.fromtimestamp((epoch_ns or 0) / 1e9, tz=dt.timezone.utc)
    date = when.strftime("%d/%m/%Y at %H:%M")
    cpus = ",".join(str(c) for c in model.cpus_per_node())
    tasks = ",".join(f"{len(t.threads)}:{t.node + 1}" for t in model.tasks)
    head = f"#Paraver ({date}):{int(end_ns)}_ns:{len(model.nodes)}({cpus}):1:{len(model.tasks)}({tasks})"
    if not communicators:
        return head + "\n"
    lines = [f"{head},{len(communicators)}"]
    for cid, members in sorted(communicators.items()):
        lines.append(f"c:1:{cid}:{len(members)}:" + ":".join(str(t) for t in members))
    return "\n".join(lines) + "\n"

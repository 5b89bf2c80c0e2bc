"""The .prv header, exactly in Paraver's grammar:
``#Paraver (dd/mm/yyyy at hh:mm):END_ns:N(c1,...,cN):1:T(th1:node1,...)``."""

from __future__ import annotations

import datetime as dt

from nsys2prv.model.resources import Model


def render_header(model: Model, end_ns: int, epoch_ns: int | None) -> str:
    when = dt.datetime.fromtimestamp((epoch_ns or 0) / 1e9, tz=dt.timezone.utc)
    date = when.strftime("%d/%m/%Y at %H:%M")
    cpus = ",".join(str(c) for c in model.cpus_per_node())
    tasks = ",".join(f"{len(t.threads)}:{t.node + 1}" for t in model.tasks)
    return f"#Paraver ({date}):{int(end_ns)}_ns:{len(model.nodes)}({cpus}):1:{len(model.tasks)}({tasks})\n"

"""The .row: names of CPUs, nodes, the application, tasks and threads."""

from __future__ import annotations

from nsys2prv.model.resources import Model
from nsys2prv.paraver.pcf import clean_label


def render_row(model: Model, app_name: str = "nsys2prv") -> str:
    by_cpu = sorted((t.cpu, t.name) for t in model.threads)
    cpus = [f"CPU {cpu} ({clean_label(name)})" for cpu, name in by_cpu]
    blocks = [
        ("CPU", cpus),
        ("NODE", [clean_label(n) for n in model.nodes]),
        ("APPL", [clean_label(app_name)]),
        ("TASK", [clean_label(f"{t.label} ({t.host}, pid {t.pid})") for t in model.tasks]),
        ("THREAD", [clean_label(model.threads[g].name) for t in model.tasks for g in t.threads]),
    ]
    return "\n".join(f"LEVEL {lvl} SIZE {len(names)}\n" + "\n".join(names) + "\n" for lvl, names in blocks)

"""The .row: names of CPUs, nodes, the application, tasks and threads; after the blocks, comment lines:
the host and GPU id of each GPU number when they differ (``gpu_lines``: a run over several hosts), and
whether the thread states follow the scheduler (``scheduler_rule``).

Paraver's reader (paraver-kernel utils/traceparser/rowfileparser.cpp, RowFileParser) skips a line
starting with '#' outside a block; BasicAnalysis reads the first line (modelfactors.py: the CPU
count), so the comment goes last."""

from __future__ import annotations

from nsys2prv.core import registry as R
from nsys2prv.model.resources import Model
from nsys2prv.paraver.pcf import clean_label


def scheduler_rule() -> str:
    """The .row's comment line on thread states from the scheduler; its states, ids and labels, are the
    registry's (``registry.OFF_CPU_STATE`` off a CPU)."""
    off = R.OFF_CPU_STATE
    return (
        f"# nsys2prv: CPU thread states from the scheduler (SCHED_EVENTS): {R.STATES[R.RUNNING]} only while "
        f"on a CPU, {R.STATES[off]} ({off}) off it unless a call's own state covers the time; CPU threads "
        f"without scheduling data: {R.STATES[R.RUNNING]} from their first to their last event"
    )


def gpu_lines(model: Model) -> list[str]:
    """When the run's GPU numbers (``CUDA-D<n>``, ``Metrics GPU<n>``) are not the hosts' GPU ids (a run
    over several hosts), one comment line per GPU: its number, host and id (OUT.pop.json's
    ``host:GPU<id>``)."""
    numbers = model.gpu_numbers
    if all(n == g for (_, g), n in numbers.items()):
        return []
    by_number = sorted(numbers.items(), key=lambda item: item[1])
    return [f"# nsys2prv: GPU {n} = {clean_label(h)} GPU {g}" for (h, g), n in by_number]


def render_row(model: Model, app_name: str = "nsys2prv", scheduler: bool = False) -> str:
    """``scheduler``: the trace's states follow the scheduler (its .pcf has registry.EXECUTING_CPU)."""
    by_cpu = sorted((t.cpu, t.name) for t in model.threads)
    cpus = [f"CPU {cpu} ({clean_label(name)})" for cpu, name in by_cpu]
    blocks = [
        ("CPU", cpus),
        ("NODE", [clean_label(n) for n in model.nodes]),
        ("APPL", [clean_label(app_name)]),
        ("TASK", [clean_label(f"{t.label} ({t.host}, pid {t.pid})") for t in model.tasks]),
        ("THREAD", [clean_label(model.threads[g].name) for t in model.tasks for g in t.threads]),
    ]
    text = "\n".join(f"LEVEL {lvl} SIZE {len(names)}\n" + "\n".join(names) + "\n" for lvl, names in blocks)
    comments = gpu_lines(model) + ([scheduler_rule()] if scheduler else [])
    return text + "".join("\n" + line for line in comments) + ("\n" if comments else "")

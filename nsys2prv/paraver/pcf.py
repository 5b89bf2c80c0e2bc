"""The .pcf: Extrae's standard option/semantic/state/gradient blocks, then one block
per event type (types of one group share a VALUES list)."""

from __future__ import annotations

import re

from nsys2prv.core import extrae_mpi
from nsys2prv.core import registry as R
from nsys2prv.core.registry import EventType
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.paraver.views_shipped import POP_HOST_VIEWS, VIEWS

# The host POP views, whose numbers must equal OUT.pop.json whatever the trace holds.  Paraver drops from a
# window's filter the event types the .pcf does not declare, and a filter left empty lets every event
# through: on a trace without CUDA API calls, host_useful.cfg's "in a CUDA API call" window would be 1
# after any event (measured with paramedir: mpi4's useful time 69,681,303 ns short).  So their types
# are declared in every .pcf, even with no record of them.
POP_HOST_TYPES = frozenset(t for v in VIEWS if v.path in POP_HOST_VIEWS for w in v.windows for t in w.types)

# Static types whose .pcf lists only the values the trace uses, as Extrae's .pcf lists only the MPI
# calls a trace made: the MPI call types (220 values; a histogram of them opened 1600 px wide).
LISTED_AS_USED = frozenset(R.MPI_TYPES)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
PCF_MAX = 2**31 - 1


def clean_label(text: str) -> str:
    """One line, no control characters, never empty."""
    text = _CONTROL.sub(" ", str(text)).strip()
    return text or "(empty name)"


# The STATES keyword is written indented: Paraver trims a section line before matching it, and BSC
# BasicAnalysis takes a .pcf whose STATES keyword starts a line for an Extrae trace (its nsys2prv
# path, which reads our event types, needs a .pcf without one).  See docs/paraver-views.md.
STATES_KEYWORD = " STATES"


def _states_block() -> str:
    lines = [STATES_KEYWORD] + [f"{i:<4} {label}" for i, label in sorted(R.STATES.items())]
    colors = ["STATES_COLOR"] + [f"{i:<4} {{{r},{g},{b}}}" for i, (r, g, b) in sorted(R.STATE_COLORS.items())]
    return "\n".join(lines) + "\n\n\n" + "\n".join(colors) + "\n\n\n"


def _type_values(t: EventType, labels: ValueLabels, used: dict[int, set[int]]) -> dict[int, str] | None:
    if t.kind == "numeric":
        return None
    values = dict(t.values)
    if t.id in LISTED_AS_USED:
        values = {v: lab for v, lab in values.items() if v in used.get(t.id, ()) or v == R.END_VALUE}
    values.setdefault(R.END_VALUE, R.END_LABEL)
    values.update(labels.labels(t.id))
    return values


def declared_types(types: dict[int, EventType], written: set[int]) -> dict[int, EventType]:
    """The types a trace's .pcf declares: those its records use (a CPU-only run declares no kernel,
    NCCL, OpenACC or GPU metric type; issue 36), and the memory-operation type whenever the trace has
    GPU work: BSC BasicAnalysis's nsys2prv path finds it by its label ("CUDA memcpy kernel"); and the
    types the host POP views filter on (``POP_HOST_TYPES``), always."""
    keep = set(written) | POP_HOST_TYPES
    if keep & R.GPU_WORK_TYPES:
        keep.add(R.MEMOP.id)
    known = {**{i: R.BY_ID[i] for i in POP_HOST_TYPES}, **types}
    return {i: t for i, t in known.items() if i in keep}


def render_pcf(types: dict[int, EventType], labels: ValueLabels, used: dict[int, set[int]] | None = None) -> str:
    """``used``: the values the trace's records give the types of ``LISTED_AS_USED`` (their only values listed)."""
    used = used or {}
    parts = [
        extrae_mpi.PCF_DEFAULT_OPTIONS,
        extrae_mpi.PCF_DEFAULT_SEMANTIC,
        _states_block(),
        extrae_mpi.PCF_GRADIENT_COLOR,
        extrae_mpi.PCF_GRADIENT_NAMES,
    ]
    done: set[int] = set()
    for t in sorted(types.values(), key=lambda t: t.id):
        if t.id in done:
            continue
        block = [t] if not t.group else sorted((u for u in types.values() if u.group == t.group), key=lambda u: u.id)
        done.update(u.id for u in block)
        lines = ["EVENT_TYPE"] + [f"{u.gradient} {u.id} {clean_label(u.label)}" for u in block]
        values = _type_values(t, labels, used)
        if t.group and values is not None:  # shared list: the union of the group's values (static types)
            for u in block[1:]:
                values.update(_type_values(u, labels, used) or {})
        if values:
            lines.append("VALUES")
            lines += [f"{v} {clean_label(lab)}" for v, lab in sorted(values.items()) if 0 <= v <= PCF_MAX]
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts)

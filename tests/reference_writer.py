"""The reference writer: every record of the run in memory, one global sort, one line per record.

The product writes each report's records as a sorted chunk and merges the chunks (``paraver/chunks.py``,
``paraver.writer.write_merged``), in slices for large reports and in several processes.  The reference
is the plain way to the same bytes, for the tests that hold the product to it:

    with reference_writer() as written:
        run([...], out)                 # the conversion's stages A-D, the trace written here
    assert len(written) == 1            # (its WriteStats)

Inside the block a conversion runs its stages in this process (``parallel.Serial``), translates every
report whole (no time slices) and, instead of the merge, concatenates the Translations the chunks
were made of (reports in order, then the MPI messages, then the GPU activity rows), paints every
thread over the whole trace (``translate.paint``), numbers the names over the whole run
(``ValueLabels.collect``), sorts every record once by (time, record kind, order) and formats each
one with Python's ``str``.  The header, .pcf and .row are written here too, from the grammar
(docs PARAVER_FORMAT: ``#Paraver (date):END_ns:nodes(cpus):1:tasks(threads:node)``, Extrae's
communicator line, the .pcf's blocks, the .row's levels), not by the product's ``paraver.header``,
``paraver.pcf`` and ``paraver.row``; only Extrae's fixed .pcf text (default options and semantics,
gradient colours and names: data, ``core.extrae_mpi``) and the colours of the states are shared.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from pathlib import Path

import numpy as np
import pytest

from nsys2prv.core import extrae_mpi
from nsys2prv.core import registry as R
from nsys2prv.core.names import is_names
from nsys2prv.paraver import chunks as paraver_chunks
from nsys2prv.paraver.fields import Fields
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.paraver.writer import WriteStats
from nsys2prv.pipeline import conversion, gpu_rows, parallel, slices
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.records import StateIntervals, Translation

STATE, EVENT, COMM = 1, 2, 3  # record kinds, in the order records of one time are written


def header(model, end_ns: int, epoch_ns: int | None, communicators: dict | None) -> str:
    """The .prv's first line (``,N`` communicators at its end) and one line per communicator, in id
    order: ``c:appl:id:members:task:...:task``."""
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=(epoch_ns or 0) // 1000)
    cpus = [sum(len(t.threads) for t in model.tasks if t.node == n) for n in range(len(model.nodes))]
    tasks = [f"{len(t.threads)}:{t.node + 1}" for t in model.tasks]
    line = (
        f"#Paraver ({when:%d/%m/%Y} at {when:%H:%M}):{end_ns}_ns:{len(cpus)}({','.join(map(str, cpus))}):1:"
        f"{len(tasks)}({','.join(tasks)})"
    )
    if not communicators:
        return line + "\n"
    comms = [
        f"c:1:{cid}:{len(members)}:" + ":".join(map(str, members)) for cid, members in sorted(communicators.items())
    ]
    return f"{line},{len(comms)}\n" + "".join(c + "\n" for c in comms)


def one_line(text) -> str:
    """A name as a .pcf/.row line: control characters to one space, never empty."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip() or "(empty name)"


SCHEDULER_RULE = (
    "\n# nsys2prv: CPU thread states from the scheduler (SCHED_EVENTS): Running only while on a CPU, Blocked (9)"
    " off it unless a call's own state covers the time; CPU threads without scheduling data: Running from their"
    " first to their last event\n"
)


def row(model) -> str:
    """The .row: CPUs (one per thread, named after it), nodes, the application, tasks, threads."""
    levels = {
        "CPU": [f"CPU {t.cpu} ({one_line(t.name)})" for t in sorted(model.threads, key=lambda t: (t.cpu, t.name))],
        "NODE": [one_line(n) for n in model.nodes],
        "APPL": ["nsys2prv"],
        "TASK": [one_line(f"{t.label} ({t.host}, pid {t.pid})") for t in model.tasks],
        "THREAD": [one_line(model.threads[g].name) for t in model.tasks for g in t.threads],
    }
    return "\n".join(
        f"LEVEL {lvl} SIZE {len(names)}\n" + "".join(n + "\n" for n in names) for lvl, names in levels.items()
    )


def pcf(types: dict, labels: ValueLabels, mpi_values: set | None = None) -> str:
    """The .pcf: Extrae's fixed blocks, the states, then one EVENT_TYPE block per type (the types of a
    group in one block sharing the union of their values), values sorted, 0 = "End" unless given; the
    MPI call types list only the values in ``mpi_values`` (those of the trace's records), as Extrae."""
    out = [extrae_mpi.PCF_DEFAULT_OPTIONS, extrae_mpi.PCF_DEFAULT_SEMANTIC, " STATES\n"]
    out += [f"{s:<4} {lab}\n" for s, lab in sorted(R.STATES.items())]
    out += ["\n\nSTATES_COLOR\n"] + [f"{s:<4} {{{r},{g},{b}}}\n" for s, (r, g, b) in sorted(R.STATE_COLORS.items())]
    out += ["\n\n", extrae_mpi.PCF_GRADIENT_COLOR, extrae_mpi.PCF_GRADIENT_NAMES]
    blocks: dict = {}
    for t in sorted(types.values(), key=lambda t: t.id):
        blocks.setdefault(t.group or ("", t.id), []).append(t)
    for block in sorted(blocks.values(), key=lambda b: b[0].id):
        out.append("EVENT_TYPE\n" + "".join(f"{t.gradient} {t.id} {one_line(t.label)}\n" for t in block))
        if block[0].kind != "numeric":
            values: dict[int, str] = {}
            for t in block if block[0].group else block[:1]:
                if t.kind != "numeric":
                    own = dict(t.values)
                    if 50000001 <= t.id <= 50000005:
                        own = {v: lab for v, lab in own.items() if v == 0 or v in (mpi_values or set())}
                    values.update({0: "End", **own, **labels.labels(t.id)})
            out.append(
                "VALUES\n" + "".join(f"{v} {one_line(lab)}\n" for v, lab in sorted(values.items()) if 0 <= v < 2**31)
            )
        out.append("\n")
    return "".join(out)


def write_own_files(
    base: Path, model, end_ns: int, epoch_ns, body, types: dict, labels, communicators, mpi_values=None
) -> list:
    """OUT.prv (header, then ``body``), OUT.pcf and OUT.row, plainly."""
    base.parent.mkdir(parents=True, exist_ok=True)
    prv, pcf_path, row_path = (base.with_name(base.name + ext) for ext in (".prv", ".pcf", ".row"))
    with open(prv, "wb") as fh:
        fh.write(header(model, int(end_ns), epoch_ns, communicators).encode())
        body(fh)
    pcf_path.write_text(pcf(types, labels, mpi_values), encoding="utf-8")
    # a trace whose states follow the scheduler (its .pcf has the executing-CPU type) says so after the blocks
    rule = SCHEDULER_RULE if R.EXECUTING_CPU.id in types else ""
    # a run whose GPU numbers are not the hosts' GPU ids (several hosts): each number's host and id first
    renumbered = any(n != g for (_, g), n in model.gpu_numbers.items())
    gpus = [f"\n# nsys2prv: GPU {n} = {one_line(h)} GPU {g}" for (h, g), n in model.gpu_numbers.items()]
    gpus = sorted(gpus, key=lambda line: int(line.split()[3])) if renumbered else []
    row_path.write_text(row(model) + "".join(gpus) + (rule or ("\n" if gpus else "")), encoding="utf-8")
    return [prv, pcf_path, row_path]


class _Layout:
    """Record rows (ragged: one int64 matrix per batch) and their sort keys."""

    def __init__(self, fields: Fields):
        self.fields = fields
        self.mats: list[np.ndarray] = []
        self.keys: list[tuple[np.ndarray, int, np.ndarray]] = []

    def add(self, kind: int, time: np.ndarray, order: np.ndarray, cols: list[np.ndarray]) -> None:
        if len(time):
            self.mats.append(np.column_stack(cols).astype(np.int64))
            self.keys.append((np.asarray(time, np.int64), kind, np.asarray(order, np.int64)))

    def lines(self) -> list[str]:
        """Every record as its text line, sorted by (time, kind, order), ties in insertion order."""
        if not self.mats:
            return []
        rows = [r for m in self.mats for r in m.tolist()]
        time = np.concatenate([k[0] for k in self.keys])
        kind = np.concatenate([np.full(len(k[0]), k[1], np.int8) for k in self.keys])
        order = np.concatenate([k[2] for k in self.keys])
        perm = np.lexsort((order, kind, time))
        return [":".join(map(str, rows[i])) + "\n" for i in perm.tolist()]


def write_trace(
    out: Translation,
    states: StateIntervals,
    model,
    types: dict,
    base: Path,
    end_ns: int,
    epoch_ns: int | None,
    compress: bool = False,
    communicators: dict[int, tuple[int, ...]] | None = None,
) -> WriteStats:
    """OUT.prv, .pcf and .row of ``out`` (painted ``states``) with every record in memory."""
    labels = ValueLabels(types)
    labels.collect(out.events)
    missing = {int(t) for b in out.events for t, _ in b.pairs for t in np.unique(np.asarray(t))} - set(types)
    assert not missing, f"event types without a definition: {sorted(missing)}"
    fields = Fields(model)
    lay = _Layout(fields)
    lay.add(STATE, states.start, np.zeros(len(states.thread), np.int64), fields.states(states))
    events = [b for b in out.events if len(b)]
    comms = [c for c in out.comms if len(c)]
    for b in events:
        lay.add(EVENT, b.time, b.order, fields.events(b, labels.encode)[0])
    for c in comms:
        lay.add(COMM, c.log_send, np.zeros(len(c), np.int64), fields.comms(c))

    def body(fh) -> None:
        fh.write("".join(lay.lines()).encode())

    assert not compress, "the reference writes plain text"
    # the .pcf declares the types of the records, the memory-operation type with GPU work (issue 36), and
    # always the CUDA API and MPI types the host POP views filter on (Paraver lets every event through a
    # filter whose types the .pcf does not declare)
    records = {int(t) for b in events for t, _ in b.pairs for t in np.unique(np.asarray(t))}
    used = records | ({R.MEMOP.id} if records & R.GPU_WORK_TYPES else set())
    used |= {63000000, 50000001, 50000002, 50000003, 50000004, 50000005}
    declared = {i: t for i, t in {**R.BY_ID, **types}.items() if i in used}
    mpi_values = set()  # the values of the MPI call types' records (their .pcf lists only those)
    for b in events:
        for t, v in b.pairs:
            if is_names(v):
                continue
            for tt, vv in zip(np.broadcast_to(np.asarray(t), (len(b),)).tolist(), np.asarray(v).tolist()):
                if 50000001 <= tt <= 50000005:
                    mpi_values.add(int(vv))
    targets = write_own_files(base, model, end_ns, epoch_ns, body, declared, labels, communicators, mpi_values)
    counts = len(states.thread), sum(len(b) for b in events), sum(len(c) for c in comms)
    return WriteStats(*counts, end_ns, targets, frozenset(records))


def write_in_memory(
    parts: list[Translation],
    model,
    types: dict,
    base: Path,
    epoch_ns: int | None,
    compress: bool = False,
    communicators: dict[int, tuple[int, ...]] | None = None,
    min_end: int = 0,
) -> WriteStats:
    """The trace of the Translations ``parts`` (in chunk order): END is the latest record, the
    latest process activity or ``min_end``."""
    out = Translation()
    for part in parts:
        out.events += part.events
        out.states += part.states
        out.comms += part.comms
    end_ns = max([trace_end(out), min_end, *(t.life[1] for t in model.tasks if t.life is not None)])
    return write_trace(out, paint(out, model, end_ns), model, types, base, end_ns, epoch_ns, compress, communicators)


@contextlib.contextmanager
def reference_writer():
    """Conversions inside the block write their trace with the reference writer (see above); the
    block gets the list of the traces' WriteStats."""
    made: dict[str, Translation] = {}  # chunk path -> the Translation it was written from
    written: list[WriteStats] = []
    real_chunk = paraver_chunks.write_chunk
    real_translate_all = slices.translate_all

    def keep_chunk(out: Translation, model, report: int, types: dict, path: str, consume: bool = False, painted=None):
        assert painted is None, "a sliced report: the reference translates every report whole"
        made[path] = Translation(events=list(out.events), states=list(out.states), comms=list(out.comms))
        return real_chunk(out, model, report, types, path, consume=consume)

    def whole_reports(ex, jobs, rows, model, slice_rows):
        return real_translate_all(ex, jobs, rows, model, 1 << 62)

    def merge_in_memory(
        chunks, model, types, base, epoch_ns, compress=False, *_, communicators=None, min_end=0, beside=None, **__
    ):
        if beside is not None:  # (write_merged's contract: the caller's work done beside the merge, once)
            beside()
        written.append(
            write_in_memory(
                [made.pop(c.path) for c in chunks], model, types, base, epoch_ns, compress, communicators, min_end
            )
        )
        return written[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conversion, "executor", lambda *a, **k: parallel.Serial())
        mp.setattr(slices, "translate_all", whole_reports)
        for module in (slices, gpu_rows, conversion):
            mp.setattr(module, "write_chunk", keep_chunk)
        mp.setattr(conversion, "write_merged", merge_in_memory)
        yield written

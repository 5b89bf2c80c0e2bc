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
one with Python's ``str``.  The header, .pcf and .row come from the product's ``write_files``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest

from nsys2prv.paraver import chunks as paraver_chunks
from nsys2prv.paraver.fields import Fields
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.paraver.writer import WriteStats, write_files
from nsys2prv.pipeline import conversion, gpu_rows, parallel, slices, stages
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.records import StateIntervals, Translation

STATE, EVENT, COMM = 1, 2, 3  # record kinds, in the order records of one time are written


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

    targets = write_files(base, compress, model, end_ns, epoch_ns, body, types, labels, communicators)
    return WriteStats(len(states.thread), sum(len(b) for b in events), sum(len(c) for c in comms), end_ns, targets)


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

    def merge_in_memory(chunks, model, types, base, epoch_ns, compress=False, *_, communicators=None, min_end=0, **__):
        written.append(
            write_in_memory(
                [made.pop(c.path) for c in chunks], model, types, base, epoch_ns, compress, communicators, min_end
            )
        )
        return written[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conversion, "executor", lambda *a, **k: parallel.Serial())
        mp.setattr(slices, "translate_all", whole_reports)
        for module in (stages, gpu_rows, conversion):
            mp.setattr(module, "write_chunk", keep_chunk)
        mp.setattr(conversion, "write_merged", merge_in_memory)
        yield written

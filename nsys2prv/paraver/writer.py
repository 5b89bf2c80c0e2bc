"""Write OUT.prv (or .prv.gz), OUT.pcf and OUT.row from the reports' sorted chunks, atomically.

The chunks' records are merged in (time, record kind, order) order (``paraver/chunks.py``, ``paraver/merge.py``) and
formatted in bulk; files are written to temporary names in the output directory and renamed only
when all three are complete.
"""

from __future__ import annotations

import gzip
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nsys2prv.core.registry import EXECUTING_CPU, EventType
from nsys2prv.model.resources import Model
from nsys2prv.paraver.format import expect_records
from nsys2prv.paraver.header import render_header
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.paraver.merge import merge, merge_split, object_columns
from nsys2prv.paraver.pcf import declared_types, render_pcf
from nsys2prv.paraver.row import render_row

MIN_SPLIT = 250_000  # records per part below which a split merge costs more than it saves


@dataclass
class WriteStats:
    states: int
    events: int
    comms: int
    end_ns: int
    files: list[Path]
    types: frozenset[int] = frozenset()  # the event types the trace's records use


class _ThreadedWriter:
    """File-like: compression (gzip) runs in a separate thread, overlapping the formatting."""

    def __init__(self, fh, depth: int = 4):

        self.fh = fh
        self.q: queue.Queue[bytes | None] = queue.Queue(depth)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while (data := self.q.get()) is not None:
            try:
                if self.error is None:
                    self.fh.write(data)
            except BaseException as exc:  # re-raised in the writing thread
                self.error = exc

    def write(self, data) -> None:
        if self.error is not None:
            raise self.error
        self.q.put(bytes(data))

    def close(self) -> None:
        self.q.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


def write_files(
    base: Path,
    compress: bool,
    model: Model,
    end_ns: int,
    epoch_ns: int | None,
    body,
    types: dict[int, EventType],
    labels: ValueLabels,
    communicators: dict[int, tuple[int, ...]] | None = None,
    used: dict[int, set[int]] | None = None,
) -> list[Path]:
    """OUT.prv(.gz) (header, then ``body(fh)`` writes the records), OUT.pcf and OUT.row, atomically."""
    base.parent.mkdir(parents=True, exist_ok=True)
    prv = base.with_name(base.name + (".prv.gz" if compress else ".prv"))
    pcf, row = base.with_name(base.name + ".pcf"), base.with_name(base.name + ".row")
    targets = [prv, pcf, row]
    temps = [t.with_name(f".{t.name}.tmp{os.getpid()}") for t in targets]
    try:
        if compress:
            with gzip.open(temps[0], "wb", compresslevel=6) as gz:
                threaded = _ThreadedWriter(gz)
                try:
                    threaded.write(render_header(model, end_ns, epoch_ns, communicators).encode())
                    body(threaded)
                finally:
                    threaded.close()
        else:
            with open(temps[0], "wb", buffering=1 << 20) as fh:
                fh.write(render_header(model, end_ns, epoch_ns, communicators).encode())
                body(fh)
        temps[1].write_text(render_pcf(types, labels, used), encoding="utf-8")
        temps[2].write_text(render_row(model, scheduler=EXECUTING_CPU.id in types), encoding="utf-8")
        for tmp, target in zip(temps, targets):
            os.replace(tmp, target)
    finally:
        for tmp in temps:
            if tmp.exists():
                tmp.unlink()
    return targets


def write_merged(
    chunks: list,
    model: Model,
    types: dict[int, EventType],
    base: Path,
    epoch_ns: int | None,
    compress: bool = False,
    budget: int = 1 << 16,
    progress: bool = False,
    parts: int = 1,
    work_dir: Path | None = None,
    communicators: dict[int, tuple[int, ...]] | None = None,
    min_end: int = 0,
    fork_every_part: bool = False,
    beside=None,
    beside_records: int = 0,
) -> WriteStats:
    """The trace from per-report sorted chunks (``paraver/chunks.py``): value numbering over every
    report's names, END = the latest record of any report (at least ``min_end``), then a streaming k-way merge (cut by
    time into ``parts`` processes when there are at least MIN_SPLIT records per part).
    ``fork_every_part`` (many ranks, ``work_dir`` given): every part is merged in a forked process,
    none here (nor is the formatter's kernel loaded here).  ``beside()``: work of this process done
    while the merge's forked processes run (into a plain file they take its blocks in turn,
    ``merge_split``; into gzip this process merges the first part, smaller by ``beside_records``, the
    work's estimated cost in records, first), or before a merge that is not split; always called once."""

    # (chunks unpickled in this process share the lists of names they have in common: each list, and
    # the values of each combination of lists, is taken once; the merge's table holds each once too)
    names: dict[int, set] = {}
    seen: set[int] = set()
    for c in chunks:
        for t, ns in c.names:
            if id(ns) not in seen:
                seen.add(id(ns))
                names.setdefault(t, set()).update(ns)
    del seen
    missing = set().union(*[c.types_used for c in chunks]) - set(types) if chunks else set()
    if missing:
        raise AssertionError(f"event types without a definition: {sorted(missing)}")
    labels = ValueLabels.from_names(types, names)
    del names
    by_lists: dict[tuple, np.ndarray] = {}

    def values_of(c) -> np.ndarray:
        key = tuple(id(ns) for _, ns in c.names)
        if key not in by_lists:
            by_lists[key] = (
                np.concatenate([labels.value_of(t, ns) for t, ns in c.names]).astype(np.int64)
                if c.names
                else np.zeros(0, np.int64)
            )
        return by_lists[key]

    values = [values_of(c) for c in chunks]
    end_ns = max([min_end, *(c.end for c in chunks)])
    stats = []

    total = sum(c.records for c in chunks)
    fork_every_part = fork_every_part and work_dir is not None
    # compiled (or loaded) here, before the merge's processes fork, if it is large; else in each of them
    expect_records(total, load=not fork_every_part)
    parts = max(1, min(parts, total // MIN_SPLIT)) if work_dir is not None else 1

    objs = object_columns(model)

    def body(fh):
        if parts > 1 or fork_every_part:
            stats.append(
                merge_split(
                    chunks,
                    values,
                    end_ns,
                    fh,
                    budget,
                    parts,
                    work_dir,
                    progress,
                    objs,
                    here=not fork_every_part,
                    beside=beside,
                    beside_records=beside_records,
                )
            )
        else:
            if beside is not None:
                beside()
            stats.append(merge(chunks, values, end_ns, fh, budget, progress=progress, objs=objs))

    written = {t for c in chunks for sig_types, _ in c.sigs for t in sig_types}  # types with records
    used: dict[int, set[int]] = {}  # the values of the types whose .pcf lists those only
    for c in chunks:
        for t, vs in c.values.items():
            used.setdefault(t, set()).update(vs)
    targets = write_files(
        base, compress, model, end_ns, epoch_ns, body, declared_types(types, written), labels, communicators, used
    )
    m = stats[0]
    return WriteStats(m.states, m.events, m.comms, end_ns, targets, frozenset(written))

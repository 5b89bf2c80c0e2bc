"""The merge cut by time into parts run at once (``merge_split``), each part's bytes written once,
straight into the .prv at their own offset.

A part's text is the sorted run of the records of its time range: its length does not depend on the
merge's order, only on its records (``format._part_bytes``, one pass over their chunk columns, no
merge).  So the forked process of part p first measures part p - 1, learns where part p - 1 starts
from the process of part p - 1 (a pipe each: the starts are handed down the chain, the parts measured
at once), passes its own start on, and formats its part with ``os.pwrite`` at that start into the
descriptor it inherited (the .prv's temporary file, opened by ``writer.write_files``: nothing is
opened again by name).  The last part is measured by no one; part 0 starts after the header.  Every
measured length is checked against the bytes its part wrote.  A trace written through a stream
that cannot be written at an offset (``-z``: gzip) keeps the parts' own files appended in order."""

from __future__ import annotations

import io
import os
import shutil
import stat

import numpy as np

from nsys2prv.core.workers import forked
from nsys2prv.paraver.chunks import ChunkMeta
from nsys2prv.paraver.format import expect_part_bytes, object_text_bytes, part_bytes_of, type_text_bytes
from nsys2prv.paraver.merge import Blocks, MergeStats, merge, sig_tables, split_times

BLOCK = 1 << 18  # records of a chunk measured at a time


def part_bytes(chunks: list[ChunkMeta], values, end_ns: int, objs: tuple, t_lo, t_hi) -> int:
    """The bytes ``merge(chunks, values, end_ns, ..., t_lo=t_lo, t_hi=t_hi, objs=objs)`` writes: each
    chunk's records of the range read BLOCK at a time (bounded memory) and measured."""
    sig_base, tables = sig_tables(chunks, values, objs)
    plen = object_text_bytes(tables.cpu, tables.task, tables.thr)
    tlen = type_text_bytes(tables.types)
    expect_part_bytes(sum(c.records for c in chunks))
    blocks = Blocks(BLOCK)
    total = 0
    for c, sb in zip(chunks, sig_base):
        for time, thread, sig, tail in blocks.of(c, t_lo, t_hi):
            total += part_bytes_of(time, thread, sig, tail, int(sb), end_ns, plen, tlen, tables)
    return total


class _AtOffset:
    """File-like: what is written goes to descriptor ``fd`` from byte ``at`` on (``os.pwrite``: the
    descriptor's own offset, shared with the processes that inherited it, does not move)."""

    def __init__(self, fd: int, at: int):
        self.fd, self.at, self.start = fd, at, at

    def write(self, data) -> None:
        view = memoryview(data).cast("B")
        while len(view):
            n = os.pwrite(self.fd, view, self.at)
            self.at += n
            view = view[n:]


def _merge_at(chunks, values, end_ns, budget, bounds, p, fd, base, pipes, objs):
    """Part p of a split merge, in a forked process: part p - 1 measured and its start received (part
    1: the header's end), this part's start handed on to part p + 1, then this part formatted at it.
    Returns its stats, its start, its bytes and part p - 1's measured bytes."""
    before = -1
    at = base
    if p > 0:
        before = part_bytes(chunks, values, end_ns, objs, bounds[p - 1], bounds[p])
        if p > 1:
            got = b""
            while len(got) < 8:
                more = os.read(pipes[p - 1][0], 8 - len(got))
                if not more:
                    raise OSError("the merge's previous part ended before saying where it starts")
                got += more
            at = int.from_bytes(got, "little")
        at += before
        if p in pipes:
            os.write(pipes[p][1], at.to_bytes(8, "little"))
    out = _AtOffset(fd, at)
    stats = merge(chunks, values, end_ns, out, budget, t_lo=bounds[p], t_hi=bounds[p + 1], objs=objs)
    return stats, at, out.at - at, before


def _merge_part(chunks, values, end_ns, path, budget, t_lo, t_hi, objs) -> MergeStats:
    """One part of a split merge written through a stream (gzip), in a forked process: its records into a
    file of their own."""
    with open(path, "wb", buffering=1 << 20) as fh:
        return merge(chunks, values, end_ns, fh, budget, t_lo=t_lo, t_hi=t_hi, objs=objs)


def _append(path: str, fh) -> None:
    """The file ``path`` appended to ``fh`` (read and written)."""
    with open(path, "rb") as src:
        shutil.copyfileobj(src, fh, 1 << 22)


def _plain_fd(fh) -> int | None:
    """The descriptor of ``fh`` where it is a buffered regular file that parts can be written into at
    their offsets (else None: a stream)."""
    if not isinstance(fh, io.BufferedWriter):
        return None
    try:
        fd = fh.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError):
        return None


def merge_split(
    chunks: list[ChunkMeta],
    values: list[np.ndarray],
    end_ns: int,
    fh,
    budget: int,
    parts: int,
    work_dir,
    progress: bool = False,
    objs: tuple = (),
    here: bool = True,
    beside=None,
    beside_records: int = 0,
) -> MergeStats:
    """``merge`` cut by time into ``parts`` parts run at once: the first in this process, straight
    into ``fh``; the others in forked processes, each into ``fh``'s file at its own offset (module
    doc; a stream: into files appended to ``fh`` in order): the same bytes as one merge.  ``here``
    False: every part runs in a forked process (this one keeps no merge buffers: many ranks).
    ``beside()``: this process's other work, done while the forked parts run (its own part is smaller
    by ``beside_records``: ``split_times``' first_less), or first when the merge is not cut.  A
    stream's part files are left in ``work_dir`` (the conversion removes it in a thread)."""

    cuts = split_times(chunks, parts, beside_records if here and beside is not None else 0)
    if not cuts and here:
        if beside is not None:
            beside()
        return merge(chunks, values, end_ns, fh, budget, progress=progress, objs=objs)
    bounds = [None, *cuts, None]
    away = range(1 if here else 0, len(bounds) - 1)  # the parts run in forked processes
    fd = _plain_fd(fh)
    bar = None
    if progress:
        from tqdm import tqdm  # (here: a run without progress bars does not load it)

        bar = tqdm(total=sum(c.records for c in chunks), desc="write", unit="record", unit_scale=True, leave=False)
    # the chunks' metas and name tables reach the processes by fork, not pickled through a pipe
    # (tens of MB at a thousand ranks, and a pickled copy in this process while it is sent); each
    # process reads the chunks' indexes from their files
    pipes: dict[int, tuple[int, int]] = {}
    paths: list[str] = []
    calls: list[tuple]
    try:
        if fd is not None:
            fh.flush()  # (the header: on the file before the parts are written after it)
            base = fh.tell()
            pipes = {p: os.pipe() for p in range(1, len(bounds) - 2)}  # part p's start, to part p + 1
            expect_part_bytes(sum(c.records for c in chunks), load=here)
            calls = [(_merge_at, (chunks, values, end_ns, budget, bounds, p, fd, base, pipes, objs)) for p in away]
        else:
            paths = [os.path.join(str(work_dir), f"part{p}.prv") for p in away]
            calls = [
                (_merge_part, (chunks, values, end_ns, path, budget, bounds[p], bounds[p + 1], objs))
                for p, path in zip(away, paths)
            ]
        with forked(calls) as futures:
            first = (
                merge(
                    chunks,
                    values,
                    end_ns,
                    fh,
                    budget,
                    progress=bar if bar is not None else False,
                    t_hi=bounds[1],
                    objs=objs,
                )
                if here
                else MergeStats()
            )
            if beside is not None:
                beside()
            results = [f.result() for f in futures]
    finally:
        for r, w in pipes.values():
            os.close(r)
            os.close(w)
    stats = MergeStats()
    if fd is not None:
        fh.flush()
        end = fh.tell()  # (part 0's end, when it ran here)
        for p, (m, at, size, before) in zip(away, results):
            if p > 0 and at != end:
                raise AssertionError(f"merge part {p - 1}: {end - at} bytes more than measured")
            end = at + size
        fh.seek(end)
        results = [m for m, *_ in results]
    else:
        for path in paths:
            _append(path, fh)  # (the file stays: ``work_dir`` is the caller's, removed off the critical path)
    for m in [first, *results]:
        stats.states += m.states
        stats.events += m.events
        stats.comms += m.comms
    if bar is not None:
        bar.update(sum(m.states + m.events + m.comms for m in results))
        bar.close()
    return stats

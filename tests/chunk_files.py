"""Chunk files made from whole sorted arrays, for the merge's tests (the pipeline writes its chunks
with ``paraver.chunks.write_chunk``)."""

from __future__ import annotations

import numpy as np

from nsys2prv.paraver.chunks import HEADER, SECTIONS, STRIDE, ChunkMeta


def save_chunk(path: str, time, key, thread, sig, tail, **meta) -> ChunkMeta:
    """A chunk file from whole sorted arrays (``meta``: the other ChunkMeta fields)."""
    n = len(time)
    cols = [np.asarray(c, d) for c, (_, d) in zip((time, key, thread, sig), SECTIONS)]
    tail = np.asarray(tail, np.int64)
    hdr = np.zeros(HEADER, np.int64)
    hdr[:2] = n, len(tail)
    with open(path, "wb") as fh:
        for a in (hdr, *cols, tail):
            a.tofile(fh)
    m = ChunkMeta(
        str(path),
        n,
        meta.pop("states", 0),
        meta.pop("events", 0),
        meta.pop("comms", 0),
        meta.pop("end", int(cols[0].max()) if n else 0),
        **meta,
    )
    m.index = cols[0][::STRIDE].copy()
    offs = np.concatenate([[0], np.cumsum(m.widths()[cols[3]])])
    m.fields = offs[:n:STRIDE].copy()
    return m

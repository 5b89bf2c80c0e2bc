"""Chunk files made from whole sorted arrays, for the merge's tests (the pipeline writes its chunks
with ``paraver.chunks.write_chunk``)."""

from __future__ import annotations

import numpy as np

from nsys2prv.paraver.chunks import HEADER, SECTIONS, STRIDE, ChunkMeta, trailer_offset


def save_chunk(path: str, time, key, thread, sig, tail, keyless: bool = False, **meta) -> ChunkMeta:
    """A chunk file from whole sorted arrays (``meta``: the other ChunkMeta fields; ``keyless``: states
    only, written without their keys)."""
    n = len(time)
    cols = [np.asarray(c, d) for c, (_, d) in zip((time, key, thread, sig), SECTIONS)]
    tail = np.asarray(tail, np.int64)
    hdr = np.zeros(HEADER, np.int64)
    hdr[:3] = n, len(tail), keyless
    m = ChunkMeta(
        str(path),
        n,
        meta.pop("states", 0),
        meta.pop("events", 0),
        meta.pop("comms", 0),
        meta.pop("end", int(cols[0].max()) if n else 0),
        **meta,
    )
    offs = np.concatenate([[0], np.cumsum(m.widths()[cols[3]])]).astype(np.int64)
    with open(path, "wb") as fh:  # (the trailer: the time and tail position of every STRIDE-th record)
        for a in (hdr, *(cols[::2] + cols[3:] if keyless else cols), tail, cols[0][::STRIDE], offs[:n:STRIDE]):
            a.tofile(fh)
    m.trailer = trailer_offset(n, len(tail), keyless)
    return m

"""CPU samples with their call stacks (COMPOSITE_EVENTS + SAMPLING_CALLCHAINS); category ``samples``.

Normalised columns, one row per sample with a usable frame: start, end (= start: a sample is an
instant), tid, and the frame labels ``fn0`` (the innermost user-mode frame: the sampled function),
``fn1``..``fn9`` (its callers; ``registry.SAMPLED_LEVELS``) and ``kernel`` (the innermost kernel-mode
frame), NULL where the stack has none; one category list for all of them.  A label is
``function [module]``, or ``module @ address`` for an unresolved frame (the export gives the
instruction address, not the module's base).  A sample without a usable frame is dropped and
counted; artificial entries, deeper frames and the kernel frames below the innermost are counted in
notes.  The call stacks are read a block of samples at a time (``BLOCK``): memory holds the samples'
times and threads, one block of frames and the label codes, never every frame of the report.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.columns import KERNEL_COLUMN, LEVEL_COLUMNS
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import Reader, ReadResult, int64, text_column

SAMPLES, FRAMES = "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"
MAX_DEPTH = 64  # frames read per stack; deeper ones are only counted
BLOCK = 50_000  # samples whose frames are read at once
NO_STACK = "CPU sample without a usable call-stack frame"


def frame_labels(report: Report, symbol: np.ndarray, module: np.ndarray, unresolved: np.ndarray) -> pd.Categorical:
    """Each frame's label from its StringIds keys: ``function [module]``, unresolved ``module @ address``;
    each distinct (symbol, module, unresolved) labelled once."""
    codes, keys = _keys(symbol, module, unresolved)
    return text_column(_label_keys(report, keys), codes)


def _keys(symbol, module, unresolved) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the distinct (symbol, module, unresolved) and those as rows of an (n, 3) int64 array
    (columnar: each column factorised, the codes combined, no tuple per row)."""
    sc, su = pd.factorize(np.asarray(symbol, np.int64))
    mc, mu = pd.factorize(np.asarray(module, np.int64))
    nm = max(len(mu), 1)
    comb = (sc.astype(np.int64) * nm + mc) * 2 + np.asarray(unresolved, bool)
    codes, uniq = pd.factorize(comb)  # (hashing: no sort of every frame)
    keys = np.stack([su[uniq // 2 // nm], mu[uniq // 2 % nm], uniq % 2], axis=1)
    return codes.astype(np.int64).ravel(), keys.astype(np.int64).reshape(-1, 3)


def _label_keys(report: Report, keys: np.ndarray) -> np.ndarray:
    sym = report.lookup(np.asarray(keys[:, 0], np.int64)) if len(keys) else np.zeros(0, object)
    mod = report.lookup(np.asarray(keys[:, 1], np.int64)) if len(keys) else np.zeros(0, object)
    labels = np.empty(len(keys), object)
    for i in range(len(keys)):
        s = sym[i] if isinstance(sym[i], str) else f"<unknown name #{keys[i, 0]}>"
        m = os.path.basename(str(mod[i])) if isinstance(mod[i], str) else f"<unknown module #{keys[i, 1]}>"
        labels[i] = f"{m} @ {s}" if keys[i, 2] else f"{s} [{m}]"
    return labels


class _Codes:
    """One numbering of the frames' (symbol, module, unresolved) over every block."""

    def __init__(self):
        self.index: dict[tuple, int] = {}

    def of(self, symbol, module, unresolved) -> np.ndarray:
        codes, keys = _keys(symbol, module, unresolved)
        index = self.index  # (rows as Python ints: ``tolist``, not an int() of each numpy scalar)
        ids = np.array([index.setdefault((a, b, c), len(index)) for a, b, c in keys.tolist()], np.int64)
        return ids[codes] if len(codes) else np.zeros(0, np.int64)

    def keys(self) -> np.ndarray:
        return np.array(list(self.index), dtype=np.int64).reshape(-1, 3)


def _block(report: Report, lo: int, hi: int, sid: np.ndarray, codes: _Codes, cols: dict, res: ReadResult) -> None:
    """The frames of the samples with ids in [lo, hi] into ``cols`` (level -> codes per sample, -1 none)."""
    opt = ", ".join(report.col_or_null(FRAMES, c) for c in ("kernelMode", "unresolved", "specialEntry"))
    fr = report.query(
        f"SELECT id, stackDepth AS depth, symbol, module, {opt} FROM {FRAMES} "
        f"WHERE id >= {lo} AND id <= {hi} AND stackDepth < {MAX_DEPTH}"
    )
    deeper = report.count(FRAMES, f"id >= {lo} AND id <= {hi} AND stackDepth >= {MAX_DEPTH}")  # (the index)
    res.note(f"call-stack frames deeper than {MAX_DEPTH} (not read)", deeper)
    f_id, depth = int64(fr["id"], -1), int64(fr["depth"])
    kernel, special = int64(fr["kernelMode"]) != 0, int64(fr["specialEntry"]) != 0
    unresolved = int64(fr["unresolved"]) != 0
    symbol, module = int64(fr["symbol"], -1), int64(fr["module"], -1)
    del fr
    res.note("artificial call-stack entries (added by nsys): not written", int(special.sum()))
    at = np.searchsorted(sid, f_id)
    known = (at < len(sid)) & (sid[np.minimum(at, max(len(sid) - 1, 0))] == f_id) & ~special
    res.note("call-stack frames of no sample in COMPOSITE_EVENTS: not written", int((~known & ~special).sum()))
    at, depth, kernel, unresolved, symbol, module = (a[known] for a in (at, depth, kernel, unresolved, symbol, module))
    ordered = bool(((at[1:] > at[:-1]) | ((at[1:] == at[:-1]) & (depth[1:] > depth[:-1]))).all())
    if not ordered:  # (the primary key's order, as SQLite usually returns them: no sort needed)
        o = np.lexsort((depth, at))
        at, kernel, unresolved, symbol, module = (a[o] for a in (at, kernel, unresolved, symbol, module))
    code = codes.of(symbol, module, unresolved)
    # user-mode frames: level = rank among the sample's user frames (innermost 0); kernel: the innermost only
    for mine, levels in ((~kernel, R.SAMPLED_LEVELS), (kernel, 1)):
        a, c = at[mine], code[mine]
        if not len(a):
            continue
        first = np.r_[True, a[1:] != a[:-1]]
        idx = np.arange(len(a))
        level = idx - np.maximum.accumulate(np.where(first, idx, 0))
        deep = level >= levels
        what = (
            "kernel-mode frames below the innermost"
            if levels == 1
            else f"call-stack frames deeper than caller level {levels - 1}"
        )
        res.note(f"{what}: not written", int(deep.sum()))
        for k in range(levels):
            sel = level == k
            cols[k if levels > 1 else -1][a[sel]] = c[sel]


def read(report: Report) -> ReadResult | None:
    if not report.has(SAMPLES, "id", "start", "globalTid"):
        return None
    samples = report.query(f"SELECT id, start, globalTid AS tid FROM {SAMPLES}")
    res = ReadResult(table=None, source_rows=len(samples))
    sid, start, tid = int64(samples["id"], -1), int64(samples["start"], -1), int64(samples["tid"], -1)
    del samples
    order = np.argsort(sid, kind="stable")
    sid, start, tid = sid[order], start[order], tid[order]
    del order
    cols = {k: np.full(len(sid), -1, np.int32) for k in (*range(R.SAMPLED_LEVELS), -1)}
    codes = _Codes()
    if report.has(FRAMES, "id", "symbol", "module", "stackDepth"):
        for b in range(0, len(sid), BLOCK):
            _block(report, int(sid[b]), int(sid[min(b + BLOCK, len(sid)) - 1]), sid, codes, cols, res)
    labels = _label_keys(report, codes.keys())
    cat = pd.Index(labels, dtype=object)
    # (distinct keys may share a label: merge them, one category per label)
    lcodes, luniq = pd.factorize(cat)
    remap = np.append(np.asarray(lcodes, np.int32), np.int32(-1))  # code -1 stays -1
    has = np.zeros(len(sid), bool)
    for c in cols.values():
        has |= c >= 0
    res.drop(NO_STACK, int((~has).sum()))
    table = {"start": start[has], "end": start[has], "tid": tid[has]}
    for k, c in cols.items():
        name = KERNEL_COLUMN if k < 0 else LEVEL_COLUMNS[k]
        table[name] = pd.Categorical.from_codes(remap[c[has]], categories=pd.Index(luniq, dtype=object))
    res.table = pd.DataFrame(table)
    return res


READER = Reader((SAMPLES, FRAMES), read)

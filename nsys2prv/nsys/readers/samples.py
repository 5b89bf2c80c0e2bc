"""CPU samples with their call stacks (COMPOSITE_EVENTS + SAMPLING_CALLCHAINS); category ``samples``.

Normalised columns, one row per written frame of a sample: start, end (= start: a sample is an
instant), tid, sample (the sample's id), level (0 = the innermost user-mode frame, k its caller at
level k; -1 = the innermost kernel-mode frame) and fn, the frame's label: ``function [module]``, or
``module @ address`` for an unresolved frame (the export gives the instruction address, not the
module's base).  A sample is counted once (``source_rows``); a sample without a usable frame is
dropped and counted; artificial entries (``[Broken backtraces]``), frames deeper than
``registry.SAMPLED_LEVELS`` and kernel frames below the innermost are counted in notes.  At most
``MAX_DEPTH`` frames of a stack are read (the deeper ones are only counted).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import Reader, ReadResult, int64, text_column

SAMPLES, FRAMES = "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"
MAX_DEPTH = 64
NO_STACK = "CPU sample without a usable call-stack frame"


def frame_labels(report: Report, symbol: np.ndarray, module: np.ndarray, unresolved: np.ndarray) -> pd.Categorical:
    """Each frame's label from its StringIds keys: ``function [module]``, unresolved ``module @ address``;
    each distinct (symbol, module, unresolved) labelled once."""
    key = pd.MultiIndex.from_arrays([symbol, module, unresolved])
    codes, uniq = pd.factorize(key)
    sym = report.lookup(np.asarray(uniq.get_level_values(0), np.int64))
    mod = report.lookup(np.asarray(uniq.get_level_values(1), np.int64))
    unres = np.asarray(uniq.get_level_values(2), bool)
    labels = np.empty(len(uniq), object)
    for i in range(len(uniq)):
        s = sym[i] if isinstance(sym[i], str) else f"<unknown name #{uniq[i][0]}>"
        m = os.path.basename(str(mod[i])) if isinstance(mod[i], str) else f"<unknown module #{uniq[i][1]}>"
        labels[i] = f"{m} @ {s}" if unres[i] else f"{s} [{m}]"
    return text_column(labels, codes)


def read(report: Report) -> ReadResult | None:
    if not report.has(SAMPLES, "id", "start", "globalTid"):
        return None
    samples = report.query(f"SELECT id, start, globalTid AS tid FROM {SAMPLES}")
    res = ReadResult(table=None, source_rows=len(samples))
    sid, start, tid = int64(samples["id"], -1), int64(samples["start"], -1), int64(samples["tid"], -1)
    del samples
    order = np.argsort(sid, kind="stable")
    sid, start, tid = sid[order], start[order], tid[order]
    empty = pd.DataFrame(
        {
            "start": np.zeros(0, np.int64),
            "end": np.zeros(0, np.int64),
            "tid": np.zeros(0, np.int64),
            "sample": np.zeros(0, np.int64),
            "level": np.zeros(0, np.int64),
            "fn": pd.Categorical([]),
        }
    )
    if not report.has(FRAMES, "id", "symbol", "module", "stackDepth"):
        res.drop(NO_STACK, len(sid))
        res.table = empty
        return res
    opt = ", ".join(report.col_or_null(FRAMES, c) for c in ("kernelMode", "unresolved", "specialEntry"))
    fr = report.query(
        f"SELECT id, stackDepth AS depth, symbol, module, {opt} FROM {FRAMES} WHERE stackDepth < {MAX_DEPTH}"
    )
    deeper = report.count(FRAMES, f"stackDepth >= {MAX_DEPTH}")
    if deeper:
        res.note(f"call-stack frames deeper than {MAX_DEPTH} (not read)", deeper)
    f_id, depth = int64(fr["id"], -1), int64(fr["depth"])
    kernel = int64(fr["kernelMode"]) != 0
    special = int64(fr["specialEntry"]) != 0
    unresolved = int64(fr["unresolved"]) != 0
    symbol, module = int64(fr["symbol"], -1), int64(fr["module"], -1)
    del fr
    res.note("artificial call-stack entries ([Broken backtraces] and the like): not written", int(special.sum()))
    at = np.searchsorted(sid, f_id)
    known = (at < len(sid)) & (sid[np.minimum(at, len(sid) - 1)] == f_id) & ~special
    res.note("call-stack frames of no sample in COMPOSITE_EVENTS: not written", int((~known & ~special).sum()))
    at, depth, kernel, unresolved, symbol, module = (a[known] for a in (at, depth, kernel, unresolved, symbol, module))
    o = np.lexsort((depth, at))
    at, depth, kernel, unresolved, symbol, module = (a[o] for a in (at, depth, kernel, unresolved, symbol, module))
    # user-mode frames: level = rank among the sample's user frames; kernel frames: the innermost only
    user = ~kernel
    u_at = at[user]
    first = np.r_[True, u_at[1:] != u_at[:-1]] if len(u_at) else np.zeros(0, bool)
    idx = np.arange(len(u_at))
    level_u = idx - np.maximum.accumulate(np.where(first, idx, 0)) if len(u_at) else idx
    k_at = at[kernel]
    k_first = np.r_[True, k_at[1:] != k_at[:-1]] if len(k_at) else np.zeros(0, bool)
    res.note("kernel-mode frames below the innermost: not written", int((~k_first).sum()))
    level = np.full(len(at), -2, np.int64)
    level[user] = level_u
    kl = level[kernel]
    kl[k_first] = -1
    level[kernel] = kl
    res.note(
        f"call-stack frames deeper than caller level {R.SAMPLED_LEVELS - 1}: not written",
        int((level >= R.SAMPLED_LEVELS).sum()),
    )
    keep = (level >= -1) & (level < R.SAMPLED_LEVELS)
    at, level = at[keep], level[keep]
    fn = frame_labels(report, symbol[keep], module[keep], unresolved[keep])
    with_stack = np.zeros(len(sid), bool)
    with_stack[at] = True
    res.drop(NO_STACK, int((~with_stack).sum()))
    res.table = pd.DataFrame(
        {"start": start[at], "end": start[at], "tid": tid[at], "sample": sid[at], "level": level, "fn": fn}
    )
    return res


READER = Reader((SAMPLES, FRAMES), read)

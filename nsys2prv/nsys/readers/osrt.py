"""OS runtime library calls (OSRT_API); opt-in category ``osrt``.

Normalised columns: start, end, tid, name; where the report has call stacks (OSRT_CALLCHAINS, the
calls longer than nsys's backtrace threshold) also caller1..callerN (``registry.OSRT_CALLER_LEVELS``,
all of them): the label of the stack's frame at that level (1 = the innermost), NULL where the call has
none.  The
"profiling started/finished" markers (eventClass 31/32, zero length on TID 0) are not calls and are
counted as dropped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    Reader,
    ReadResult,
    int64,
    interval_frame,
    text_names,
    to_int64,
)
from nsys2prv.nsys.readers.samples import frame_labels

TABLE = "OSRT_API"
CHAINS = "OSRT_CALLCHAINS"
MARKER_CLASSES = (31, 32)


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "end", "globalTid", "nameId"):
        return None
    df = report.query(
        f"SELECT start, end, globalTid AS tid, nameId, {report.col_or_null(TABLE, 'eventClass')}, "
        f"{report.col_or_null(TABLE, 'callchainId', 'chain')} FROM {TABLE}"
    )
    res = ReadResult(table=df, source_rows=len(df))
    marker = int64(df["eventClass"], fill=-1)
    is_marker = (marker == MARKER_CLASSES[0]) | (marker == MARKER_CLASSES[1])
    res.drop("profiling started/finished markers (not calls)", int(is_marker.sum()))
    df = interval_frame(df[~is_marker], res)
    to_int64(df, "tid")
    df["name"] = text_names(report, df["nameId"])
    res.table = df[["start", "end", "tid", "name"]]
    chain = int64(df["chain"], fill=0)
    if report.has(CHAINS, "id", "symbol", "module", "stackDepth") and report.count(CHAINS):
        res.table = res.table.assign(**callers(report, chain, res))
    return res


def callers(report: Report, chain: np.ndarray, res: ReadResult) -> dict[str, pd.Categorical]:
    """caller1..callerN of each call (``chain``: its callchainId) from OSRT_CALLCHAINS; frames deeper than
    N and artificial entries (of these calls' stacks) are counted in notes."""
    levels = R.OSRT_CALLER_LEVELS
    # every caller column, whatever this batch of calls has (the batches of a table share one schema)
    out = {
        f"caller{k}": pd.Categorical.from_codes(np.full(len(chain), -1), categories=[""]) for k in range(1, levels + 1)
    }
    if not (chain > 0).any():
        return out
    lo, hi = int(chain[chain > 0].min()), int(chain.max())  # (a batch of calls: only its stacks' rows)
    fr = report.query(
        f"SELECT id, stackDepth AS depth, symbol, module, {report.col_or_null(CHAINS, 'unresolved')}, "
        f"{report.col_or_null(CHAINS, 'specialEntry')} FROM {CHAINS} WHERE id >= {lo} AND id <= {hi}"
    )
    fr = fr[np.isin(int64(fr["id"], -1), chain[chain > 0])]  # (ids in the range of another batch's calls)
    fid, depth = int64(fr["id"], -1), int64(fr["depth"], -1)
    special = int64(fr["specialEntry"]) != 0
    res.note(
        "OS runtime call-stack entries added by nsys ([Broken backtraces] and the like): not written",
        int(special.sum()),
    )
    res.note(
        f"OS runtime call-stack frames deeper than caller level {levels}: not written", int((depth >= levels).sum())
    )
    keep = ~special & (depth >= 0) & (depth < levels)
    fid, depth = fid[keep], depth[keep]
    labels = frame_labels(
        report, int64(fr["symbol"], -1)[keep], int64(fr["module"], -1)[keep], (int64(fr["unresolved"]) != 0)[keep]
    )
    for k in range(1, levels + 1):
        sel = depth == k - 1
        if not sel.any():
            continue
        ids, lab = fid[sel], labels[sel]
        o = np.argsort(ids, kind="stable")
        ids, codes = ids[o], np.asarray(lab.codes)[o]
        at = np.minimum(np.searchsorted(ids, chain), len(ids) - 1)
        hit = (chain > 0) & (ids[at] == chain)
        out[f"caller{k}"] = pd.Categorical.from_codes(np.where(hit, codes[at], -1), categories=lab.categories)
    return out


READER = Reader((TABLE, CHAINS), read)

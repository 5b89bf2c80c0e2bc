"""Call stacks of calls (OSRT_CALLCHAINS, CUDA_CALLCHAINS: id, stackDepth, symbol, module, ...) as
caller levels: one column per level, the label of the frame (``samples.frame_labels``) at that depth of
the call's stack.  Shared by the readers of the calls that have them (``osrt``, ``cuda_api``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import ReadResult, int64
from nsys2prv.nsys.readers.samples import frame_labels


def callers(report: Report, chains: str, chain: np.ndarray, res: ReadResult, what: str) -> dict[str, pd.Categorical]:
    """caller1..callerN of each call (``chain``: its callchainId, 0 none) from the table ``chains``
    (OSRT_CALLCHAINS, CUDA_CALLCHAINS); frames deeper than N and artificial entries (of these calls'
    stacks) are counted in notes naming ``what`` calls."""
    levels = R.CALLER_LEVELS
    # every caller column, whatever this batch of calls has (the batches of a table share one schema)
    out = {
        f"caller{k}": pd.Categorical.from_codes(np.full(len(chain), -1), categories=[""]) for k in range(1, levels + 1)
    }
    if not (chain > 0).any():
        return out
    lo, hi = int(chain[chain > 0].min()), int(chain.max())  # (a batch of calls: only its stacks' rows)
    fr = report.query(
        f"SELECT id, stackDepth AS depth, symbol, module, {report.col_or_null(chains, 'unresolved')}, "
        f"{report.col_or_null(chains, 'specialEntry')} FROM {chains} WHERE id >= {lo} AND id <= {hi}"
    )
    fr = fr[np.isin(int64(fr["id"], -1), chain[chain > 0])]  # (ids in the range of another batch's calls)
    fid, depth = int64(fr["id"], -1), int64(fr["depth"], -1)
    special = int64(fr["specialEntry"]) != 0
    res.note(
        f"{what} call-stack entries added by nsys ([Broken backtraces] and the like): not written",
        int(special.sum()),
    )
    res.note(f"{what} call-stack frames deeper than caller level {levels}: not written", int((depth >= levels).sum()))
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

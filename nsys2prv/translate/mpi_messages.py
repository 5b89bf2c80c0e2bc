"""MPI point-to-point messages: matched sends and receives across ranks -> communication records.

Matching (MPI's non-overtaking rule): the k-th send from rank A to rank B with tag t
matches the k-th receive posted on B from A with tag t (k in call-start order).  Peers
are world ranks (``remoteRank`` of MPI_P2P_EVENTS); handles of communicators are
process-local, so they cannot be compared across reports and are not part of the key.
Receives with MPI_ANY_SOURCE / MPI_ANY_TAG (negative peer or tag) cannot be matched
and are counted as unmatched, as is anything on a rank or thread outside the model.

MPI_Sendrecv(_replace) is both a send and a receive: exported as two rows of one call,
the first (in row order) is taken as the send half and the second as the receive half;
a single row stands for both halves with the same peer and tag.

Times, as Extrae writes them (paraver/extrae_mpi.py): logical send = send call start,
physical send = send call end; logical receive = receive call start, physical
receive = receive call end.  For MPI_Irecv/MPI_Imrecv: logical receive = end of the
Irecv call, physical receive = end of the Wait/Test row on the same thread that
completed its request (its end when no such row exists).  Size = bytes sent (the
receive row holds the buffer's capacity, which may exceed the message); tag = MPI tag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys2prv.core.extrae_mpi import NONBLOCKING_RECV_CALLS, RECV_CALLS, SEND_CALLS, SENDRECV_CALLS
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.resources import Model
from nsys2prv.translate.records import CommBatch, Translation

KIND = "mpi_messages"


@dataclass
class Messages:
    send_report: np.ndarray
    recv_report: np.ndarray
    send_thread: np.ndarray
    recv_thread: np.ndarray
    log_send: np.ndarray  # report-local times (sender's / receiver's report)
    phys_send: np.ndarray
    log_recv: np.ndarray
    phys_recv: np.ndarray
    size: np.ndarray
    tag: np.ndarray
    halves: int = 0  # send and receive halves seen
    unmatched_sends: int = 0
    unmatched_recvs: int = 0
    outside_window: int = 0  # matched, but not inside the -f/--filter-nvtx window

    def __len__(self) -> int:
        return len(self.send_report)

    def within(self, clocks: list[Clock], lo: int, hi: int) -> "Messages":
        """Only the messages whose send and receive calls lie inside the aligned window [lo, hi]."""
        if not len(self):
            return self
        keep = (
            (_aligned(self.log_send, self.send_report, clocks) >= lo)
            & (_aligned(self.phys_send, self.send_report, clocks) <= hi)
            & (_aligned(self.log_recv, self.recv_report, clocks) >= lo)
            & (_aligned(self.phys_recv, self.recv_report, clocks) <= hi)
        )
        cut = {
            f: getattr(self, f)[keep]
            for f in (
                "send_report",
                "recv_report",
                "send_thread",
                "recv_thread",
                "log_send",
                "phys_send",
                "log_recv",
                "phys_recv",
                "size",
                "tag",
            )
        }
        return Messages(
            **cut,
            halves=self.halves,
            unmatched_sends=self.unmatched_sends,
            unmatched_recvs=self.unmatched_recvs,
            outside_window=self.outside_window + int((~keep).sum()),
        )


def _halves(r: int, p2p: pd.DataFrame, waits: pd.DataFrame, model: Model) -> tuple[pd.DataFrame, pd.DataFrame]:
    name = p2p["name"].astype(str)
    both = name.isin(SENDRECV_CALLS).to_numpy()
    # Split Sendrecv: the rows of one call share (tid, start, name), the first (row order) is the send
    # half; nsys 2023.4 ends the send half where it starts (end == start), older exports both halves at
    # the call's end (names are categorical: only the observed groups).
    call = p2p.groupby(["tid", "start", "name"], sort=False, observed=True)
    nth = call.cumcount().to_numpy()
    size = call["row"].transform("size").to_numpy()
    is_send = name.isin(SEND_CALLS).to_numpy() | (both & ((size == 1) | (nth == 0)))
    is_recv = name.isin(RECV_CALLS).to_numpy() | (both & ((size == 1) | (nth == 1)))
    thread = model.cpu_threads(r, p2p["tid"].to_numpy(np.int64))
    rank_of_thread = np.array(
        [model.tasks[t.task].rank if model.tasks[t.task].rank is not None else -1 for t in model.threads] + [-1],
        np.int64,
    )
    rank = rank_of_thread[thread]  # thread -1 -> the trailing -1
    base = pd.DataFrame(
        {
            "report": r,
            "thread": thread,
            "rank": rank,
            "peer": p2p["peer"].to_numpy(),
            "tag": p2p["tag"].to_numpy(),
            "size": p2p["size"].to_numpy(),
            "start": p2p["start"].to_numpy(),
            "end": p2p["end"].to_numpy(),
        }
    )
    sends = base[is_send].rename(columns={"rank": "src", "peer": "dst"})
    recvs = base[is_recv].rename(columns={"rank": "dst", "peer": "src"})
    sends = sends.assign(log=sends["start"], phys=sends["end"])
    log_r = np.where(name[is_recv].isin(NONBLOCKING_RECV_CALLS), recvs["end"], recvs["start"])
    phys_r = recvs["end"].to_numpy().copy()
    nb = name[is_recv].isin(NONBLOCKING_RECV_CALLS).to_numpy() & (p2p["request"].to_numpy()[is_recv] != 0)
    if nb.any() and len(waits):
        phys_r[nb] = _completion(p2p[is_recv][nb], waits, phys_r[nb])
    recvs = recvs.assign(log=log_r, phys=phys_r)
    return sends, recvs


def _completion(irecv: pd.DataFrame, waits: pd.DataFrame, default: np.ndarray) -> np.ndarray:
    """End of the first Wait/Test row on the same thread and request that starts after the Irecv ended."""
    left = pd.DataFrame(
        {
            "tid": irecv["tid"].to_numpy(),
            "request": irecv["request"].to_numpy(),
            "t": irecv["end"].to_numpy(),
            "i": np.arange(len(irecv)),
        }
    ).sort_values("t")
    right = waits.rename(columns={"start": "t"}).sort_values("t")
    m = pd.merge_asof(left, right[["t", "tid", "request", "end"]], on="t", by=["tid", "request"], direction="forward")
    out = default.copy()
    ok = m["end"].notna().to_numpy()
    out[m["i"].to_numpy()[ok]] = m["end"].to_numpy()[ok].astype(np.int64)
    return out


def match_messages(raw: list[tuple[pd.DataFrame, pd.DataFrame] | None], model: Model) -> Messages:
    """raw[r] = (p2p rows, wait rows) of report r (mpi.read_p2p), or None."""
    parts = [_halves(r, *x, model) for r, x in enumerate(raw) if x is not None and len(x[0])]
    cols = ["report", "thread", "src", "dst", "tag", "size", "log", "phys"]
    sends = pd.concat([p[0][cols] for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=cols)
    recvs = pd.concat([p[1][cols] for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=cols)
    halves = len(sends) + len(recvs)
    key = ["src", "dst", "tag"]
    ok_s = (sends["src"] >= 0) & (sends["dst"] >= 0) & (sends["tag"] >= 0) & (sends["thread"] >= 0)
    ok_r = (recvs["src"] >= 0) & (recvs["dst"] >= 0) & (recvs["tag"] >= 0) & (recvs["thread"] >= 0)
    s = sends[ok_s.to_numpy()].sort_values([*key, "log"], kind="stable")
    r = recvs[ok_r.to_numpy()].sort_values([*key, "log"], kind="stable")
    s = s.assign(k=s.groupby(key, sort=False).cumcount())
    r = r.assign(k=r.groupby(key, sort=False).cumcount())
    m = s.merge(r, on=[*key, "k"], suffixes=("_s", "_r"))
    m = m.sort_values(["log_s", "report_s"], kind="stable")
    i64 = lambda c: m[c].to_numpy(np.int64)  # noqa: E731
    return Messages(
        i64("report_s"),
        i64("report_r"),
        i64("thread_s"),
        i64("thread_r"),
        i64("log_s"),
        i64("phys_s"),
        i64("log_r"),
        i64("phys_r"),
        i64("size_s"),
        i64("tag"),
        halves,
        len(sends) - len(m),
        len(recvs) - len(m),
    )


def _aligned(t: np.ndarray, reports: np.ndarray, clocks: list[Clock]) -> np.ndarray:
    out = np.empty(len(t), np.int64)
    for r in np.unique(reports):
        sel = reports == r
        out[sel] = clocks[int(r)].apply(t[sel])
    return out


def translate_messages(msgs: Messages, clocks: list[Clock], out: Translation) -> None:
    """Matched messages -> one CommBatch (trace times), counted under ``mpi_messages``."""
    if not msgs.halves:
        return
    count = out.count(KIND)
    count.source_rows += msgs.halves
    count.translated_rows += 2 * len(msgs)
    count.drop("outside the -f/--filter-nvtx window", 2 * msgs.outside_window)
    count.drop("unmatched send (no receive with the same source, destination and tag)", msgs.unmatched_sends)
    count.drop(
        "unmatched receive (no send with the same source, destination and tag, or a wildcard)", msgs.unmatched_recvs
    )
    if not len(msgs):
        return
    log_s = _aligned(msgs.log_send, msgs.send_report, clocks)
    phys_s = _aligned(msgs.phys_send, msgs.send_report, clocks)
    log_r = _aligned(msgs.log_recv, msgs.recv_report, clocks)
    phys_r = _aligned(msgs.phys_recv, msgs.recv_report, clocks)
    # Paraver wants physical receive >= physical send.  A receive may complete before the send
    # call returns (eager protocol); the physical send is then drawn at the receive's end.
    late = phys_s > phys_r
    count.note(
        "physical send after the physical receive (send call returned later): drawn at the receive", int(late.sum())
    )
    phys_s = np.minimum(phys_s, phys_r)
    log_s = np.minimum(log_s, phys_s)
    out.comms.append(
        CommBatch(msgs.send_thread, msgs.recv_thread, log_s, phys_s, log_r, phys_r, np.maximum(msgs.size, 0), msgs.tag)
    )
    count.records += len(msgs)

"""MPI point-to-point messages: matched sends and receives across ranks -> communication records.

Matching (docs/nsys-mpi.md): the k-th send from rank A to rank B with tag t matches the k-th receive
posted on B from A with tag t (MPI's non-overtaking rule; k in call-start order; tag 0 is a tag like any
other).  Peers are world ranks: nsys records the rank in the call's communicator (``remoteRank``), made a
world rank through the run's communicators (model/communicators.py).  Receives with MPI_ANY_SOURCE /
MPI_ANY_TAG (a negative peer or tag) then take, in posting order per receiver, the first unmatched send to
their rank that fits them.  What stays unmatched, or is on a process outside the model or without a
rank, is counted.

The halves are keyed by process and OS thread (every MPI call POP counts), not by the trace's rows: the
alignment and POP's replay see the same messages whatever -t translates.  Only the communication records
need rows: a message with a side on a thread that is not one has none, and is counted as not translated.

MPI_Sendrecv(_replace) is both a send and a receive: exported as two rows of one call (same thread, start
and name), the first (in row order) is the send half and the second the receive half; a single row stands
for both halves with the same peer and tag.  A persistent request (MPI_*send_init / MPI_Recv_init) is one
message per MPI_Start/MPI_Startall of it.

Times, as Extrae writes them (core/extrae_mpi.py): logical send = send call start, physical send = send
call end (a persistent send: its start call's); logical receive = receive call start, physical receive =
receive call end.  For MPI_Irecv/MPI_Imrecv and persistent receives: logical receive = end of the posting
call, physical receive = end of the Wait/Test row on the same thread that completed its request (its end
when no such row exists).  Size = bytes sent (the receive row holds the buffer's capacity, which may exceed
the message); tag = MPI tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import pandas as pd

from nsys2prv.core.extrae_mpi import (
    NONBLOCKING_RECV_CALLS,
    PERSISTENT_RECV_CALLS,
    PERSISTENT_SEND_CALLS,
    RECV_CALLS,
    SEND_CALLS,
    SENDRECV_CALLS,
    START_CALLS,
    SYNCHRONOUS_SEND_CALLS,
)
from nsys2prv.core.jit import kernel
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.communicators import Communicators
from nsys2prv.model.resources import Model
from nsys2prv.nsys.ids import pid_of
from nsys2prv.nsys.readers.mpi import RawMpi
from nsys2prv.translate.records import CommBatch, Translation

KIND = "mpi_messages"


@dataclass
class Messages:
    send_report: np.ndarray
    recv_report: np.ndarray
    send_thread: np.ndarray  # the trace's thread (row) of the send call (-1: none, e.g. not under -t)
    recv_thread: np.ndarray
    log_send: np.ndarray  # report-local times (sender's / receiver's report)
    phys_send: np.ndarray
    log_recv: np.ndarray
    phys_recv: np.ndarray
    size: np.ndarray
    tag: np.ndarray
    recv_start: np.ndarray  # start of the receive call (report-local): the receive was posted after it
    synchronous: np.ndarray  # bool: the send completes only once the receive is posted (MPI_Ssend)
    send_gtid: np.ndarray  # Nsight Systems' globalTid of the send call's thread (its process and OS thread)
    recv_gtid: np.ndarray
    halves: int = 0  # send and receive halves seen
    unmatched_sends: int = 0
    unmatched_recvs: int = 0
    outside_window: int = 0  # matched, but not inside the -f/--filter-nvtx window
    wildcards: int = 0  # receives with MPI_ANY_SOURCE or MPI_ANY_TAG (matched in arrival order where they can)

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
        return self.cut(keep, outside=int((~keep).sum()))

    def cut(self, keep: np.ndarray, outside: int = 0) -> "Messages":
        """Only the messages ``keep`` says (every per-message array; ``outside`` more counted as outside
        the -f window)."""
        arrays = {f.name: v[keep] for f in fields(self) if isinstance(v := getattr(self, f.name), np.ndarray)}
        return replace(self, **arrays, outside_window=self.outside_window + outside)


def _halves(r: int, raw: RawMpi, model: Model, comms: Communicators) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Report ``r``'s sends and receives: (report, thread, src, dst, tag, size, log, phys) each, peers as
    world ranks (nsys records the rank in the call's communicator)."""
    waits = raw.waits
    p2p = raw.p2p.assign(peer=comms.resolve(r, raw.p2p)[1])
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
    rows = _calls(p2p)
    sends = rows[is_send].assign(
        log=lambda d: d["start"], phys=lambda d: d["end"], sync=name[is_send].isin(SYNCHRONOUS_SEND_CALLS).to_numpy()
    )
    recvs = rows[is_recv]
    nb = name[is_recv].isin(NONBLOCKING_RECV_CALLS).to_numpy()
    recvs = recvs.assign(log=np.where(nb, recvs["end"], recvs["start"]), phys=recvs["end"].to_numpy())
    done = waits[~waits["name"].isin(START_CALLS).to_numpy()]
    post = nb & (recvs["request"].to_numpy() != 0)
    if post.any() and len(done):
        phys = recvs["phys"].to_numpy().copy()
        phys[post] = _completion(recvs[post], done, phys[post])
        recvs = recvs.assign(phys=phys)
    p_sends, p_recvs = _persistent(name, rows, waits, done)
    sends, recvs = pd.concat([sends, p_sends]), pd.concat([recvs, p_recvs])
    return _by_rank(r, sends, model, "src", "dst"), _by_rank(r, recvs, model, "dst", "src")


def _calls(df: pd.DataFrame, start: str = "start", end: str = "end") -> pd.DataFrame:
    """The point-to-point calls' columns the matching uses, int64 (their times from ``start``/``end``)."""
    cols = {
        "tid": "tid",
        "peer": "peer",
        "tag": "tag",
        "size": "size",
        "start": start,
        "end": end,
        "request": "request",
    }
    return pd.DataFrame({c: df[src].to_numpy(np.int64) for c, src in cols.items()})


def _persistent(name, rows, waits, done) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Persistent requests: every MPI_Start/MPI_Startall row of a request made by MPI_*send_init or
    MPI_Recv_init (the latest such call on its thread and request before the start) is one message:
    a send at the start call, or a receive posted at the start's end and completed by its Wait/Test."""
    cols = ["tid", "peer", "tag", "size", "start", "end", "request", "log", "phys"]
    init = name.isin(PERSISTENT_SEND_CALLS | PERSISTENT_RECV_CALLS).to_numpy()
    starts = waits[waits["name"].isin(START_CALLS).to_numpy()]
    if not init.any() or starts.empty:
        return pd.DataFrame(columns=cols), pd.DataFrame(columns=cols)
    made = rows[init].assign(send=name[init].isin(PERSISTENT_SEND_CALLS).to_numpy(), t=lambda d: d["end"])
    made = made.sort_values("t", kind="stable")
    st = starts.rename(columns={"start": "s_start", "end": "s_end"}).assign(t=lambda d: d["s_start"])
    m = pd.merge_asof(
        st.sort_values("t", kind="stable"),
        made[["t", "tid", "request", "peer", "tag", "size", "send"]],
        on="t",
        by=["tid", "request"],
        direction="backward",
    )
    m = m[m["send"].notna()]
    msg = _calls(m, "s_start", "s_end")
    send = m["send"].to_numpy(bool)
    sends = msg[send].assign(log=lambda d: d["start"], phys=lambda d: d["end"], sync=False)
    recvs = msg[~send]
    phys = recvs["end"].to_numpy().copy()
    if len(recvs) and len(done):
        phys = _completion(recvs, done, phys)
    return sends, recvs.assign(log=recvs["end"].to_numpy(), phys=phys)


def _by_rank(r: int, half: pd.DataFrame, model: Model, own: str, other: str) -> pd.DataFrame:
    """One side's rows with their report, thread (the trace's row, -1: none), globalTid, own rank
    (``own``: its process's, whether or not the thread is a row) and peer (``other``)."""
    gtid = half["tid"].to_numpy(np.int64)
    rank_of_process = np.array([-1 if t.rank is None else t.rank for t in model.processes] + [-1], np.int64)
    return pd.DataFrame(
        {
            "report": r,
            "thread": model.cpu_threads(r, gtid),
            "gtid": gtid,
            own: rank_of_process[model.processes_of(r, pid_of(gtid))],  # process -1 -> the trailing -1
            other: half["peer"].to_numpy(np.int64),
            "tag": half["tag"].to_numpy(np.int64),
            "size": half["size"].to_numpy(np.int64),
            "log": half["log"].to_numpy(np.int64),
            "phys": half["phys"].to_numpy(np.int64),
            "start": half["start"].to_numpy(np.int64),
            "sync": half["sync"].to_numpy(bool) if "sync" in half else False,
        }
    )


def _completion(posted: pd.DataFrame, waits: pd.DataFrame, default: np.ndarray) -> np.ndarray:
    """End of the first Wait/Test row on the same thread and request that starts after the post ended
    (nsys records a Test row only for the test that completed a request)."""
    left = pd.DataFrame(
        {
            "tid": posted["tid"].to_numpy(np.int64),
            "request": posted["request"].to_numpy(np.int64),
            "t": posted["end"].to_numpy(np.int64),
            "i": np.arange(len(posted)),
        }
    ).sort_values("t")
    right = waits.rename(columns={"start": "t"}).sort_values("t")
    m = pd.merge_asof(left, right[["t", "tid", "request", "end"]], on="t", by=["tid", "request"], direction="forward")
    out = default.copy()
    ok = m["end"].notna().to_numpy()
    out[m["i"].to_numpy()[ok]] = m["end"].to_numpy()[ok].astype(np.int64)
    return out


@kernel(interpret_below=20_000)
def _wildcards(s_dst, s_src, s_tag, r_dst, r_src, r_tag):
    """Wildcard receives (source or tag < 0) take, in posting order per destination, the earliest
    unmatched send to their destination that fits them (the first to arrive).  Both sides sorted by
    (destination, time); returns the send of each receive (-1: none)."""
    out = np.full(len(r_dst), -1, np.int64)
    taken = np.zeros(len(s_dst), np.bool_)
    lo = 0
    for i in range(len(r_dst)):
        while lo < len(s_dst) and s_dst[lo] < r_dst[i]:
            lo += 1
        while lo < len(s_dst) and s_dst[lo] == r_dst[i] and taken[lo]:
            lo += 1  # (a taken prefix is never looked at again)
        j = lo
        while j < len(s_dst) and s_dst[j] == r_dst[i]:
            if not taken[j] and (r_src[i] < 0 or s_src[j] == r_src[i]) and (r_tag[i] < 0 or s_tag[j] == r_tag[i]):
                taken[j] = True
                out[i] = j
                break
            j += 1
    return out


def _wildcard_matches(left: pd.DataFrame, wild: pd.DataFrame) -> pd.DataFrame:
    """The wildcard receives matched with the sends ``left`` unmatched (``_wildcards``; their order of
    arrival: their start on the session clocks, ``wall``), as the rows of the specific matches: the
    send's columns with _s, the receive's with _r, its key from the send."""
    left = left.sort_values(["dst", "wall"], kind="stable")
    side = lambda d: [d[c].to_numpy(np.int64) for c in ("dst", "src", "tag")]  # noqa: E731
    pick = _wildcards(*side(left), *side(wild))
    got = pick >= 0
    snd, rcv = left.iloc[pick[got]], wild[got]
    out = {f"{c}_s": snd[c].to_numpy() for c in ("report", "thread", "gtid", "size", "log", "phys", "start", "sync")}
    out |= {c: snd[c].to_numpy() for c in ("src", "dst", "tag")}
    out |= {f"{c}_r": rcv[c].to_numpy() for c in ("report", "thread", "gtid", "size", "log", "phys", "start", "sync")}
    return pd.DataFrame(out)


def match_messages(raw: Sequence[RawMpi | None], model: Model, session: list[int], comms: Communicators) -> Messages:
    """raw[r]: report r's raw MPI rows (mpi.read_p2p), or None; session[r]: the report's session offset
    (align.session_offsets); comms: the run's communicators (the peers are ranks in them).  Specific
    receives match by MPI's non-overtaking rule (the k-th send A->B with tag t, the k-th receive on B from
    A with tag t); wildcard receives then take the sends left, in the order they were sent on the session
    clocks (``_wildcards``)."""
    parts = [_halves(r, x, model, comms) for r, x in enumerate(raw) if x is not None and len(x.p2p)]
    cols = ["report", "thread", "gtid", "src", "dst", "tag", "size", "log", "phys", "start", "sync"]
    sends = pd.concat([p[0][cols] for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=cols)
    recvs = pd.concat([p[1][cols] for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=cols)
    ints = {c: np.int64 for c in cols if c != "sync"}
    sends, recvs = sends.astype(ints | {"sync": bool}), recvs.astype(ints | {"sync": bool})
    halves = len(sends) + len(recvs)
    key = ["src", "dst", "tag"]
    ok_s = ((sends["src"] >= 0) & (sends["dst"] >= 0) & (sends["tag"] >= 0)).to_numpy()
    known_r = (recvs["dst"] >= 0).to_numpy()
    specific = known_r & (recvs["src"] >= 0).to_numpy() & (recvs["tag"] >= 0).to_numpy()
    s = sends[ok_s].sort_values([*key, "log"], kind="stable")
    r = recvs[specific].sort_values([*key, "log"], kind="stable")
    s = s.assign(k=s.groupby(key, sort=False).cumcount())
    r = r.assign(k=r.groupby(key, sort=False).cumcount())
    m = s.reset_index().merge(r, on=[*key, "k"], suffixes=("_s", "_r"))
    m_index = m["index"].to_numpy()
    m = m.drop(columns=["index", "k"])
    wild = recvs[known_r & ~specific].sort_values(["dst", "log"], kind="stable")
    if len(wild):
        left = s[~s.index.isin(m_index)]
        left = left.assign(wall=left["log"].to_numpy() + np.asarray(session, np.int64)[left["report"].to_numpy()])
        m = pd.concat([m, _wildcard_matches(left, wild)], ignore_index=True)
    m = m.sort_values(["log_s", "report_s"], kind="stable")
    col = lambda c: m[c].to_numpy(np.int64)  # noqa: E731
    return Messages(
        col("report_s"),
        col("report_r"),
        col("thread_s"),
        col("thread_r"),
        col("log_s"),
        col("phys_s"),
        col("log_r"),
        col("phys_r"),
        col("size_s"),
        col("tag"),
        col("start_r"),
        m["sync_s"].to_numpy(bool),
        col("gtid_s"),
        col("gtid_r"),
        halves,
        len(sends) - len(m),
        len(recvs) - len(m),
        wildcards=int(len(wild)),
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
    rows = (msgs.send_thread >= 0) & (msgs.recv_thread >= 0)
    count.translated_rows += 2 * int(rows.sum())
    count.drop("outside the -f/--filter-nvtx window", 2 * msgs.outside_window)
    count.drop("unmatched send (no receive with the same source, destination and tag)", msgs.unmatched_sends)
    count.drop("unmatched receive (no send with the same source, destination and tag)", msgs.unmatched_recvs)
    count.note(
        "receives with MPI_ANY_SOURCE or MPI_ANY_TAG: matched with the first fitting send to arrive", msgs.wildcards
    )
    count.drop(
        "matched, but a side's thread is not a row of the trace (no communication record)", 2 * int((~rows).sum())
    )
    if not rows.any():
        return
    msgs = msgs.cut(rows)
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

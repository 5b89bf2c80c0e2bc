"""An ideal-network replay of a run's MPI calls: serialisation and transfer efficiency.

POP splits MPI communication efficiency (max useful / T) into *serialisation* efficiency (time lost
to the application's dependencies: waiting for a late partner even on a perfect network) and
*transfer* efficiency (time lost to the network itself):

    T_ideal  = the run's elapsed time replayed on an ideal network (zero latency, infinite bandwidth)
    SerE     = max_i Useful_i / T_ideal          TrfE = T_ideal / T          SerE x TrfE = CommE

The replay, per thread in call order (each thread that makes MPI calls its own sequence, as Dimemas
replays a trace's threads: ``_sequences``):

- computation bursts (the time between consecutive MPI calls, from the start of the process's life to
  its first call and from its last call to its end; a thread other than the main one ends with its last
  call) keep their measured durations;
- an MPI call takes no time of its own, except waiting for its partners:
  - a synchronising collective (every blocking collective but Reduce: Barrier, Bcast, Gather(v),
    Scatter(v), Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter, Scan; and Init) ends when the
    last participant has entered it (the k-th call of one name on one communicator on every process
    that makes it);
  - Reduce: the root ends when the last participant has entered, the others at once (root unknown:
    no wait);
  - a nonblocking collective (Iallreduce, Ireduce, ...) is entered by its call (no wait); the MPI_Wait of
    its thread that completes it ends when the last participant has entered it (an Ireduce's root or not);
  - this is Dimemas's model (its GLOBAL_OP_SYNC and, for Reduce only, GLOBAL_OP_ROOT_SYNC; prv2dim's
    barrier at the end of MPI_Init), so that Dimemas with an ideal network replays our trace to the
    same T (tests/test_dimemas.py); Finalize and the communicator constructors do not synchronise;
  - a blocking receive, or the Wait/Test that completes a receive, ends when the matching send has
    started (the message is there the moment it is posted); sends never wait (eager);
  - everything else (Isend, Irecv, Comm_rank, ...) takes no time.
- Where the export names no peers (MPI recorded as NVTX ranges by Nsight Systems 2022.x), only the
  collectives synchronise; receives do not wait (said in ``notes``).

Cross-process dependencies are resolved by sweeping the processes until no call can complete (numba):
cost O(calls + processes x dependency depth).  A call whose partner never arrives (an unmatched
receive, a collective not every member records) completes when nothing else can, and is counted.

Times: the replay starts every process at the start of its own life (a late start is not the
network's fault) on the run's aligned timeline.  A window (a region, an iteration) has its own T_ideal
from ``Replay.window``: the window replayed on its own, as ``-f`` cuts it -- every process starting at the
window start (or its later life start), calls clipped at the borders, waiting only for partners inside
the window -- so that a border inside a long wait (a rank still in MPI_Init, or in the previous
iteration's collective) never charges the window with the wait outside it (T_ideal too long, transfer
efficiency above 1).  It equals the replay of the same window cut with ``-f`` (tests/test_replay.py).
``replayed(rank, t)`` maps an original time of a sequence (a process's thread) onto the whole run's
replayed timeline (monotone: a time inside a call maps to min(replayed start + time spent in the call so
far, replayed end)); the metrics do not use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.core.extrae_mpi import ALL_TO_ALL_COLLECTIVES, ROOT_SYNC_COLLECTIVES
from nsys2prv.core.jit import kernel

ZERO, SYNC, ROOT_GATHER, RECV = 0, 1, 2, 4
# a nonblocking collective's call (POST: the member enters the operation, waits for nothing) and the MPI_Wait
# that completes it (WAIT: waits for every member's POST -- MPI_Ireduce's too, root or not, as Dimemas 5.5
# replays prv2dim's records -- and enters nothing)
POST, WAIT = 5, 6

# As Dimemas replays them (core/extrae_mpi.ROOT_SYNC_COLLECTIVES): every blocking collective but
# MPI_Reduce synchronises its members, whatever its root; MPI_Init ends with a barrier (prv2dim's
# default). MPI_Finalize and the communicator constructors are no collective operation to Dimemas.
GATHER_CALLS = frozenset(ROOT_SYNC_COLLECTIVES)
SYNC_CALLS = frozenset(ALL_TO_ALL_COLLECTIVES) | frozenset(
    {
        "MPI_Scan",
        "MPI_Exscan",
        "MPI_Init",
        "MPI_Init_thread",
        "MPI_Bcast",
        "MPI_Scatter",
        "MPI_Scatterv",
        "MPI_Gather",
        "MPI_Gatherv",
    }
)
ALIASES = {"MPI_Init_thread": "MPI_Init"}
# Nonblocking collectives, as prv2dim gives them to Dimemas: the call enters the operation, the first MPI_Wait
# of its thread after it that completes no message waits for every member to have entered it (a Test,
# Waitall, ... is no such Wait: nobody waits for the operation then).
NONBLOCKING_COLLECTIVES = {
    f"MPI_I{n[4:].lower()}": n for n in (*SYNC_CALLS, *GATHER_CALLS) if n not in ("MPI_Init", "MPI_Init_thread")
}


@dataclass
class Dependencies:
    """What makes calls wait, kept for replaying a window on its own (``Replay.window``): per call
    its kind, collective instance (-1: none) and whether it is the root; per instance its root's
    call (-1: none); receive dependencies as CSR by call (dep_ptr, dep_send = the send calls)."""

    kind: np.ndarray
    coll: np.ndarray
    root_me: np.ndarray
    inst_root: np.ndarray
    dep_ptr: np.ndarray
    dep_send: np.ndarray


@dataclass
class Replay:
    """The replayed run: per sequence (a process's thread, ``_sequences``), its calls' original and
    replayed times."""

    sequences: int  # one per process, and one per other thread of a process that makes MPI calls
    start: np.ndarray  # per call, sorted by (rank = sequence, start): original start, end
    end: np.ndarray
    rank: np.ndarray
    arrive: np.ndarray  # replayed start (= arrival) and end of every call
    done: np.ndarray
    lo: np.ndarray  # per sequence: life start (original = replayed), original life end
    hi: np.ndarray
    final: np.ndarray  # per sequence: replayed end of life
    deps: Dependencies
    unresolved: int = 0  # calls completed without their partner (unmatched)
    notes: list[str] = field(default_factory=list)
    proc: np.ndarray | None = None  # per sequence (``_sequences``: a process's thread): its process

    @property
    def elapsed(self) -> int:
        """T_ideal of the whole run."""
        return int(self.final.max() - self.lo.min()) if self.sequences else 0

    def replayed(self, ranks: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Replayed time of original times ``t`` of sequences ``ranks`` (vectorised; the processes where
        each makes its MPI calls on one thread)."""
        ranks, t = np.asarray(ranks, np.int64), np.asarray(t, np.int64)
        first = np.searchsorted(self.rank, ranks, "left")
        last = np.searchsorted(self.rank, ranks, "right")
        out = np.empty(len(t), np.int64)
        for r in np.unique(ranks):
            sel = ranks == r
            a, b = int(first[sel][0]), int(last[sel][0])
            tt = t[sel]
            if a == b:
                out[sel] = tt
                continue
            j = np.searchsorted(self.start[a:b], tt, "right") - 1 + a  # the last call started by tt
            before = j < a  # before the first call: the life's first burst
            jj = np.maximum(j, a)
            # inside a call: time runs on from its replayed start until its replayed end, no further
            # (a window border inside a long wait must not pull the window back to the call's arrival)
            inside = ~before & (tt < self.end[jj])
            res = np.where(
                inside,
                np.minimum(self.arrive[jj] + (tt - self.start[jj]), self.done[jj]),
                self.done[jj] + (tt - self.end[jj]),
            )
            res = np.where(before, tt, res)
            out[sel] = res
        return out

    def window(self, lo: int, hi: int) -> int:
        """T_ideal of the window [lo, hi] of the original timeline: the window replayed on its own, as
        ``-f`` cuts it -- every process clipped to its life and starting at the window start (or its
        later life start), calls clipped at the borders, waiting only for partners inside the window
        (a collective's members and a receive's sends that lie in it; instances matched over the
        whole run).  A border inside a call therefore never charges the window with the part of the
        wait outside it."""
        if not self.sequences:
            return hi - lo
        a = np.clip(np.full(self.sequences, lo, np.int64), self.lo, self.hi)
        b = np.clip(np.full(self.sequences, hi, np.int64), self.lo, self.hi)
        alive = b > a
        if not alive.any():
            return 0
        if lo <= int(self.lo.min()) and hi >= int(self.hi.max()):
            return self.elapsed  # the whole run
        deps = self.deps
        bounds = np.searchsorted(self.rank, np.arange(self.sequences + 1), "left").astype(np.int64)
        sel = _window_calls(bounds, self.start, self.end, self._cummax_end(bounds), a, b)
        s = np.maximum(self.start[sel], a[self.rank[sel]])
        e = np.minimum(self.end[sel], b[self.rank[sel]])
        kind = deps.kind[sel]
        coll = deps.coll[sel]
        inst = coll >= 0
        enters = inst & (kind != WAIT)  # (a Wait is no member of its instance)
        ids, inv = np.unique(coll[inst], return_inverse=True)
        new_coll = np.full(len(sel), -1, np.int64)
        new_coll[inst] = inv.reshape(-1)
        inst_size = np.bincount(new_coll[enters], minlength=len(ids)).astype(np.int64)
        root_call = deps.inst_root[ids]
        inst_root = _position(sel, root_call)
        # receive dependencies whose send lies in the window too
        lo_d, hi_d = deps.dep_ptr[sel], deps.dep_ptr[sel + 1]
        cnt = hi_d - lo_d
        owner = np.repeat(np.arange(len(sel), dtype=np.int64), cnt)
        flat = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo_d, cnt)
        send = _position(sel, deps.dep_send[flat])
        keep = send >= 0
        owner, send = owner[keep], send[keep]
        dep_ptr = np.zeros(len(sel) + 1, np.int64)
        dep_ptr[1:] = np.cumsum(np.bincount(owner, minlength=len(sel)))
        wb = np.searchsorted(self.rank[sel], np.arange(self.sequences + 1), "left").astype(np.int64)
        _, _, final, _ = _replay(
            wb, s, e, kind, new_coll, deps.root_me[sel], inst_size, inst_root, dep_ptr, send, a.copy(), b.copy()
        )
        return int(final[alive].max() - a[alive].min())

    def _cummax_end(self, bounds: np.ndarray) -> np.ndarray:
        """Per process, the running maximum of its calls' ends (calls in start order): monotone, so the
        first call that may reach past a time is a binary search away."""
        cm = getattr(self, "_cm", None)
        if cm is None:
            cm = _running_max(bounds, self.end)
            object.__setattr__(self, "_cm", cm)
        return cm


def _position(sel: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Position in ``sel`` (sorted call indexes) of each of ``calls``; -1: not selected (or -1)."""
    j = np.searchsorted(sel, calls)
    jj = np.minimum(j, max(len(sel) - 1, 0))
    hit = (calls >= 0) & (j < len(sel)) & (sel[jj] == calls) if len(sel) else np.zeros(len(calls), bool)
    return np.where(hit, jj, -1).astype(np.int64)


@kernel(interpret_below=5_000)
def _running_max(bounds, end):
    out = end.copy()
    for r in range(len(bounds) - 1):
        for i in range(bounds[r] + 1, bounds[r + 1]):
            if out[i - 1] > out[i]:
                out[i] = out[i - 1]
    return out


@kernel(interpret_below=5_000)
def _window_calls(bounds, start, end, cm, a, b):
    """Indexes of the calls of each process r overlapping [a[r], b[r]] (a call of no duration: inside
    it), ascending."""
    n_rank = len(bounds) - 1
    first = np.zeros(n_rank, np.int64)
    last = np.zeros(n_rank, np.int64)
    total = 0
    for r in range(n_rank):
        lo_i, hi_i = bounds[r], bounds[r + 1]
        if a[r] >= b[r]:
            first[r] = last[r] = lo_i
            continue
        first[r] = lo_i + np.searchsorted(cm[lo_i:hi_i], a[r], "left")  # the first that may end by a
        last[r] = lo_i + np.searchsorted(start[lo_i:hi_i], b[r], "right")
        if last[r] < first[r]:
            last[r] = first[r]
        total += last[r] - first[r]
    out = np.empty(total, np.int64)
    k = 0
    for r in range(n_rank):
        for i in range(first[r], last[r]):
            if (end[i] > a[r] and start[i] < b[r]) or (start[i] == end[i] and a[r] <= start[i] <= b[r]):
                out[k] = i
                k += 1
    return out[:k]


def classify(categories: np.ndarray) -> np.ndarray:
    """The replay kind of each distinct MPI function name: a synchronising or rooted collective, else
    ZERO (a call that completes a receive is made RECV where its messages are known, whatever its name;
    without them receives do not wait)."""
    kind = np.full(len(categories), ZERO, np.int64)
    for i, n in enumerate(categories):
        n = ALIASES.get(n, NONBLOCKING_COLLECTIVES.get(n, n))
        kind[i] = SYNC if n in SYNC_CALLS else ROOT_GATHER if n in GATHER_CALLS else ZERO
    return kind


def _codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the distinct values (categorical columns: as they are)."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = values.array
        return np.asarray(cat.codes, np.int64), np.asarray(cat.categories, object)
    codes, uniq = pd.factorize(np.asarray(values))
    return codes.astype(np.int64), np.asarray(uniq, object)


def _nonblocking_at_waits(names, name_code, rank, kind, completes_recv) -> np.ndarray:
    """Nonblocking collectives (``NONBLOCKING_COLLECTIVES``) as Dimemas replays them: the call enters the
    operation (``kind`` POST, in place: it waits for nothing), the first MPI_Wait of its thread after it
    that completes no message waits for the operation (WAIT) -- for the last member to have *entered* it,
    not to have reached its Wait; on every member, MPI_Ireduce's root or not.  Calls
    sorted by (sequence ``rank``, start, end); ``completes_recv`` (bool, per call): the calls that complete
    a message (by their identity: another thread's call ending at the same time is not one).  Returns,
    per call, the nonblocking call that the Wait completes (-1: none)."""
    wait_of = np.full(len(rank), -1, np.int64)
    icoll = np.flatnonzero(np.isin(names, list(NONBLOCKING_COLLECTIVES)))
    at = np.flatnonzero(np.isin(name_code, icoll))
    if not len(at):
        return wait_of
    kind[at] = POST
    wait = np.flatnonzero(names == "MPI_Wait")
    waits = np.flatnonzero(np.isin(name_code, wait) & np.isin(rank, np.unique(rank[at])))
    free = waits[~completes_recv[waits]]  # (not completing a receive)
    pending: dict[int, list[int]] = {}
    calls = sorted([(int(i), 0) for i in at] + [(int(i), 1) for i in free])
    for i, is_wait in calls:
        queue = pending.setdefault(int(rank[i]), [])
        if not is_wait:
            queue.append(i)
        elif queue:
            c = queue.pop(0)
            wait_of[i] = c
            kind[i] = WAIT
    return wait_of


def _find(bounds: np.ndarray, times: np.ndarray, rank: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index of the call of process ``rank`` whose time (sorted within each process) equals ``t``; -1: none."""
    out = np.full(len(t), -1, np.int64)
    order = np.argsort(rank, kind="stable")
    r_sorted = rank[order]
    edges = np.searchsorted(r_sorted, np.arange(len(bounds)), "left")
    for r in np.flatnonzero(np.diff(edges)):
        if r >= len(bounds) - 1:
            continue
        sel = order[edges[r] : edges[r + 1]]
        a, b = bounds[r], bounds[r + 1]
        j = np.searchsorted(times[a:b], t[sel], "left")
        hit = (j < b - a) & (times[np.minimum(a + j, max(b - 1, a))] == t[sel]) if b > a else np.zeros(len(sel), bool)
        out[sel] = np.where(hit, a + j, -1)
    return out


def replay(calls: pd.DataFrame, lifetimes: np.ndarray, messages: pd.DataFrame | None = None) -> Replay:
    """Replay a run.

    ``calls``: one row per MPI call with columns rank (0..P-1), start, end, name, root (the root's rank
    for rooted collectives, -1 unknown), comm (communicator, 0 unknown).  ``lifetimes``: (P, 2) int64, each
    process's life [start, end] on the same timeline.  ``messages``: matched point-to-point messages with
    columns send_rank, send_start (the send call's start) and recv_rank, recv_end (the end of the call that
    completed the receive: the Recv, Sendrecv or Wait), or None when the export names no peers; with
    optional columns send_thread and recv_thread (the calls' ``thread`` ids) a message's calls are found
    on their threads (else by process and time alone: two threads' calls at the same time are confused).
    An optional column ``thread`` (any id of the calling thread) replays each thread as its own sequence
    (``_sequences``); without it every process is one.
    """
    lifetimes = np.asarray(lifetimes, np.int64).reshape(-1, 2)
    n_proc = len(lifetimes)
    proc0, start0, end0 = (calls[c].to_numpy(np.int64) for c in ("rank", "start", "end"))
    thread0 = calls["thread"].to_numpy(np.int64) if "thread" in calls else np.zeros(len(proc0), np.int64)
    seq0, seq_proc, lo, hi = _sequences(proc0, thread0, start0, end0, lifetimes)
    n_rank = len(seq_proc)  # (the replay's "ranks" are the sequences: ``Replay.sequences``)
    order = np.lexsort((end0, start0, seq0))
    rank, start, end = seq0[order], start0[order], end0[order]
    proc = proc0[order]
    # the calls by (process, start): the order of a process's calls over its threads
    by_start = np.arange(len(order)) if n_rank == n_proc else np.lexsort((end, start, proc))
    name_code, names = _codes(calls["name"])
    name_code = name_code[order]
    comm = calls["comm"].to_numpy(np.int64)[order]
    root = calls["root"].to_numpy(np.int64)[order]
    have_peers = messages is not None
    kind = classify(names)[name_code]
    notes = (
        []
        if have_peers
        else [
            "the reports name no MPI peers (MPI as NVTX ranges): only collectives "
            "synchronise in the replay; receives do not wait"
        ]
    )

    # receive completions: the call that ended at recv_end (of process recv_rank, and of thread recv_thread
    # where given) waits for the send starting at send_start
    bounds = np.searchsorted(rank, np.arange(n_rank + 1), "left").astype(np.int64)
    send = recv = np.zeros(0, np.int64)
    if messages is not None and len(messages):
        send, recv = _message_calls(messages, proc, thread0[order], rank, start, end, by_start, n_proc)
    completes_recv = np.zeros(len(rank), np.bool_)
    completes_recv[recv[recv >= 0]] = True  # (its send found or not)
    ok = (send >= 0) & (recv >= 0)
    recv, send = recv[ok], send[ok]
    wait_of = _nonblocking_at_waits(names, name_code, rank, kind, completes_recv)

    # collective instances: the k-th call of (name, communicator) on each process (its threads' calls in
    # start order)
    n = len(rank)
    coll = np.full(n, -1, np.int64)
    root_me = np.zeros(n, np.bool_)
    inst_size = inst_root = np.zeros(0, np.int64)
    idx = np.flatnonzero((kind == SYNC) | (kind == ROOT_GATHER) | (kind == POST))  # (the members' entries)
    if len(idx):
        comm_code, _ = _codes(comm[idx])
        op = name_code[idx] * (int(comm_code.max()) + 1) + comm_code  # (name, communicator)
        pos = np.empty(len(order), np.int64)
        pos[by_start] = np.arange(len(order))
        grp = np.lexsort((pos[idx], op, proc[idx]))  # per (process, op), in call order
        key = proc[idx][grp] * (int(op.max()) + 1) + op[grp]
        first = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
        k = np.arange(len(idx)) - np.repeat(first, np.diff(np.r_[first, len(idx)]))
        kth = np.empty(len(idx), np.int64)
        kth[grp] = k
        ids = np.unique(op * (int(kth.max()) + 1) + kth, return_inverse=True)[1].reshape(-1)
        coll[idx] = ids
        inst_size = np.bincount(ids).astype(np.int64)
        me = root[idx] == proc[idx]
        root_me[idx] = me
        inst_root = np.full(len(inst_size), -1, np.int64)
        inst_root[ids[me]] = idx[me]
        waits = np.flatnonzero(wait_of >= 0)  # a Wait waits for the instance its nonblocking call entered
        coll[waits], root_me[waits] = coll[wait_of[waits]], root_me[wait_of[waits]]
        rooted = kind[idx] == ROOT_GATHER
        if rooted.any() and (root[idx][rooted] < 0).all():
            notes.append("roots of rooted collectives unknown: they do not synchronise in the replay")

    dep_ptr = np.zeros(n + 1, np.int64)
    dep_send = np.zeros(0, np.int64)
    if (~ok).any():
        notes.append(f"{int((~ok).sum())} message(s) not found among the calls: their receives do not wait")
    if len(recv):
        o = np.argsort(recv, kind="stable")
        recv, send = recv[o], send[o]
        dep_ptr[1:] = np.cumsum(np.bincount(recv, minlength=n))
        dep_send = send
        kind[recv] = RECV  # whatever its name, a call completing a receive waits for it

    arrive, done, final, unresolved = _replay(
        bounds,
        start,
        end,
        kind,
        coll,
        root_me,
        inst_size,
        inst_root,
        dep_ptr,
        dep_send,
        lo.copy(),
        hi.copy(),
    )
    if unresolved:
        notes.append(f"{unresolved} call(s) waited for a partner that never came: completed without it")
    return Replay(
        n_rank,
        start,
        end,
        rank,
        arrive,
        done,
        lo,
        hi,
        final,
        Dependencies(kind, coll, root_me, inst_root, dep_ptr, dep_send),
        int(unresolved),
        notes,
        seq_proc,
    )


def _sequence_of(proc, thread, seq, p, t) -> np.ndarray:
    """The sequence of each (process ``p``, thread ``t``) among the calls' ``proc``, ``thread`` and ``seq``
    (-1: a thread without calls)."""
    inv = np.unique(np.r_[thread, t], return_inverse=True)[1].reshape(-1)
    width = int(inv.max()) + 1 if len(inv) else 1
    keys, first = np.unique(proc * width + inv[: len(thread)], return_index=True)
    q = np.asarray(p, np.int64) * width + inv[len(thread) :]
    if not len(keys):
        return np.full(len(q), -1, np.int64)
    j = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
    return np.where(keys[j] == q, seq[first[j]], -1).astype(np.int64)


def _message_calls(messages, proc, thread, rank, start, end, by_start, n_proc) -> tuple[np.ndarray, np.ndarray]:
    """Per message, its send call (of process send_rank starting at send_start) and the call completing
    its receive (of process recv_rank ending at recv_end); by sequence where the messages name their
    threads too (columns send_thread, recv_thread: the calls' thread ids), so that two threads of a
    process with calls at the same time are not confused (-1: not found)."""
    out = []
    for side, times, col in (("send", start, "send_start"), ("recv", end, "recv_end")):
        t = messages[col].to_numpy(np.int64)
        p = messages[f"{side}_rank"].to_numpy(np.int64)
        if f"{side}_thread" in messages:  # calls by (sequence, time)
            key = _sequence_of(proc, thread, rank, p, messages[f"{side}_thread"].to_numpy(np.int64))
            order = np.lexsort((times, rank))
            owner = rank
            n_key = int(rank.max()) + 1 if len(rank) else 0
        else:  # calls by (process, time)
            key = p
            order = by_start if side == "send" else np.lexsort((end, proc))
            owner = proc
            n_key = n_proc
        kb = np.searchsorted(owner[order], np.arange(n_key + 1), "left").astype(np.int64)
        pos = _find(kb, times[order], key, t)
        out.append(np.where(pos >= 0, order[np.maximum(pos, 0)], -1))
    return out[0], out[1]


def _sequences(proc, thread, start, end, lifetimes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The replay's sequences, as prv2dim gives a trace's threads to Dimemas: each thread of a process its
    own sequence of bursts and calls.  Per process first its main sequence -- the thread of its first
    call (MPI_Init's), or no call at all -- which lives the process's life; then its other threads (in
    the order of their first call in ``calls``), each living from the process's start (Dimemas starts
    every thread at the trace's start: its first burst runs to its first call at the same time) to the
    end of its last call (the last event prv2dim sees of it: with MPI alone, a thread's rows are its
    calls).  Returns the sequence of each call, each sequence's process, and each sequence's life."""
    n_proc = len(lifetimes)
    big = np.iinfo(np.int64).max
    lowest, highest = np.full(n_proc, big, np.int64), np.full(n_proc, -big, np.int64)
    np.minimum.at(lowest, proc, thread)
    np.maximum.at(highest, proc, thread)
    if (lowest == highest)[proc].all():  # one thread per process: the sequences are the processes
        return proc.copy(), np.arange(n_proc, dtype=np.int64), lifetimes[:, 0].copy(), lifetimes[:, 1].copy()
    first = np.lexsort((start, proc))
    head = first[np.r_[True, proc[first][1:] != proc[first][:-1]]]
    main = np.full(n_proc, -big, np.int64)
    main[proc[head]] = thread[head]
    is_main = thread == main[proc]
    sub = np.where(is_main, 0, _codes(thread)[0] + 1)  # 0: the process's main sequence
    width = int(sub.max()) + 1
    keys, inv = np.unique(np.r_[np.arange(n_proc, dtype=np.int64) * width, proc * width + sub], return_inverse=True)
    seq = inv.reshape(-1)[n_proc:].astype(np.int64)
    seq_proc, other = keys // width, keys % width > 0
    lo, hi = lifetimes[seq_proc, 0].copy(), lifetimes[seq_proc, 1].copy()
    last = np.full(len(keys), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, seq, end)
    early = np.full(len(keys), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(early, seq, start)
    lo[other] = np.minimum(lo[other], early[other])
    hi[other] = last[other]
    return seq, seq_proc, lo, hi


@kernel(interpret_below=5_000)
def _replay(bounds, start, end, kind, coll, root_me, inst_size, inst_root, dep_ptr, dep_send, lo, hi):
    n_rank = len(bounds) - 1
    n = len(start)
    arrive = np.full(n, -1, np.int64)
    done = np.full(n, -1, np.int64)
    inst_arrived = np.zeros(len(inst_size), np.int64)
    inst_max = np.zeros(len(inst_size), np.int64)
    ptr = bounds[:-1].copy()
    t = lo.copy()  # replayed time of each process
    prev_end = lo.copy()  # original end of its last completed call
    final = np.zeros(n_rank, np.int64)
    remaining = n
    unresolved = 0
    force = False
    while remaining > 0:
        progress = False
        for r in range(n_rank):
            while ptr[r] < bounds[r + 1]:
                e = ptr[r]
                k = kind[e]
                c = coll[e]
                if arrive[e] < 0:
                    arrive[e] = t[r] + max(start[e] - prev_end[r], 0)
                    if c >= 0 and k != WAIT:  # (a member entering the instance)
                        inst_arrived[c] += 1
                        if inst_arrived[c] == 1 or arrive[e] > inst_max[c]:
                            inst_max[c] = arrive[e]
                ready = True
                finish = arrive[e]
                if k == SYNC or k == WAIT or (k == ROOT_GATHER and root_me[e]):
                    if inst_arrived[c] < inst_size[c]:
                        ready = False
                    else:
                        finish = max(finish, inst_max[c])
                elif k == RECV:
                    for d in range(dep_ptr[e], dep_ptr[e + 1]):
                        s = dep_send[d]
                        if arrive[s] < 0:
                            ready = False
                            break
                        finish = max(finish, arrive[s])
                if not ready:
                    if force:  # nothing else could move: complete it without its partner
                        unresolved += 1
                        force = False
                    else:
                        break
                done[e] = finish
                t[r] = finish
                prev_end[r] = end[e]
                ptr[r] += 1
                remaining -= 1
                progress = True
        if not progress and remaining > 0:
            force = True
    for r in range(n_rank):
        final[r] = t[r] + max(hi[r] - prev_end[r], 0)
    return arrive, done, final, unresolved


def warmup_probes() -> list[tuple]:
    """Every kernel of this module with arguments of the types the conversion calls it with (one
    element each): what ``pipeline.warmup`` loads (or compiles) before worker processes fork."""
    z, b = np.zeros(1, np.int64), np.zeros(1, np.bool_)
    e = z[:0]
    return [(_replay, (np.array([0, 0]), e, e, e, e, b[:0], z, z, z, e, z, z))]

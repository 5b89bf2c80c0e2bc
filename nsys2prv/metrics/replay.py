"""An ideal-network replay of a run's MPI calls: serialisation and transfer efficiency.

POP splits MPI communication efficiency (max useful / T) into *serialisation* efficiency (time lost
to the application's dependencies: waiting for a late partner even on a perfect network) and
*transfer* efficiency (time lost to the network itself):

    T_ideal  = the run's elapsed time replayed on an ideal network (zero latency, infinite bandwidth)
    SerE     = max_i Useful_i / T_ideal          TrfE = T_ideal / T          SerE x TrfE = CommE

The replay, per process in call order:

- computation bursts (the time between consecutive MPI calls, from the start of the process's life to
  its first call and from its last call to its end) keep their measured durations;
- an MPI call takes no time of its own, except waiting for its partners:
  - a synchronising collective (Barrier, Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter, Scan,
    Init, Finalize, Comm_split/dup/create) ends when the last participant has entered it (the k-th call
    of one name on one communicator on every process that makes it);
  - Reduce/Gather(v): the root ends when the last participant has entered, the others at once;
    Bcast/Scatter(v): the others end when the root has entered, the root at once (roots unknown: no wait);
  - a blocking receive, or the Wait/Test that completes a receive, ends when the matching send has
    started (the message is there the moment it is posted); sends never wait (eager);
  - everything else (Isend, Irecv, Comm_rank, ...) takes no time.
- Where the export names no peers (MPI recorded as NVTX ranges by Nsight Systems 2022.x), only the
  collectives synchronise; receives do not wait (said in ``notes``).

Cross-process dependencies are resolved by sweeping the processes until no call can complete (numba):
cost O(calls + processes x dependency depth).  A call whose partner never arrives (an unmatched
receive, a collective not every member records) completes when nothing else can, and is counted.

Times: the replay starts every process at the start of its own life (a late start is not the
network's fault) on the run's aligned timeline; ``replayed(rank, t)`` maps an original time of a
process onto the replayed timeline, so that any window (the whole run, a region, an iteration) has its
own T_ideal = latest replayed window end - earliest replayed window start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.core.jit import njit

ZERO, SYNC, ROOT_GATHER, ROOT_BCAST, RECV = 0, 1, 2, 3, 4

SYNC_CALLS = frozenset({
    "MPI_Barrier", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv",
    "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan", "MPI_Init",
    "MPI_Init_thread", "MPI_Finalize", "MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_create"})
GATHER_CALLS = frozenset({"MPI_Reduce", "MPI_Gather", "MPI_Gatherv"})
BCAST_CALLS = frozenset({"MPI_Bcast", "MPI_Scatter", "MPI_Scatterv"})
RECV_CALLS = frozenset({"MPI_Recv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Wait", "MPI_Waitall",
                        "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"})
ALIASES = {"MPI_Init_thread": "MPI_Init"}


@dataclass
class Replay:
    """The replayed run: per process, its calls' original and replayed times."""
    ranks: int
    start: np.ndarray            # per call, sorted by (rank, start): original start, end
    end: np.ndarray
    rank: np.ndarray
    arrive: np.ndarray           # replayed start (= arrival) and end of every call
    done: np.ndarray
    lo: np.ndarray               # per process: life start (original = replayed), original life end
    hi: np.ndarray
    final: np.ndarray            # per process: replayed end of life
    unresolved: int = 0          # calls completed without their partner (unmatched)
    notes: list[str] = field(default_factory=list)

    @property
    def elapsed(self) -> int:
        """T_ideal of the whole run."""
        return int(self.final.max() - self.lo.min()) if self.ranks else 0

    def replayed(self, ranks: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Replayed time of original times ``t`` of processes ``ranks`` (vectorised)."""
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
            j = np.searchsorted(self.start[a:b], tt, "right") - 1 + a     # the last call started by tt
            before = j < a                          # before the first call: the life's first burst
            jj = np.maximum(j, a)
            inside = ~before & (tt < self.end[jj])  # inside a call: its replayed start
            res = np.where(inside, self.arrive[jj], self.done[jj] + (tt - self.end[jj]))
            res = np.where(before, tt, res)
            out[sel] = res
        return out

    def window(self, lo: int, hi: int) -> int:
        """T_ideal of the window [lo, hi] of the original timeline (every process clipped to its life)."""
        if not self.ranks:
            return hi - lo
        r = np.arange(self.ranks, dtype=np.int64)
        a = np.clip(np.full(self.ranks, lo, np.int64), self.lo, self.hi)
        b = np.clip(np.full(self.ranks, hi, np.int64), self.lo, self.hi)
        alive = b > a
        if not alive.any():
            return 0
        return int(self.replayed(r[alive], b[alive]).max() - self.replayed(r[alive], a[alive]).min())


def classify(names: pd.Series, have_peers: bool) -> np.ndarray:
    """The replay kind of every call from its MPI function name."""
    name = names.astype(str)
    kind = np.full(len(name), ZERO, np.int64)
    kind[name.isin(SYNC_CALLS).to_numpy()] = SYNC
    kind[name.isin(GATHER_CALLS).to_numpy()] = ROOT_GATHER
    kind[name.isin(BCAST_CALLS).to_numpy()] = ROOT_BCAST
    if have_peers:
        kind[name.isin(RECV_CALLS).to_numpy()] = RECV
    return kind


def replay(calls: pd.DataFrame, lifetimes: np.ndarray, messages: pd.DataFrame | None = None) -> Replay:
    """Replay a run.

    ``calls``: one row per MPI call with columns rank (0..P-1), start, end, name, root (the root's rank
    for rooted collectives, -1 unknown), comm (communicator, 0 unknown).  ``lifetimes``: (P, 2) int64, each
    process's life [start, end] on the same timeline.  ``messages``: matched point-to-point messages with
    columns send_rank, send_start (the send call's start) and recv_rank, recv_end (the end of the call that
    completed the receive: the Recv, Sendrecv or Wait), or None when the export names no peers.
    """
    lifetimes = np.asarray(lifetimes, np.int64).reshape(-1, 2)
    n_rank = len(lifetimes)
    calls = calls.sort_values(["rank", "start", "end"], kind="stable").reset_index(drop=True)
    rank = calls["rank"].to_numpy(np.int64)
    start, end = calls["start"].to_numpy(np.int64), calls["end"].to_numpy(np.int64)
    name = calls["name"].astype(str).replace(ALIASES)
    have_peers = messages is not None
    kind = classify(name, have_peers)
    notes = [] if have_peers else ["the reports name no MPI peers (MPI as NVTX ranges): only collectives "
                                   "synchronise in the replay; receives do not wait"]

    # collective instances: the k-th call of (name, communicator) on each process
    coll = np.full(len(calls), -1, np.int64)
    is_coll = kind != ZERO
    is_coll &= kind != RECV
    inst_size = np.zeros(0, np.int64)
    inst_root = np.zeros(0, np.int64)
    root_me = np.zeros(len(calls), np.bool_)
    if is_coll.any():
        sub = pd.DataFrame({"rank": rank[is_coll], "name": name[is_coll].to_numpy(),
                            "comm": calls["comm"].to_numpy(np.int64)[is_coll]})
        sub["k"] = sub.groupby(["rank", "name", "comm"], sort=False).cumcount()
        ids, uniq = pd.factorize(pd.MultiIndex.from_frame(sub[["name", "comm", "k"]]))
        coll[is_coll] = ids
        inst_size = np.bincount(ids, minlength=len(uniq)).astype(np.int64)
        root = calls["root"].to_numpy(np.int64)[is_coll]
        me = root == rank[is_coll]
        root_me[is_coll] = me
        inst_root = np.full(len(uniq), -1, np.int64)
        idx = np.flatnonzero(is_coll)
        inst_root[ids[me]] = idx[me]
        rooted = np.isin(kind[is_coll], (ROOT_GATHER, ROOT_BCAST))
        if rooted.any() and (root[rooted] < 0).all():
            notes.append("roots of rooted collectives unknown: they do not synchronise in the replay")

    # receive completions: the call (on recv_rank) that ended at recv_end waits for the send starting at send_start
    dep_ptr = np.zeros(len(calls) + 1, np.int64)
    dep_send = np.zeros(0, np.int64)
    unmatched = 0
    if have_peers and len(messages):
        key_call = pd.DataFrame({"rank": rank, "t": end, "i": np.arange(len(calls))}).drop_duplicates(["rank", "t"])
        key_send = pd.DataFrame({"rank": rank, "t": start, "i": np.arange(len(calls))}).drop_duplicates(["rank", "t"])
        m = messages.merge(key_call.rename(columns={"rank": "recv_rank", "t": "recv_end", "i": "recv"}), how="left",
                           on=["recv_rank", "recv_end"])
        m = m.merge(key_send.rename(columns={"rank": "send_rank", "t": "send_start", "i": "send"}), how="left",
                    on=["send_rank", "send_start"])
        ok = m["recv"].notna() & m["send"].notna()
        unmatched = int((~ok).sum())
        m = m[ok]
        recv, send = m["recv"].to_numpy(np.int64), m["send"].to_numpy(np.int64)
        order = np.argsort(recv, kind="stable")
        recv, send = recv[order], send[order]
        dep_ptr[1:] = np.cumsum(np.bincount(recv, minlength=len(calls)))
        dep_send = send
        kind[recv] = RECV                     # whatever its name, a call completing a receive waits for it
    if unmatched:
        notes.append(f"{unmatched} message(s) not found among the calls: their receives do not wait")

    bounds = np.searchsorted(rank, np.arange(n_rank + 1), "left").astype(np.int64)
    arrive, done, final, unresolved = _replay(bounds, start, end, kind, coll, root_me, inst_size, inst_root,
                                              dep_ptr, dep_send, lifetimes[:, 0].copy(), lifetimes[:, 1].copy())
    if unresolved:
        notes.append(f"{unresolved} call(s) waited for a partner that never came: completed without it")
    return Replay(n_rank, start, end, rank, arrive, done, lifetimes[:, 0].copy(), lifetimes[:, 1].copy(), final,
                  int(unresolved), notes)


@njit(cache=True)
def _replay(bounds, start, end, kind, coll, root_me, inst_size, inst_root, dep_ptr, dep_send, lo, hi):
    n_rank = len(bounds) - 1
    n = len(start)
    arrive = np.full(n, -1, np.int64)
    done = np.full(n, -1, np.int64)
    inst_arrived = np.zeros(len(inst_size), np.int64)
    inst_max = np.zeros(len(inst_size), np.int64)
    ptr = bounds[:-1].copy()
    t = lo.copy()                     # replayed time of each process
    prev_end = lo.copy()              # original end of its last completed call
    final = np.zeros(n_rank, np.int64)
    remaining = n
    unresolved = 0
    force = False
    while remaining > 0:
        progress = False
        for r in range(n_rank):
            while ptr[r] < bounds[r + 1]:
                e = ptr[r]
                if arrive[e] < 0:
                    arrive[e] = t[r] + max(start[e] - prev_end[r], 0)
                    c = coll[e]
                    if c >= 0:
                        inst_arrived[c] += 1
                        if inst_arrived[c] == 1 or arrive[e] > inst_max[c]:
                            inst_max[c] = arrive[e]
                k = kind[e]
                c = coll[e]
                ready = True
                finish = arrive[e]
                if k == SYNC or (k == ROOT_GATHER and root_me[e]):
                    if inst_arrived[c] < inst_size[c]:
                        ready = False
                    else:
                        finish = max(finish, inst_max[c])
                elif k == ROOT_BCAST and not root_me[e]:
                    re = inst_root[c]
                    if re >= 0:
                        if arrive[re] < 0:
                            ready = False
                        else:
                            finish = max(finish, arrive[re])
                elif k == RECV:
                    for d in range(dep_ptr[e], dep_ptr[e + 1]):
                        s = dep_send[d]
                        if arrive[s] < 0:
                            ready = False
                            break
                        finish = max(finish, arrive[s])
                if not ready:
                    if force:             # nothing else could move: complete it without its partner
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

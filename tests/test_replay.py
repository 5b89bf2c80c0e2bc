"""The ideal-network replay (metrics/replay.py) on runs whose dependencies are constructed by hand:
every expected time below is worked out in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys2prv.metrics.replay import replay


def calls(*rows):
    """rows: (rank, start, end, name[, root[, comm]])"""
    full = [(*r, -1, 0)[:6] if len(r) == 4 else (*r, 0)[:6] if len(r) == 5 else r for r in rows]
    return pd.DataFrame(full, columns=["rank", "start", "end", "name", "root", "comm"])


def msgs(*rows):
    """rows: (send_rank, send_start, recv_rank, recv_end)"""
    return pd.DataFrame(list(rows), columns=["send_rank", "send_start", "recv_rank", "recv_end"])


def life(*spans):
    return np.array(spans, np.int64)


def test_pipeline_of_sends():
    # r0 computes 10, sends to r1 (the send call takes 2), computes to 100.
    # r1 waits in Recv from 5; the message arrived at 30 (network); computes 30..100, then sends to r2 at 100.
    # r2 waits in Recv from 0 to 120, computes to 130.
    c = calls((0, 10, 12, "MPI_Send"), (1, 5, 30, "MPI_Recv"), (1, 100, 101, "MPI_Send"), (2, 0, 120, "MPI_Recv"))
    m = msgs((0, 10, 1, 30), (1, 100, 2, 120))
    rep = replay(c, life((0, 100), (0, 101), (0, 130)), m)
    # replay: r0 send at 10 (zero time), end of life 10 + 88 = 98
    #         r1 recv arrives at 5, message sent at 10 -> done 10; burst 70 -> send at 80; life end 80 + 0 = 80
    #         r2 recv arrives at 0, send started at 80 -> done 80; burst 10 -> 90
    assert rep.arrive.tolist() == [10, 5, 80, 0] and rep.done.tolist() == [10, 10, 80, 80]
    assert rep.final.tolist() == [98, 80, 90] and rep.elapsed == 98 and rep.unresolved == 0


def test_a_late_rank_at_a_barrier_costs_the_same_on_an_ideal_network():
    # r0 reaches the barrier at 10, r1 at 50; both leave at 51 (1 of network); then 20 of work each.
    c = calls((0, 10, 51, "MPI_Barrier"), (1, 50, 51, "MPI_Barrier"))
    rep = replay(c, life((0, 71), (0, 71)))
    assert rep.done.tolist() == [50, 50] and rep.final.tolist() == [70, 70] and rep.elapsed == 70
    assert "only collectives synchronise" in rep.notes[0]


def test_irecv_then_work_then_wait_for_a_late_send():
    # r1: Irecv [0,1), works to 40, Wait [40, 90) completes the receive; r0 works to 80 and sends then.
    c = calls((1, 0, 1, "MPI_Irecv"), (1, 40, 90, "MPI_Wait"), (0, 80, 82, "MPI_Isend"))
    m = msgs((0, 80, 1, 90))
    rep = replay(c, life((0, 82), (0, 100)), m)
    # r1: Irecv at 0; burst 39 -> Wait arrives 39, the send starts at 80 -> done 80; +10 -> 90
    # r0: Isend at 80, life end 80 + 0 = 80
    by_rank = dict(zip(rep.rank.tolist(), zip(rep.arrive.tolist(), rep.done.tolist())))
    assert rep.final.tolist() == [80, 90] and rep.elapsed == 90
    assert by_rank[0] == (80, 80)


def test_sendrecv_ring():
    # 3 ranks, each Sendrecv to the right and from the left, entered at 10, 20, 30 and left at 40
    c = calls((0, 10, 40, "MPI_Sendrecv"), (1, 20, 40, "MPI_Sendrecv"), (2, 30, 40, "MPI_Sendrecv"))
    m = msgs((0, 10, 1, 40), (1, 20, 2, 40), (2, 30, 0, 40))
    rep = replay(c, life((0, 50), (0, 50), (0, 50)), m)
    # each waits for its left neighbour's send start: r0 for r2 (30), r1 for r0 (10 -> 20), r2 for r1 (20 -> 30)
    assert rep.done.tolist() == [30, 20, 30] and rep.final.tolist() == [40, 30, 40] and rep.elapsed == 40


def test_rooted_collectives_wait_as_their_semantics_say():
    # Bcast from root 1: r0 enters at 5, the root at 25 -> r0 leaves at 25, the root at once.
    # Reduce to root 0: r0 enters at 30 (it waited for the bcast above: 25 + 5 of work), r1 at 60 -> root leaves at 60.
    c = calls((0, 5, 26, "MPI_Bcast", 1), (1, 25, 26, "MPI_Bcast", 1),
              (0, 31, 62, "MPI_Reduce", 0), (1, 60, 61, "MPI_Reduce", 0))
    rep = replay(c, life((0, 70), (0, 70)))
    # r0: bcast arrives 5, root arrived 25 -> 25; burst 31-26=5 -> reduce arrives 30, waits for r1
    # r1: bcast arrives 25 (root: no wait); burst 60-26=34 -> reduce arrives 59 -> r0 leaves at 59
    arrive = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.arrive.tolist()))
    done = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.done.tolist()))
    assert done[(0, 5)] == 25 and done[(1, 25)] == 25
    assert arrive[(0, 31)] == 30 and arrive[(1, 60)] == 59 and done[(0, 31)] == 59 and done[(1, 60)] == 59
    assert rep.final.tolist() == [59 + 8, 59 + 9] and rep.elapsed == 68


def test_network_delay_is_transfer_inefficiency():
    # both ranks compute 100, exchange (each call takes 50 of pure network time), compute 100
    c = calls((0, 100, 150, "MPI_Allreduce"), (1, 100, 150, "MPI_Allreduce"))
    rep = replay(c, life((0, 250), (0, 250)))
    t, t_ideal, useful = 250, rep.elapsed, 200
    assert t_ideal == 200
    serialisation, transfer = useful / t_ideal, t_ideal / t
    assert serialisation == 1.0 and transfer == pytest.approx(0.8) and serialisation * transfer == useful / t


def test_windows_are_replayed_too():
    c = calls((0, 100, 150, "MPI_Allreduce"), (1, 100, 150, "MPI_Allreduce"))
    rep = replay(c, life((0, 250), (0, 250)))
    assert rep.window(0, 250) == 200            # the whole run
    assert rep.window(150, 250) == 100          # after the exchange: 100 of work
    assert rep.window(120, 200) == 50           # from inside the call (its replayed start, 100) to 200 -> 150
    assert rep.replayed(np.array([0, 1]), np.array([125, 200])).tolist() == [100, 150]


def test_a_partner_that_never_comes_is_counted():
    # r1 waits for a message r0 never sends (its send is missing): the replay completes it and counts it
    c = calls((0, 10, 51, "MPI_Barrier"), (1, 5, 40, "MPI_Recv"), (1, 50, 51, "MPI_Barrier"))
    m = msgs((0, 999, 1, 40))                   # the send is not among the calls
    rep = replay(c, life((0, 60), (0, 60)), m)
    assert "1 message(s) not found among the calls" in " ".join(rep.notes)
    # r1: the receive does not wait (5), 10 of work -> barrier at 15; r0 at 10 -> both leave at 15, +9
    assert rep.done.tolist() == [15, 5, 15] and rep.elapsed == 24 and rep.unresolved == 0


def test_a_collective_missing_on_a_rank_completes_without_it():
    # r1 records one Barrier less than r0: the instance has one participant; nothing deadlocks
    c = calls((0, 10, 20, "MPI_Barrier"), (0, 30, 40, "MPI_Barrier"), (1, 15, 20, "MPI_Barrier"))
    rep = replay(c, life((0, 50), (0, 50)))
    # r0: 10 -> waits for r1 (15); +10 of work -> its second barrier alone at 25; +10 -> 35
    # r1: 15 -> 15; +30 of work -> 45
    assert rep.done.tolist() == [15, 25, 15] and rep.final.tolist() == [35, 45] and rep.elapsed == 45


def test_the_ideal_run_is_never_longer_than_a_causal_one():
    rng = np.random.default_rng(5)
    rows, p = [], 6
    t = np.zeros(p, np.int64)
    for _ in range(40):                         # 40 allreduces with random work and a real network cost
        arrive = t + rng.integers(1, 100, p)
        leave = arrive.max() + rng.integers(1, 20)
        rows += [(r, int(arrive[r]), int(leave), "MPI_Allreduce") for r in range(p)]
        t = np.full(p, leave)
    end = int(t.max()) + 10
    rep = replay(calls(*rows), np.array([(0, end)] * p))
    useful = [end - sum(e - s for rr, s, e, _ in rows if rr == r) for r in range(p)]
    assert max(useful) <= rep.elapsed <= end


def test_a_generated_run_with_messages_end_to_end(tmp_path):
    """8 ranks on 2 hosts with point-to-point messages and collectives (tests/test_align.py's generator):
    the POP table carries serialisation and transfer efficiency whose product is the MPI CommE, the
    replay used the messages, and T_ideal lies between the longest useful time and T."""
    import json

    from conftest import convert
    from test_align import generate

    run = generate(tmp_path / "in")
    convert(["-t", "mpi", "-m", *run.paths, tmp_path / "out"])
    res = json.loads((tmp_path / "out.pop.json").read_text())
    h = res["host"]
    assert h["serialization_efficiency"] * h["transfer_efficiency"] == pytest.approx(
        h["mpi_communication_efficiency"], rel=1e-12)
    assert max(h["outside_mpi_time_ns"].values()) <= h["ideal_elapsed_ns"] <= res["elapsed_ns"]
    assert not any("no MPI peers" in n for n in h.get("replay_notes", []))

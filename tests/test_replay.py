"""The ideal-network replay (metrics/replay.py) on runs whose dependencies are constructed by hand:
every expected time below is worked out in the comments."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_rooted_collectives_wait_as_dimemas_replays_them():
    # Bcast from root 1: r0 enters at 5, the root at 25 -> both leave at 25 (the last one in).
    # Reduce to root 0: r0 enters at 30 (it waited for the bcast above: 25 + 5 of work), r1 at 60 -> root leaves at 60.
    c = calls(
        (0, 5, 26, "MPI_Bcast", 1),
        (1, 25, 26, "MPI_Bcast", 1),
        (0, 31, 62, "MPI_Reduce", 0),
        (1, 60, 61, "MPI_Reduce", 0),
    )
    rep = replay(c, life((0, 70), (0, 70)))
    # r0: bcast arrives 5, root arrived 25 -> 25; burst 31-26=5 -> reduce arrives 30, waits for r1
    # r1: bcast arrives 25 (root: no wait); burst 60-26=34 -> reduce arrives 59 -> r0 leaves at 59
    arrive = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.arrive.tolist()))
    done = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.done.tolist()))
    assert done[(0, 5)] == 25 and done[(1, 25)] == 25
    assert arrive[(0, 31)] == 30 and arrive[(1, 60)] == 59 and done[(0, 31)] == 59 and done[(1, 60)] == 59
    assert rep.final.tolist() == [59 + 8, 59 + 9] and rep.elapsed == 68


def test_collectives_synchronise_as_in_dimemas_ideal_model():
    # Dimemas (GLOBAL_OP_SYNC): a Bcast/Scatter/Gather waits for its last member, the root too: root 0
    # enters the Bcast at 10, r1 at 40 -> both leave at 40 (a root-only-waits model: root at 10).
    # Reduce (GLOBAL_OP_ROOT_SYNC): root 0 waits for r1, r1 goes on; with the root unknown (-1, the NVTX
    # form) nobody waits.  MPI_Finalize is no collective to Dimemas: each leaves it at once.
    c = calls(
        (0, 10, 41, "MPI_Bcast", 0),
        (1, 40, 41, "MPI_Bcast", 0),
        (0, 50, 90, "MPI_Reduce", 0),
        (1, 80, 81, "MPI_Reduce", 0),
        (0, 100, 101, "MPI_Reduce", -1),
        (1, 130, 131, "MPI_Reduce", -1),
        (0, 140, 200, "MPI_Finalize"),
        (1, 190, 200, "MPI_Finalize"),
    )
    rep = replay(c, life((0, 210), (0, 205)))
    done = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.done.tolist()))
    # r0: bcast 10 -> 40; +9 -> reduce arrives 49, r1 arrives 79 -> 79; +10 -> 89 (no wait);
    #     +39 -> finalize 128 (no wait); +10 of life -> 138
    # r1: bcast 40 -> 40; +39 -> reduce 79 (not the root: at once); +49 -> 128; +59 -> finalize 187; +5 -> 192
    assert done[(0, 10)] == 40 and done[(1, 40)] == 40
    assert done[(0, 50)] == 79 and done[(1, 80)] == 79
    assert done[(0, 100)] == 89 and done[(1, 130)] == 128
    assert done[(0, 140)] == 128 and done[(1, 190)] == 187
    assert rep.final.tolist() == [138, 192] and rep.elapsed == 192 and rep.unresolved == 0
    assert "roots of rooted collectives unknown" not in " ".join(rep.notes)  # one Reduce names its root


def test_a_nonblocking_collective_completes_when_its_last_member_entered_it():
    # Dimemas (as prv2dim gives it the calls): MPI_Iallreduce enters the operation, the MPI_Wait after it
    # waits for the last member to have *entered* it (not to have reached its own Wait).  r0 enters at 10,
    # waits from 29; r1 enters at 40, computes, reaches its Wait at 54 -> r0's Wait ends at 40 (not 54),
    # r1's at once.  An Ibarrier completed by a Test is waited for by nobody.
    c = calls(
        (0, 10, 11, "MPI_Iallreduce"),
        (0, 30, 60, "MPI_Wait"),
        (1, 40, 41, "MPI_Iallreduce"),
        (1, 55, 60, "MPI_Wait"),
        (0, 70, 71, "MPI_Ibarrier"),
        (0, 72, 73, "MPI_Test"),
        (1, 90, 91, "MPI_Ibarrier"),
        (1, 92, 93, "MPI_Test"),
    )
    rep = replay(c, life((0, 100), (0, 100)), msgs())
    done = dict(zip(zip(rep.rank.tolist(), rep.start.tolist()), rep.done.tolist()))
    # r0: 10 -> 10; +19 -> Wait 29 -> 40; +10 -> Ibarrier 50, +1 -> Test 51; +27 of life -> 78
    # r1: 40 -> 40; +14 -> Wait 54 -> 54; +30 -> Ibarrier 84, +1 -> Test 85; +7 -> 92
    assert [done[k] for k in ((0, 10), (0, 30), (1, 40), (1, 55))] == [10, 40, 40, 54]
    assert [done[k] for k in ((0, 70), (0, 72), (1, 90), (1, 92))] == [50, 51, 84, 85]
    assert rep.final.tolist() == [78, 92] and rep.elapsed == 92 and rep.unresolved == 0


def test_a_message_not_found_marks_no_call_as_a_receives_completion():
    # The mirror of the run above (r1 enters first), and a message whose send and receive are both
    # missing from the calls.  Its receive is "not found" (-1), which must mark no call as completing a
    # receive: r1's MPI_Wait, the last call of all, still waits for the MPI_Iallreduce.
    # r0: 40 -> 40; +14 -> Wait 54 -> 54; +40 of life -> 94
    # r1: 10 -> 10; +19 -> Wait 29, waits for r0's entry at 40 -> 40; +40 of life -> 80
    c = calls(
        (0, 40, 41, "MPI_Iallreduce"),
        (0, 55, 60, "MPI_Wait"),
        (1, 10, 11, "MPI_Iallreduce"),
        (1, 30, 60, "MPI_Wait"),
    )
    rep = replay(c, life((0, 100), (0, 100)), msgs((0, 999, 1, 777)))
    assert "1 message(s) not found among the calls" in " ".join(rep.notes)
    assert rep.done.tolist() == [40, 54, 10, 40] and rep.final.tolist() == [94, 80] and rep.elapsed == 94


def test_a_nonblocking_reduce_is_waited_for_by_every_member_root_or_not():
    # unlike a blocking MPI_Reduce (only its root waits), the MPI_Wait of an MPI_Ireduce waits on every
    # member for the last one to enter: what Dimemas 5.5 does with prv2dim's records (measured on a hand-made
    # 2-task trace, either task the root).  Root r1: r0 waits from 29 for r1's Ireduce at 40.
    c = calls(
        (0, 10, 11, "MPI_Ireduce", 1),
        (0, 30, 60, "MPI_Wait"),
        (1, 40, 41, "MPI_Ireduce", 1),
        (1, 55, 60, "MPI_Wait"),
        (0, 70, 90, "MPI_Reduce", 1),
        (1, 80, 90, "MPI_Reduce", 1),
    )
    rep = replay(c, life((0, 100), (0, 100)), msgs())
    # r0: Wait 29 -> 40; +10 -> Reduce 50 (not its root: at once) -> 50; +10 -> 60
    # r1: Wait 54 -> 54; +20 -> Reduce 74 (its root: r0 entered at 50) -> 74; +10 -> 84
    assert rep.done.tolist() == [10, 40, 50, 40, 54, 74] and rep.final.tolist() == [60, 84]


def test_each_thread_is_replayed_on_its_own():
    # MPI_THREAD_MULTIPLE, as Dimemas replays a trace: every thread is its own sequence of bursts and calls.
    # r0's main thread (id 20: the thread of its first call) waits in a Barrier [10, 60] that r1 enters
    # at 20 (40 of network): ideally both leave at 20.  r0's worker thread (id 5) calls Irecv [70, 71] and
    # Wait [90, 99] (no peers: no wait); it lives from its process's start to the end of its last call.
    c = pd.DataFrame(
        [
            (0, 20, 10, 60, "MPI_Barrier"),
            (1, 30, 20, 60, "MPI_Barrier"),
            (0, 5, 70, 71, "MPI_Irecv"),
            (0, 5, 90, 99, "MPI_Wait"),
        ],
        columns=["rank", "thread", "start", "end", "name"],
    ).assign(root=-1, comm=0)
    rep = replay(c, life((0, 100), (0, 100)))
    # sequences: r0 main, r0 worker, r1 main.  Mains: Barrier done 20, +40 of life -> 60.
    # worker: Irecv 70 (its first burst runs from 0: the same time), +19 -> Wait 89 -> 89, life ends there.
    # (one sequence per process would have pulled the worker's calls forward by r0's saved wait: Irecv at
    # 30, Wait at 49, r0 ending at 50 -> T 60 instead of 89)
    assert rep.sequences == 3 and rep.proc.tolist() == [0, 0, 1]
    assert rep.rank.tolist() == [0, 1, 1, 2] and rep.done.tolist() == [20, 70, 89, 20]
    assert rep.lo.tolist() == [0, 0, 0] and rep.hi.tolist() == [100, 99, 100]
    assert rep.final.tolist() == [60, 89, 60] and rep.elapsed == 89 and rep.unresolved == 0
    # [65, 100]: the main threads compute 35; the worker 5 to its Irecv, 19 to its Wait: 24
    assert rep.window(0, 100) == 89 and rep.window(65, 100) == 35


def test_a_message_from_a_worker_thread_is_found_by_its_process_and_time():
    # r0's worker thread (id 2) sends at 50 to r1, whose main thread waits in Recv [30, 60]; both mains
    # first pass a Barrier (r0 enters at 10, r1 at 15: both leave at 15).
    c = pd.DataFrame(
        [
            (0, 1, 10, 20, "MPI_Barrier"),
            (1, 3, 15, 20, "MPI_Barrier"),
            (0, 2, 50, 51, "MPI_Send"),
            (1, 3, 30, 60, "MPI_Recv"),
        ],
        columns=["rank", "thread", "start", "end", "name"],
    ).assign(root=-1, comm=0)
    rep = replay(c, life((0, 100), (0, 100)), msgs((0, 50, 1, 60)))
    # r0 main: Barrier 10 -> 15, +80 -> 95; r0 worker: Send at 50 (its own time), ends there: 50
    # r1: Barrier 15 -> 15, +10 -> Recv 25, waits for the send at 50 -> 50, +40 -> 90
    # (one sequence per process: the Send at 15 + 30 = 45, the Recv done at 45)
    assert rep.proc.tolist() == [0, 0, 1] and rep.done.tolist() == [15, 50, 15, 50]
    assert rep.final.tolist() == [95, 50, 90] and rep.elapsed == 95 and rep.unresolved == 0


def test_two_threads_ending_at_one_ns_are_not_confused():
    """A process's two threads end a call at the same ns: the main thread's MPI_Wait completes its
    MPI_Iallreduce, the worker's MPI_Wait a receive.  The message names its threads, so the receive is
    the worker's Wait and the main thread's Wait waits for the collective (matched by (process, end)
    alone, the main's Wait took the receive and the collective waited nowhere on r0)."""
    c = pd.DataFrame(
        [
            (0, 1, 2, 3, "MPI_Iallreduce"),
            (0, 1, 40, 50, "MPI_Wait"),
            (0, 2, 5, 6, "MPI_Irecv"),
            (0, 2, 45, 50, "MPI_Wait"),
            (1, 3, 50, 51, "MPI_Send"),
            (1, 3, 60, 61, "MPI_Iallreduce"),
            (1, 3, 62, 70, "MPI_Wait"),
        ],
        columns=["rank", "thread", "start", "end", "name"],
    ).assign(root=-1, comm=0)
    m = msgs((1, 50, 0, 50)).assign(send_thread=[3], recv_thread=[2])
    rep = replay(c, life((0, 100), (0, 100)), m)
    # sequences: r0 main (thread 1), r0 worker (thread 2, lives 0..50), r1 (thread 3)
    # r1: Send at 50; Iallreduce enters at 50 + 9 = 59; Wait 59 + 1 = 60 (everyone entered by 59): 60;
    #     life 60 + 30 = 90
    # r0 main: Iallreduce at 2; Wait arrives 2 + 37 = 39, waits for r1's entry at 59: 59; life 59 + 50 = 109
    # r0 worker: Irecv 5; Wait arrives 5 + 39 = 44, waits for the send at 50: 50; its life ends there
    assert rep.sequences == 3 and rep.proc.tolist() == [0, 0, 1]
    assert rep.arrive.tolist() == [2, 39, 5, 44, 50, 59, 60]
    assert rep.done.tolist() == [2, 59, 5, 50, 50, 59, 60]
    assert rep.final.tolist() == [109, 50, 90] and rep.elapsed == 109 and rep.unresolved == 0
    # the same with the threads swapped in the message: the main's Wait is the receive now (done at 50, no
    # wait for the collective: its Wait is no longer "free"), the worker's Wait waits for nothing
    rep = replay(c, life((0, 100), (0, 100)), m.assign(recv_thread=[1]))
    assert rep.done.tolist() == [2, 50, 5, 44, 50, 59, 60] and rep.final.tolist() == [100, 44, 90]


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
    assert rep.window(0, 250) == 200  # the whole run
    assert rep.window(150, 250) == 100  # after the exchange: 100 of work
    assert rep.window(120, 200) == 50  # from inside the call (its replayed start, 100) to 200 -> 150
    assert rep.replayed(np.array([0, 1]), np.array([125, 200])).tolist() == [100, 150]


def test_a_window_starting_inside_a_long_wait_is_not_charged_with_it():
    # r1 starts 100 late; both wait in MPI_Init until 120 (r0 from 10), compute to 200, Allreduce [200, 210],
    # compute to 300.  Window [115, 300] begins inside MPI_Init on both ranks.
    c = calls(
        (0, 10, 120, "MPI_Init"),
        (1, 110, 120, "MPI_Init"),
        (0, 200, 210, "MPI_Allreduce"),
        (1, 200, 210, "MPI_Allreduce"),
    )
    rep = replay(c, life((0, 300), (100, 300)))
    # the window on its own: both start at 115 in the rest of MPI_Init (done at once), 80 of work -> the
    # Allreduce at 195, 90 of work -> 285: T_ideal = 170 (it used to start at r0's MPI_Init arrival, 10: 275)
    assert rep.window(115, 300) == 170
    # the mapping of single times: inside a call, time runs on from its replayed start up to its end
    assert rep.replayed(np.array([0, 1]), np.array([115, 115])).tolist() == [110, 110]
    # whole run: r1's Init arrives at 110, so both leave it at 110; +80 -> 190; +90 -> 280 - 0
    assert rep.elapsed == 280 and rep.window(0, 300) == 280


def test_a_partner_that_never_comes_is_counted():
    # r1 waits for a message r0 never sends (its send is missing): the replay completes it and counts it
    c = calls((0, 10, 51, "MPI_Barrier"), (1, 5, 40, "MPI_Recv"), (1, 50, 51, "MPI_Barrier"))
    m = msgs((0, 999, 1, 40))  # the send is not among the calls
    rep = replay(c, life((0, 60), (0, 60)), m)
    assert "1 message(s) not found among the calls" in " ".join(rep.notes)
    # r1: the receive does not wait (5), 10 of work -> barrier at 15; r0 at 10 -> both leave at 15, +9
    assert rep.done.tolist() == [15, 5, 15] and rep.elapsed == 24 and rep.unresolved == 0


def test_a_cycle_of_receives_is_broken_once_and_counted():
    # each rank receives (40..50) the message the other sends only later (60..61): on their clocks each
    # receive ended before its send began (clock skew), so on replay both wait for each other.  Nothing
    # can move: the first waiting call (r0's receive, arrived at 40) completes without its partner -- 1
    # unresolved call --, r0 sends at 40 + 10 = 50, which completes r1's receive at 50; r1 sends at 60.
    # Lives: r0 50 + 39 = 89, r1 60 + 39 = 99.
    c = calls((0, 40, 50, "MPI_Recv"), (0, 60, 61, "MPI_Send"), (1, 40, 50, "MPI_Recv"), (1, 60, 61, "MPI_Send"))
    m = msgs((1, 60, 0, 50), (0, 60, 1, 50))
    rep = replay(c, life((0, 100), (0, 100)), m)
    assert rep.arrive.tolist() == [40, 50, 40, 60] and rep.done.tolist() == [40, 50, 50, 60]
    assert rep.final.tolist() == [89, 99] and rep.elapsed == 99 and rep.unresolved == 1
    assert "1 call(s) waited for a partner that never came: completed without it" in rep.notes


def test_a_chain_of_receives_waits_in_turn():
    # r0 receives (10..100) what r1 sends at 85 after its own receive (10..80) of r2's send at 60.  On
    # replay nothing is forced: r2 sends at 60 (work from 0), r1's receive is done at 60, its send
    # arrives at 60 + 5 = 65, r0's receive is done at 65.  Lives: r0 65 + 10 = 75, r1 65 + 24 = 89,
    # r2 60 + 49 = 109.
    c = calls((0, 10, 100, "MPI_Recv"), (1, 10, 80, "MPI_Recv"), (1, 85, 86, "MPI_Send"), (2, 60, 61, "MPI_Send"))
    m = msgs((2, 60, 1, 80), (1, 85, 0, 100))
    rep = replay(c, life((0, 110), (0, 110), (0, 110)), m)
    assert rep.arrive.tolist() == [10, 10, 65, 60] and rep.done.tolist() == [65, 60, 65, 60]
    assert rep.final.tolist() == [75, 89, 109] and rep.elapsed == 109 and rep.unresolved == 0


def test_a_window_replays_the_messages_inside_it():
    # test_irecv_then_work_then_wait_for_a_late_send's run, replayed in the window [0, 95]: the Wait
    # still waits for the send (both inside the window): r1's Wait arrives at 39, is done at 80, + 5 of
    # work to the window's end -> 85 (not its own 44, nor r0's 80)
    c = calls((1, 0, 1, "MPI_Irecv"), (1, 40, 90, "MPI_Wait"), (0, 80, 82, "MPI_Isend"))
    rep = replay(c, life((0, 82), (0, 100)), msgs((0, 80, 1, 90)))
    assert rep.window(0, 95) == 85


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
    for _ in range(40):  # 40 allreduces with random work and a real network cost
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
        h["mpi_communication_efficiency"], rel=1e-12
    )
    assert max(h["outside_mpi_time_ns"].values()) <= h["ideal_elapsed_ns"] <= res["elapsed_ns"]
    assert not any("no MPI peers" in n for n in h.get("replay_notes", []))


# ---------------------------------------------------------------------------------------------------
# windows of a profiled run (tests/data/pop4: 4 ranks, rank r sleeps 2 + 5 r ms per iteration)
POP4 = Path(__file__).parent / "data" / "pop4"


def _cut_replay(calls_df: pd.DataFrame, life_: np.ndarray, lo: int, hi: int) -> int:
    """T_ideal of [lo, hi] as a -f cut gives it, computed independently: calls clipped to the window as
    the pipeline clips tables (an interval when it overlaps, a point when inside), lifetimes clipped,
    the cut replayed from scratch (collectives matched by their order in the cut)."""
    a = np.clip(lo, life_[:, 0], life_[:, 1])
    b = np.clip(hi, life_[:, 0], life_[:, 1])
    r = calls_df["rank"].to_numpy(np.int64)
    s, e = calls_df["start"].to_numpy(np.int64), calls_df["end"].to_numpy(np.int64)
    inside = ((e > a[r]) & (s < b[r])) | ((s == e) & (s >= a[r]) & (s <= b[r]))
    cut = calls_df[inside].copy()
    cut["start"] = np.maximum(s[inside], a[r[inside]])
    cut["end"] = np.minimum(e[inside], b[r[inside]])
    rep = replay(cut, np.stack([a, b], axis=1))
    # a collective begun before the window on some processes only is paired by order within the cut
    # with the next instance of the others (a -f cut's pairing): such windows are flagged
    sync = cut["name"].isin(["MPI_Allreduce", "MPI_Barrier", "MPI_Init", "MPI_Finalize"]).to_numpy()
    straddles = bool((sync & (s[inside] < a[r[inside]])).any())
    return int(rep.final.max() - a.min()), straddles


@pytest.fixture(scope="module")
def pop4(tmp_path_factory):
    """The pop4 run's replay inputs as the pipeline builds them (captured), and its POP results."""
    if not (POP4 / "rank0.sqlite").exists():
        pytest.skip("tests/data/pop4 missing")
    from conftest import convert

    import nsys2prv.metrics.pop.inputs as popm  # (where the replay is called)

    seen = {}
    real = popm.replay

    def spy(calls_df, lifetimes, messages=None):
        seen["args"] = (calls_df.reset_index(drop=True), np.asarray(lifetimes, np.int64))
        return real(calls_df, lifetimes, messages)

    d = tmp_path_factory.mktemp("pop4")
    paths = [str(POP4 / f"rank{r}.sqlite") for r in range(4)]
    popm.replay = spy
    try:
        convert(["-q", "-t", "mpi,nvtx", "--iterations", "iter", "-m", *paths, d / "it"])
    finally:
        popm.replay = real
    convert(["-q", "-t", "mpi,nvtx", "--region", "loop", "-m", *paths, d / "region"])
    convert(["-q", "-t", "mpi,nvtx", "-f", "loop", "-m", *paths, d / "cut"])
    convert(["-q", "-t", "mpi,nvtx", "--iterations", "work", "-m", *paths, d / "work"])
    load = lambda n: json.loads((d / f"{n}.pop.json").read_text())  # noqa: E731
    return {
        "calls": seen["args"][0],
        "life": seen["args"][1],
        "it": load("it"),
        "region": load("region"),
        "cut": load("cut"),
        "work": load("work"),
    }


def test_region_replay_equals_the_f_cut_of_the_same_window(pop4):
    # the loop starts while ranks are still in MPI_Init, which waited ~0.75 s for the last rank: the
    # window used to start at MPI_Init's replayed arrival (T_ideal 1.02 s for a 0.24 s loop, TrE 471 %)
    region, cut = pop4["region"]["regions"][1], pop4["cut"]
    assert region["name"] == "loop"
    assert region["elapsed_ns"] == cut["elapsed_ns"]
    ri, ci = region["host"]["ideal_elapsed_ns"], cut["host"]["ideal_elapsed_ns"]
    assert abs(ri - ci) <= 0.001 * ci
    for h in (region["host"], cut["host"]):
        assert h["serialization_efficiency"] <= 1 and h["transfer_efficiency"] <= 1
        assert h["serialization_efficiency"] * h["transfer_efficiency"] == pytest.approx(
            h["mpi_communication_efficiency"], rel=1e-12
        )


@pytest.mark.parametrize("name", ["it", "work"])
def test_every_iteration_replay_equals_its_own_cut(pop4, name):
    # "iter" windows start inside the previous Sendrecv of the later ranks; "work" windows (the
    # computation only) start and end inside Allreduce waits of up to 15 ms
    res = pop4[name]
    from nsys2prv.metrics.replay import replay as fresh

    whole = fresh(pop4["calls"], pop4["life"])
    rows = res["iterations"]["table"]
    assert len(rows) == 12
    out = []
    for row in rows:
        lo, hi = row["start_ns"], row["end_ns"]
        expected, straddles = _cut_replay(pop4["calls"], pop4["life"], lo, hi)
        got = row["host"]["ideal_elapsed_ns"]
        assert whole.window(lo, hi) == got
        assert row["host"]["serialization_efficiency"] <= 1 and row["host"]["transfer_efficiency"] <= 1
        if straddles:
            out.append(row["index"])
            assert got <= expected  # pairing within the run, not within the cut, waits less
        else:
            assert abs(got - expected) <= 0.001 * expected, (row["index"], got, expected)
    # windows 1, 5, 8 and 12 begin while a rank is still in an Allreduce begun before them
    assert out == [1, 5, 8, 12]

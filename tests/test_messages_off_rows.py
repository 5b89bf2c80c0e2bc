"""MPI messages of threads that are not rows of the trace (issue 40): the point-to-point halves are
matched over processes and OS threads (every MPI call POP counts), so the clock alignment and POP's
replay see the same messages whatever -t translates; only the communication records (``3:`` lines)
need both sides on rows, and a message without them is counted as not translated.

Two ranks on two hosts, T = 10 s, an NVTX range over each main thread; rank 1 makes its MPI calls on a
thread of its own (``comm``), which under ``-t nvtx`` is no row:

    rank 0 (main):  Recv from 1 tag 2 [1, 3]    Send to 1 tag 1 [4, 4.1]    Barrier [4.2, 9.5]
    rank 1 (comm):  Send to 0 tag 2 [2, 2.1]    Recv from 0 tag 1 [2.5, 5]  Barrier [9, 9.5]

Ideal network (calls take no time, a receive ends when its send starts): rank 0 computes 1 s, its
receive ends at rank 1's send (2 s), 1 s more: its send at 3 s, 0.1 s: at the barrier at 3.1 s; rank 1
computes 2 s (its send at 2 s), 0.4 s, its receive waits for rank 0's send (3 s), 4 s more: the barrier
at 7 s; both then compute 0.5 s: T_ideal = 7.5 s, transfer efficiency 7.5 / 10.  Without the messages
(what -t nvtx gave before) the receives would not wait: the barrier at 2 + 0.4 + 4 = 6.4 s, T_ideal 6.9 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from nsysgen import NsysBuilder, encode_gtid

from nsys2prv.cli import main
from nsys2prv.config import Config, parse_categories
from nsys2prv.pipeline.parallel import Serial
from nsys2prv.pipeline.prepare import prepare
from nsys2prv.translate.mpi_messages import KIND, translate_messages
from nsys2prv.translate.records import Translation

S = 1_000_000_000
COMM = 5002  # rank 1's MPI thread (its process: 5001)
NO_ROW = "matched, but a side's thread is not a row of the trace (no communication record)"


def t(x: float) -> int:
    return int(round(x * S))


def _report(path: Path, rank: int) -> str:
    b = NsysBuilder(path, host=f"node{rank}")
    pid = 5000 + rank
    b.process(pid, "./app")
    b.mpi_rank(pid, pid, rank)
    b.nvtx_push(pid, pid, t(0), t(10), text="step")
    if rank == 1:
        b.thread_name(pid, COMM, "comm")
        b.mpi(pid, COMM, "MPI_Send", t(2), t(2.1), kind="p2p", peer=0, size=8, tag=2)
        b.mpi(pid, COMM, "MPI_Recv", t(2.5), t(5), kind="p2p", peer=0, size=8, tag=1)
        b.mpi(pid, COMM, "MPI_Barrier", t(9), t(9.5), kind="coll")
    else:
        b.mpi(pid, pid, "MPI_Recv", t(1), t(3), kind="p2p", peer=1, size=8, tag=2)
        b.mpi(pid, pid, "MPI_Send", t(4), t(4.1), kind="p2p", peer=1, size=8, tag=1)
        b.mpi(pid, pid, "MPI_Barrier", t(4.2), t(9.5), kind="coll")
    return str(b.save())


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("off-rows")
    return [_report(d / f"rank{r}.sqlite", r) for r in (0, 1)]


def _prepared(reports: list[str], tmp_path: Path, cats: str):
    cfg = Config([Path(p) for p in reports], tmp_path / cats, categories=parse_categories(cats))
    return prepare(cfg, Serial(), tmp_path / "cache")


def test_the_messages_are_matched_whatever_t_says(reports, tmp_path):
    nvtx, full = _prepared(reports, tmp_path, "nvtx"), _prepared(reports, tmp_path, "all")
    m, f = nvtx.messages, full.messages
    # both messages, in send order: 1 -> 0 (tag 2, from the comm thread), 0 -> 1 (tag 1, to it)
    assert len(m) == len(f) == 2 and m.halves == f.halves == 4
    assert m.unmatched_sends == m.unmatched_recvs == 0
    for x in (m, f):
        assert x.send_report.tolist() == [1, 0] and x.recv_report.tolist() == [0, 1]
        assert x.tag.tolist() == [2, 1] and x.size.tolist() == [8, 8]
        assert x.log_send.tolist() == [t(2), t(4)] and x.phys_recv.tolist() == [t(3), t(5)]
        assert x.send_gtid.tolist() == [encode_gtid(5001, COMM), encode_gtid(5000, 5000)]
        assert x.recv_gtid.tolist() == [encode_gtid(5000, 5000), encode_gtid(5001, COMM)]
    # the trace's rows: -t nvtx has no row for the comm thread (-1); -t all has (rank 1's second thread)
    assert m.send_thread.tolist() == [-1, 0] and m.recv_thread.tolist() == [0, -1]
    assert [full.model.threads[i].name for i in f.send_thread] == ["Rank 1 comm (5002)", "Rank 0 main (5000)"]
    # the alignment: the same messages (both checked, none violated), the same clocks
    assert nvtx.alignment.to_dict() == full.alignment.to_dict() and nvtx.alignment.clocks == full.alignment.clocks
    assert nvtx.alignment.stats["messages"] == 2
    # the -t nvtx communication records: none, both messages counted as not translated (2 halves each)
    out = Translation()
    translate_messages(m, list(nvtx.timeline.clocks), out)
    c = out.counts[KIND]
    assert (c.source_rows, c.translated_rows, c.records, dict(c.dropped)) == (4, 0, 0, {NO_ROW: 4})
    assert out.comms == []
    out = Translation()
    translate_messages(f, list(full.timeline.clocks), out)
    c = out.counts[KIND]
    assert (c.source_rows, c.translated_rows, c.records, dict(c.dropped)) == (4, 4, 2, {})
    assert [b.send_thread.tolist() for b in out.comms] == [f.send_thread.tolist()]


def test_a_message_with_one_side_on_a_row_is_not_drawn(reports, tmp_path):
    full = _prepared(reports, tmp_path, "all")
    m = full.messages
    m.recv_thread = np.array([m.recv_thread[0], -1], np.int64)  # 0 -> 1 received on no row
    out = Translation()
    translate_messages(m, list(full.timeline.clocks), out)
    c = out.counts[KIND]
    assert (c.translated_rows, c.records, dict(c.dropped)) == (2, 1, {NO_ROW: 2})
    (batch,) = out.comms
    assert batch.tag.tolist() == [2] and batch.recv_thread.tolist() == [0]


def _convert(reports: list[str], out: Path, cats: str) -> tuple[dict, dict, list[str], dict]:
    out.parent.mkdir()
    res = CliRunner().invoke(main, ["-q", "-t", cats, "-m", *reports, str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    read = lambda ext: json.loads(Path(f"{out}.{ext}.json").read_text())  # noqa: E731
    comms = [ln for ln in Path(f"{out}.prv").read_text().splitlines() if ln.startswith("3:")]
    return read("pop"), read("sync"), comms, read("summary")


def test_pop_and_the_alignment_equal_between_t_nvtx_and_t_all(reports, tmp_path):
    pop_n, sync_n, comms_n, summary_n = _convert(reports, tmp_path / "nvtx" / "run", "nvtx")
    pop_f, sync_f, comms_f, _ = _convert(reports, tmp_path / "full" / "run", "all")
    assert sync_n == sync_f and sync_n["messages"] == 2
    assert sync_n["causality"]["messages_checked"] == 2 and sync_n["causality"]["messages_violated"] == 0
    pop_n.pop("label"), pop_f.pop("label")
    assert pop_n == pop_f
    host = pop_n["host"]
    assert host["ideal_elapsed_ns"] == t(7.5) and pop_n["elapsed_ns"] == t(10)
    assert host["transfer_efficiency"] == pytest.approx(0.75, abs=1e-12)
    assert host["serialization_efficiency"] == pytest.approx(6.9 / 7.5, abs=1e-12)
    assert host["useful_time_ns"] == {"Rank 0": t(2.6), "Rank 1": t(6.9)}
    # the records: -t all draws both messages (rank 1's comm thread: task 2, thread 2, CPU 3); -t nvtx
    # none, its MPI point-to-point rows counted as left out by -t
    assert comms_f == [
        f"3:3:1:2:2:{t(2)}:{t(2.1)}:1:1:1:1:{t(1)}:{t(3)}:8:2",
        f"3:1:1:1:1:{t(4)}:{t(4.1)}:3:1:2:2:{t(2.5)}:{t(5)}:8:1",
    ]
    assert comms_n == []
    left = [(Path(u["report"]).name, u["table"], u["rows"], u["reason"]) for u in summary_n["untranslated"]]
    assert left == [
        (f"rank{r}.sqlite", table, rows, "category not requested with -t (add -t mpi)")
        for r in (0, 1)
        for table, rows in (("MPI_COLLECTIVES_EVENTS", 1), ("MPI_P2P_EVENTS", 2))
    ]

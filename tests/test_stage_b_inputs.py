"""Stage B's per-report inputs travel packed (``pipeline.scan.Scan.pack``): the main process keeps each
report's model keys, POP keys, sync tables, raw point-to-point rows and device map as pickled bytes
until stage B, which reads them one report at a time (``StageBInput``) and drops them.  What stage B
reads is exactly what stage A found: the same frames, the same model."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import pytest
from nsysgen import NsysBuilder

from nsys2prv import kinds as K
from nsys2prv.config import Config, parse_categories
from nsys2prv.model.resources import build_model
from nsys2prv.pipeline import report, scan
from nsys2prv.pipeline.parallel import Serial
from nsys2prv.pipeline.prepare import prepare, translated_kinds

US = 1_000


def _rank(path: Path, rank: int, device: int) -> str:
    """Rank ``rank``'s report: two kernels on CUDA device ``device``, their launches, an MPI
    send/receive pair with the other rank and a barrier (every side of the model, the sync tables and
    the raw point-to-point rows)."""
    b = NsysBuilder(path, host="node0", session_start_ns=1_700_000_000_000_000_000 + rank * 1000)
    pid = 6000 + rank
    b.process(pid, "./app")
    b.mpi_rank(pid, pid, rank, ts=5 * US)
    for k, stream in enumerate((7, 8)):
        b.cuda_api(pid, pid, "cudaLaunchKernel_v7000", (10 + k) * US, (11 + k) * US, 100 + k)
        b.kernel(pid, device, stream, (20 + k) * US, (30 + k) * US, 100 + k, f"k{k}")
    other = 1 - rank
    b.mpi(pid, pid, "MPI_Send", 40 * US, 41 * US, kind="p2p", peer=other, size=64, tag=rank)
    b.mpi(pid, pid, "MPI_Recv", 42 * US, 44 * US, kind="p2p", peer=other, recv_size=64, tag=other)
    b.mpi(pid, pid, "MPI_Barrier", 50 * US, 52 * US, kind="coll")
    return str(b.save())


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("stage-b")
    return [_rank(d / "rank0.sqlite", 0, 0), _rank(d / "rank1.sqlite", 1, 1)]


def _cfg(reports: list[str], tmp_path: Path) -> Config:
    return Config([Path(p) for p in reports], tmp_path / "o", categories=parse_categories("cuda,mpi"))


def _sources(cfg: Config, tmp_path: Path) -> list[report.Source]:
    reading = report.Reading(translated_kinds(cfg), False, align_kinds=(), marker=None, p2p=True)
    return [
        report.Source(i, report.ReportFile(str(p), str(tmp_path / "cache"), None, True), reading)
        for i, p in enumerate(cfg.inputs)
    ]


def _equal(a, b) -> None:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _equal(a[k], b[k])
    elif hasattr(a, "__dataclass_fields__"):
        assert type(a) is type(b)
        for f in a.__dataclass_fields__:
            _equal(getattr(a, f), getattr(b, f))
    else:
        assert a == b


def test_a_packed_scan_gives_stage_b_what_stage_a_found(reports, tmp_path):
    sources = _sources(_cfg(reports, tmp_path), tmp_path)
    plain = [scan.scan_report(s) for s in sources]
    # (each packed from a copy: a second scan_report reads the tables from the cache stage A wrote,
    # where pandas may give a categorical's categories another dtype)
    packed = [pickle.loads(pickle.dumps(s)).pack() for s in plain]
    assert sorted(scan.scan_for_stage_b(sources[0]).packed) == sorted(packed[0].packed)
    for p in packed:  # nothing of stage B's inputs left unpacked; the device map an empty frame
        assert (p.keys, p.pop_keys, p.sync, p.p2p) == (None, None, None, None)
        assert sorted(p.packed) == ["devmap", "keys", "p2p", "pop_keys", "sync"]
        assert list(p.info.devmap.columns) == ["pid", "device", "gpu"] and len(p.info.devmap) == 0
    # what the reports hold: both sides of the model, the MPI rows, each rank's device
    assert [sorted(s.keys) for s in plain] == [[K.CPU, K.GPU]] * 2
    assert [s.keys[K.GPU]["stream"].tolist() for s in plain] == [[7, 8], [7, 8]]
    assert [len(s.p2p.p2p) for s in plain] == [2, 2]
    assert [s.info.devmap["device"].tolist() for s in plain] == [[0], [1]]
    for name in scan.STAGE_B_INPUTS:
        got = scan.StageBInput(packed, name)
        assert len(got) == 2
        for i in range(2):
            _equal(got[i], getattr(plain[i], name))
        _equal(got[-1], getattr(plain[1], name))
    devmaps = scan.StageBInput(packed, scan.DEVMAP)
    for i, (a, b) in enumerate(zip(devmaps, [s.info.devmap for s in plain])):  # (iterating: every report, in order)
        _equal(a, b)
    assert i == 1
    with pytest.raises(IndexError):
        devmaps[2]
    # unpacked scans (a cached scan loaded in this process): StageBInput reads their fields
    _equal(scan.StageBInput(plain, "keys")[0], plain[0].keys)
    _equal(scan.StageBInput(plain, scan.DEVMAP)[1], plain[1].info.devmap)
    # the model from the packed inputs is the model from stage A's
    ident = [s.info.identity for s in plain]

    def model_of(scans, devmaps):
        m = build_model(
            scan.StageBInput(scans, "keys"), ident, devmaps=devmaps, pop_keys=scan.StageBInput(scans, "pop_keys")
        )
        return [t.name for t in m.threads], [t.gpus for t in m.tasks]

    expected = model_of(plain, [s.info.devmap for s in plain])
    assert expected == (
        ["Rank 0 main (6000)", "CUDA-D0.S7-node0", "CUDA-D0.S8-node0"]
        + ["Rank 1 main (6001)", "CUDA-D1.S7-node0", "CUDA-D1.S8-node0"],
        [(0,), (1,)],
    )
    assert model_of(packed, scan.StageBInput(packed, scan.DEVMAP)) == expected


def test_prepare_drops_stage_b_inputs_after_stage_b(reports, tmp_path):
    run = prepare(_cfg(reports, tmp_path), Serial(), tmp_path / "cache")
    assert [(s.packed, s.keys, s.pop_keys, s.sync, s.p2p) for s in run.scans] == [({}, None, None, None, None)] * 2
    assert [len(s.info.devmap) for s in run.scans] == [0, 0]
    # the readers' tallies: counted (each kind's source rows) and, per report, the rows dropped kept
    assert [s.tallies for s in run.scans] == [{}, {}]
    assert (run.counts.counts["kernels"].source_rows, run.counts.counts["mpi"].source_rows) == (4, 6)
    assert run.read_dropped == [{"cuda_api": 0, "kernels": 0, "mpi": 0}] * 2
    # stage B read them: the model's GPUs (the device maps), the matched message pair (the raw p2p rows)
    assert [t.gpus for t in run.model.tasks] == [(0,), (1,)]
    assert len(run.messages) == 2


def test_the_trip_to_the_main_process_shares_the_empty_device_map_and_the_names(reports, tmp_path):
    """A packed scan as the main process receives it (pickled by the worker): its report's device map is
    the one shared ``report.NO_DEVMAP`` (not an empty frame of its own per report), and the names most
    reports repeat (tables, warnings, thread and process names) are one string each."""
    sources = _sources(_cfg(reports, tmp_path), tmp_path)
    got = [pickle.loads(pickle.dumps(scan.scan_for_stage_b(s))) for s in sources]
    assert [s.info.devmap is report.NO_DEVMAP for s in got] == [True, True]
    a, b = got[0].info, got[1].info
    assert a.identity.process_names == {6000: "./app"} and b.identity.process_names == {6001: "./app"}
    assert a.identity.process_names[6000] is b.identity.process_names[6001]
    assert sorted(a.table_counts) == sorted(b.table_counts) and len(a.table_counts) >= 3
    assert all(x is y for x, y in zip(sorted(a.table_counts), sorted(b.table_counts)))
    # a report's own device map (a scan not packed, or stage A's cache) survives the trip as it is
    plain = pickle.loads(pickle.dumps(scan.scan_report(sources[1])))
    assert plain.info.devmap is not report.NO_DEVMAP and plain.info.devmap["device"].tolist() == [1]

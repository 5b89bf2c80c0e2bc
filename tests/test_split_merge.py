"""A split merge's parts written straight into the .prv at their own offsets (``paraver/split_merge.py``):
each part's measured length (``format._part_bytes``) is exactly the bytes its merge writes, and the
file holds exactly the unsplit merge's bytes after the header, whichever process runs which part."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from chunk_files import save_chunk
from click.testing import CliRunner
from test_rank_scaling import build_rank as gpu_rank

from nsys2prv.cli import main
from nsys2prv.paraver import split_merge as S
from nsys2prv.paraver import writer
from nsys2prv.paraver.chunks import COMM_SIG, EVENT_SIG0, STATE_SIG
from nsys2prv.paraver.merge import merge, split_times

THREADS = 12
END = 900_000  # the trace's END: final states close there; the one starting at it is not written
HEADER = b"#Paraver (header):1000_ns:1(12):1:1(12:1)\n"
SIGS = [((50000001, 63000006), (False, True)), ((9200,), (False,))]


def _chunk(path: Path, seed: int, n: int):
    """A chunk of ``n`` sorted records of every kind: states (some final, one starting at END),
    communications, events with a local name code (numbered through ``values``) and plain values
    (negative ones too)."""
    rng = np.random.default_rng(seed)
    time = np.sort(rng.integers(0, END, n))
    time[-1] = END  # (a final state starting at END: dropped)
    key = np.sort(rng.integers(0, 1 << 20, n))
    order = np.lexsort((key, time))
    time, key = time[order], key[order]
    sig = rng.choice([STATE_SIG, COMM_SIG, EVENT_SIG0, EVENT_SIG0 + 1], n).astype(np.int32)
    sig[-3:] = STATE_SIG
    thread = rng.integers(0, THREADS, n).astype(np.int32)
    tail = []
    for i, s in enumerate(sig):
        if s == STATE_SIG:
            final = i >= n - 3 or rng.random() < 0.02
            tail += [-1 if final else int(time[i] + rng.integers(1, 10**6)), int(rng.integers(0, 20))]
        elif s == COMM_SIG:
            recv = int(time[i] + rng.integers(0, 10**9))
            tail += [int(time[i]), int(rng.integers(0, THREADS)), recv, recv, int(rng.integers(0, 10**7)), 7]
        elif s == EVENT_SIG0:
            tail += [int(rng.integers(-(10**12), 10**12)), int(rng.integers(0, 5))]  # (a local name code)
        else:
            tail += [int(rng.integers(0, 10 ** rng.integers(1, 19)))]
    meta = save_chunk(str(path), time, key, thread, sig, tail, sigs=SIGS, states=n, end=END)
    return meta, np.array([0, 3, 17, 123456, 2**40], np.int64)


@pytest.fixture(scope="module")
def chunks(tmp_path_factory):
    d = tmp_path_factory.mktemp("split")
    made = [_chunk(d / f"c{i}", i, n) for i, n in enumerate((4000, 2500, 3, 6000))]
    objs = (np.arange(THREADS) % 5, np.arange(THREADS) // 3 + 1, np.arange(THREADS) % 3 + 1)
    return [m for m, _ in made], [v for _, v in made], tuple(a.astype(np.int64) for a in objs)


def _merged(chunks, **kw) -> bytes:
    metas, values, objs = chunks
    out = io.BytesIO()
    merge(metas, values, END, out, objs=objs, **kw)
    return out.getvalue()


@pytest.mark.parametrize("kernels", ["python", "compiled"])
def test_each_part_measures_what_its_merge_writes(chunks, monkeypatch, kernels):
    monkeypatch.setenv("NSYS2PRV_KERNELS", kernels)
    metas, values, objs = chunks
    whole = _merged(chunks)
    assert whole.count(b"\n") == sum(m.records for m in metas) - len(metas)  # (each chunk's last: at END)
    assert S.part_bytes(metas, values, END, objs, None, None) == len(whole)
    bounds = [None, *split_times(metas, 4), None]
    assert len(bounds) == 5
    sizes = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        text = _merged(chunks, t_lo=lo, t_hi=hi)
        assert S.part_bytes(metas, values, END, objs, lo, hi) == len(text)
        sizes.append(len(text))
    assert sum(sizes) == len(whole) and min(sizes) > 0


@pytest.mark.parametrize("parts,here", [(2, True), (3, True), (4, False), (3, False)])
def test_split_parts_land_at_their_offsets(chunks, tmp_path, parts, here):
    """Header, then part 0 (here, or forked), then every forked part at the offset measured for it:
    the file is the header and the unsplit merge's bytes, and nothing else is written (no part files)."""
    metas, values, objs = chunks
    prv = tmp_path / "out.prv"
    work = tmp_path / "work"
    work.mkdir()
    with open(prv, "wb", buffering=1 << 20) as fh:
        fh.write(HEADER)
        stats = S.merge_split(metas, values, END, fh, 700, parts, work, objs=objs, here=here)
        fh.write(b"after\n")  # (the trace's end: after every part)
    assert prv.read_bytes() == HEADER + _merged(chunks) + b"after\n"
    assert stats.states + stats.events + stats.comms == sum(m.records for m in metas) - len(metas)
    assert list(work.iterdir()) == []


def test_a_stream_gets_the_parts_appended(chunks, tmp_path):
    """A stream (the -z writer) cannot be written at offsets: the parts' files, appended in order."""
    metas, values, objs = chunks
    out = io.BytesIO()
    S.merge_split(metas, values, END, out, 700, 3, tmp_path, objs=objs)
    assert out.getvalue() == _merged(chunks)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part1.prv", "part2.prv"]


def test_a_wrong_measure_is_an_error_not_a_trace(chunks, tmp_path, monkeypatch):
    metas, values, objs = chunks
    real = S.part_bytes
    monkeypatch.setattr(S, "part_bytes", lambda *a: real(*a) + 1)  # (the forked parts inherit it)
    with open(tmp_path / "out.prv", "wb") as fh, pytest.raises(AssertionError, match="part 0: -1 bytes more"):
        S.merge_split(metas, values, END, fh, 700, 2, tmp_path, objs=objs)


def test_a_split_conversion_writes_the_unsplit_bytes(tmp_path, monkeypatch):
    """A generated report's conversion with its merge cut into 3 parts (2 forked, each written at its
    offset) gives the bytes of the one-process merge."""
    ranks = [gpu_rank(tmp_path / f"rank{r}.sqlite", r, 8) for r in range(2)]
    fds = []
    real = S._plain_fd
    monkeypatch.setattr(S, "_plain_fd", lambda fh: fds.append(real(fh)) or fds[-1])

    def convert(jobs: str, out: Path) -> bytes:
        res = CliRunner().invoke(main, ["-q", "--no-cache", "-j", jobs, "-m", *map(str, ranks), str(out)])
        assert res.exit_code == 0, res.output
        return Path(f"{out}.prv").read_bytes()

    one = convert("1", tmp_path / "one" / "t")
    monkeypatch.setattr(writer, "MIN_SPLIT", 1)
    split = convert("3", tmp_path / "split" / "t")
    assert split == one
    assert len(fds) == 1 and fds[0] is not None  # (one split merge, its parts written at their offsets)

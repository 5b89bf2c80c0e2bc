"""The numba kernels and their Python forms (core/jit.py): the same results on random inputs and on
whole conversions; small runs compile nothing, a large input compiles its kernel once into the cache."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MPI4, ROOT, convert

from nsys2prv.core.intervals import innermost_enclosing, nesting_depth, overlap_lanes, paint_states
from nsys2prv.metrics.measures import mask_durations
from nsys2prv.paraver.format import OPEN_END, Runs, Tables, write_compact


def both(monkeypatch, f):
    """``f()`` with the kernels forced to Python, then compiled."""
    out = []
    for mode in ("python", "compiled"):
        monkeypatch.setenv("NSYS2PRV_KERNELS", mode)
        out.append(f())
    return out


def _intervals(rng, n, groups=5, span=2000, nested=False):
    g = rng.integers(0, groups, n)
    s = rng.integers(0, span, n)
    if nested:  # push/pop: each group a stack of intervals inside the previous
        s = np.sort(s)
        e = s + (span - s) // 2
    else:
        e = s + rng.integers(0, 60, n)  # zero-length intervals and ties included
    return g, s, e


@pytest.mark.parametrize("seed", range(4))
def test_interval_kernels_give_the_same_in_python_and_compiled(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    g, s, e = _intervals(rng, 3000)
    state, prio = rng.integers(1, 6, 3000), rng.integers(0, 3, 3000)
    default = rng.integers(0, 2, 5)
    for f in (
        lambda: nesting_depth(g, s, e),
        lambda: overlap_lanes(g, s, e),
        lambda: innermost_enclosing(g, s, e, g[::-1].copy(), s + 7),
        lambda: mask_durations(g, s, e, state % 3, 5, 3),
    ):
        a, b = both(monkeypatch, f)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    a, b = both(monkeypatch, lambda: paint_states(g, s, e, state, prio, default, 2100))
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and len(a[0]) > 500
    gn, sn, en = _intervals(rng, 500, nested=True)
    a, b = both(monkeypatch, lambda: nesting_depth(gn, sn, en))
    assert np.array_equal(a, b) and a.max() > 10


def _runs(rng, n_runs, n_thr, width, first, dyn, end_ns):
    """Random sorted runs of compact records (states, some final; communications; events of three
    signatures, run a's shifted by ``sbase[a]``), with ties in (time, key) within and across runs."""
    pieces, fields = [], 0
    start, fstart, sbase = [0], [], []
    for a in range(n_runs):
        n = 0 if a == 2 else int(rng.integers(400, 900))  # (an empty run too)
        sig = rng.integers(0, 4, n).astype(np.int32)  # event signatures 2, 3: 2, 3 or 3, 4 globally
        base = int(a % 2)
        g = sig + np.where(sig >= 2, base, 0)
        time = rng.integers(0, 300, n)  # dense: ties across and within runs
        key = rng.integers(0, 3, n)
        order = np.lexsort((key, time))
        time, key, sig, g = time[order], key[order], sig[order], g[order]
        w = width[g]
        offs = np.cumsum(w) - w
        tail = rng.integers(-(10**12), 10**12, int(w.sum()))
        st = np.flatnonzero(g == 0)
        final = st[rng.random(len(st)) < 0.3]
        tail[offs[final]] = OPEN_END  # some start at or after END: not written
        cm = np.flatnonzero(g == 1)
        tail[offs[cm] + 1] = rng.integers(0, n_thr, len(cm))  # the receiving thread
        for s in (3, 4):
            at = np.flatnonzero(g == s)
            for f in range(width[s]):
                if dyn[first[s] + f]:
                    tail[offs[at] + f] = rng.integers(0, 4, len(at))  # local name codes
        pieces.append((time, key, rng.integers(0, n_thr, n).astype(np.int32), sig, tail))
        start.append(start[-1] + n)
        fstart.append(fields)
        sbase.append(base)
        fields += len(tail)
    cols = [np.concatenate(c) for c in zip(*pieces)]
    return Runs(*cols, np.array(start), np.array(fstart), np.array(sbase))


@pytest.mark.parametrize("seed, zeros", [(0, False), (1, False), (2, False), (3, True), (4, True)])
def test_the_merging_formatter_and_its_numpy_twin_write_the_same_bytes(monkeypatch, seed, zeros):
    # zeros: global signature 4 is one of zeros (its two values all 0, none in the tail)
    rng = np.random.default_rng(seed)
    n_thr, end_ns = 7, 250
    pairs = np.array([2, 6, 1, 3, 2])
    width = np.array([2, 6, 1, 3, 0 if zeros else 2])
    first = np.array([0, 0, 0, 1, 4])
    dyn = np.array([False, True, False, True, False, False])
    tables = Tables(
        *(rng.integers(1, 100, n_thr) for _ in range(3)),
        width,
        pairs,
        first,
        np.array([0, 0, 0, 5, 9]),
        rng.integers(60000000, 90000000, 6),
        dyn,
        rng.integers(0, 10**6, 40),
    )
    runs = _runs(rng, 6, n_thr, width, first, dyn, end_ns)

    def write():
        fh, counts = io.BytesIO(), np.zeros(3, np.int64)
        write_compact(fh, runs, tables, end_ns, counts, np.empty(2000, np.uint8))  # a few records per call
        return fh.getvalue(), counts.tolist()

    (text, counts), compiled = both(monkeypatch, write)
    assert compiled == (text, counts)
    # the global order: a stable lexsort of the runs one after another, late final states left out
    g = runs.sig + np.where(runs.sig >= 2, np.repeat(runs.sbase, np.diff(runs.start)), 0)
    order = np.lexsort((runs.key, runs.time))
    w = width[g]
    offs = np.cumsum(w) - w
    late = (g == 0) & (runs.tail[offs] == OPEN_END) & (runs.time >= end_ns)
    kept = order[~late[order]]
    lines = text.decode().splitlines()
    assert [int(x.split(":")[5]) for x in lines] == runs.time[kept].tolist()
    assert [x[0] for x in lines] == [{0: "1", 1: "3"}.get(int(s), "2") for s in g[kept]]
    assert counts == [int((g[kept] == 0).sum()), int((g[kept] == 1).sum()), int((g[kept] >= 2).sum())]
    final = [x for x, k in zip(lines, kept) if g[k] == 0 and runs.tail[offs[k]] == OPEN_END]
    assert final and all(x.split(":")[6] == str(end_ns) for x in final)  # closed at END
    assert late.any() and len(lines) == len(g) - int(late.sum()) > 1500
    fours = [x.split(":")[6:] for x, k in zip(lines, kept) if g[k] == 4]
    assert fours and all(len(f) == 4 for f in fours)  # two type:value pairs, of zeros only when zeros
    assert all(f[1] == f[3] == "0" for f in fours) == zeros
    assert [f[0] for f in fours] == [str(tables.types[4])] * len(fours)


def test_the_number_writer_writes_every_digit_count_as_decimal_text(monkeypatch):
    # every boundary of the digit count (two digits are written at a time), negatives, zero, int64's
    # largest: as event values (one type:value pair a record), through the formatter, Python and compiled
    p = 10 ** np.arange(19, dtype=np.int64)
    edges = np.concatenate([p - 1, p, p + 1, -p, -(p - 1), [0, np.iinfo(np.int64).max, -np.iinfo(np.int64).max]])
    vals = np.concatenate([edges, np.random.default_rng(7).integers(-(2**62), 2**62, 5000)]).astype(np.int64)
    n = len(vals)
    one = np.ones(1, np.int64)
    tables = Tables(
        one,
        one,
        one,
        np.array([2, 6, 1]),
        np.array([2, 6, 1]),
        np.zeros(3, np.int64),
        np.zeros(3, np.int64),
        one,
        np.zeros(1, bool),
        one,
    )
    z = np.zeros(1, np.int64)
    runs = Runs(
        np.arange(n, dtype=np.int64),
        np.zeros(n, np.int64),
        np.zeros(n, np.int32),
        np.full(n, 2, np.int32),
        vals,
        np.array([0, n]),
        z,
        z,
    )
    expected = "".join(f"2:1:1:1:1:{t}:1:{v}\n" for t, v in enumerate(vals.tolist()))

    def write():
        fh = io.BytesIO()
        write_compact(fh, runs, tables, 0, np.zeros(3, np.int64))
        return fh.getvalue().decode()

    assert both(monkeypatch, write) == [expected, expected]


def _outputs(out: Path) -> dict:
    return {ext: Path(f"{out}.{ext}").read_bytes() for ext in ("prv", "pcf", "row")}


def test_a_conversion_is_the_same_with_python_or_compiled_kernels(monkeypatch, tmp_path):
    ranks = sorted(MPI4.glob("rank*.sqlite"))
    outs = []
    for mode in ("python", "compiled"):
        monkeypatch.setenv("NSYS2PRV_KERNELS", mode)
        out = tmp_path / mode / "t"
        convert(["-t", "mpi,nvtx,osrt", "-m", *ranks, out])
        pop = Path(f"{out}.pop.json").read_text().replace(f'"label": "{out.name}"', "")
        outs.append((_outputs(out), pop))
    assert outs[0] == outs[1]


def test_a_gpu_conversion_is_the_same_with_python_or_compiled_kernels(monkeypatch, tmp_path, clover_export):
    src = clover_export
    outs = []
    for mode in ("python", "compiled"):
        monkeypatch.setenv("NSYS2PRV_KERNELS", mode)
        convert([src, tmp_path / mode / "t"])
        outs.append(_outputs(tmp_path / mode / "t"))
    assert outs[0] == outs[1]
    assert b"\n3:" in outs[0]["prv"]  # launch-to-kernel communications were formatted


def _run(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NSYS2PRV_KERNELS")}
    env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)


# the cache files of the PRECOMPILED kernels
PRECOMPILED_FILES = sorted(["intervals._paint", "measures._sweep", "format._format_compact"])


def _cached_kernels(cache: Path) -> list[str]:
    """The kernels compiled into the numba cache under ``cache`` (XDG_CACHE_HOME), by file name."""
    return sorted(p.name.split("-")[0] for p in cache.glob("nsys2prv/numba/*/*.nbi"))


def test_a_small_run_compiles_nothing_and_a_large_input_compiles_once(tmp_path):
    cache = tmp_path / "cache"
    ranks = " ".join(str(p) for p in sorted(MPI4.glob("rank*.sqlite")))
    res = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "-t", "mpi,nvtx", "-m", *ranks.split(), str(tmp_path / "t")],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "NSYS2PRV_KERNELS"}, "XDG_CACHE_HOME": str(cache)},
    )
    assert res.returncode == 0, res.stderr
    assert "compiling" not in res.stderr
    assert _cached_kernels(cache) == []

    big = (
        "import numpy as np; from nsys2prv.core.intervals import _depth_sorted, nesting_depth; "
        "from nsys2prv.core.jit import Kernel; Kernel.announce = print; n = 200_000; "
        "z = np.zeros(n, np.int64); s = np.arange(n, dtype=np.int64); "
        "d = nesting_depth(z, s, s + 1); print('compiled', bool(_depth_sorted.compiled.signatures), d.max())"
    )
    first = _run(big, cache)
    assert first.returncode == 0, first.stderr
    assert "compiling _depth_sorted" in first.stdout and "compiled True 0" in first.stdout
    assert _cached_kernels(cache) == ["intervals._depth_sorted"]
    again = _run(big.replace("n = 200_000", "n = 10"), cache)  # small, but cached: compiled code
    assert again.returncode == 0, again.stderr
    assert "compiling" not in again.stdout and "compiled True 0" in again.stdout


def test_a_large_first_run_compiles_its_kernels_in_a_forked_process_and_loads_them(tmp_path):
    """``warmup.precompile``: nothing for small inputs; for a large one, the PRECOMPILED kernels
    compiled into the cache by another process, then loaded here (this process compiles none)."""
    small, large = tmp_path / "small.sqlite", tmp_path / "large.sqlite"
    small.write_bytes(b"x" * 1000)
    with open(large, "wb") as fh:
        fh.truncate(4 << 20)  # (only its size decides)
    code = (
        "import os; from nsys2prv.pipeline import warmup; from nsys2prv.core.jit import Kernel; "
        "compiled = []; Kernel.announce = compiled.append; "
        f"print('small', warmup.precompile([{str(small)!r}], 1, 2)); "
        f"print('busy', warmup.precompile([{str(large)!r}], 2, 2)); "
        f"pre = warmup.precompile([{str(small)!r}, {str(large)!r}], 1, 2, print); child = pre.proc.pid; "
        "pre.wait(*warmup.PRECOMPILED); "
        "probes = [(k, a) for k, a in warmup._probes() if k.__name__ in warmup.PRECOMPILED]; "
        "print('loaded', [k.load(*a) for k, a in probes], [bool(k.compiled.signatures) for k, a in probes]); "
        "pre.stop(); print('child gone', not os.path.exists(f'/proc/{child}'), 'compiled here', compiled); "
        "print('again', warmup.precompile([str(os.path.abspath(" + repr(str(large)) + "))], 1, 2))"
    )
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["small None", "busy None"]
    assert lines[2].startswith("nsys2prv: compiling _paint, _sweep, _format_compact for this machine while the")
    assert lines[3:] == [
        "loaded [True, True, True] [True, True, True]",
        "child gone True compiled here []",
        "again None",
    ]
    assert _cached_kernels(tmp_path / "cache") == PRECOMPILED_FILES


def test_the_command_line_starts_the_compiler_before_pandas_and_numba_and_marks_the_cache_ready(tmp_path):
    """``warmup.start_early`` (what the command line calls first): for a large input, a forked process
    compiling the PRECOMPILED kernels in that order (it inherits numba; this process has not loaded pandas);
    once all are in the cache it marks the cache ready, and a later run starts no compiler.  A mark
    another user could have written (writable by others, or a link) is not trusted."""
    large = tmp_path / "large.sqlite"
    with open(large, "wb") as fh:
        fh.truncate(4 << 20)  # (only its size decides)
    code = (
        "import os, sys; from nsys2prv.pipeline import warmup as w; "
        f"w.start_early([{str(tmp_path / 'small.sqlite')!r}]); print('missing input', w._early); "
        f"w.start_early([{str(large)!r}]); pre = w._early; "
        "print('started', pre is not None, 'pandas' in sys.modules, 'numba' in sys.modules); "
        "got = [pre._recv.recv() for _ in w.PRECOMPILED]; pre.proc.join(); print('order', got, pre.proc.exitcode); "
        "mark = w.user_cache_dir() / 'numba' / w._ready_name(); print('ready', w._ready(), mark.exists()); "
        f"w._early = None; w.start_early([{str(large)!r}]); print('again', w._early); "
        "os.chmod(mark, 0o666); print('writable by others', w._ready()); "
        "os.unlink(mark); os.symlink(os.devnull, mark); print('a link', w._ready())"
    )
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "missing input None",
        "started True False True",
        "order ['_paint', '_sweep', '_format_compact'] 0",
        "ready True True",
        "again None",
        "writable by others False",
        "a link False",
    ]
    assert _cached_kernels(tmp_path / "cache") == PRECOMPILED_FILES


def test_the_ready_mark_is_named_by_the_kernels_files_without_importing_them(monkeypatch):
    """``warmup._ready_name`` (every large run asks it): numba's and the PRECOMPILED modules' files, by
    the modules' names (the files ``find_spec`` finds), stated without importing numba or pandas."""
    import importlib.util

    from nsys2prv.pipeline import warmup as w

    code = "import sys; from nsys2prv.pipeline import warmup as w; w._ready_name(); "
    code += "print(sorted(m for m in ('numba', 'numpy', 'pandas', 'nsys2prv.metrics') if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "[]\n"
    stated = []
    real = os.stat
    monkeypatch.setattr(w.os, "stat", lambda f, *a, **k: stated.append(f) or real(f, *a, **k))
    name = w._ready_name()
    spec = importlib.util.find_spec("numba")
    assert spec is not None
    origins = [spec.origin, *(importlib.util.find_spec(m).origin for m in w.PRECOMPILED_MODULES)]  # type: ignore[union-attr]
    assert stated == origins and name == w._ready_name() and name.startswith("ready-") and len(name) == 38


def test_cached_kernels_load_without_numbas_lowerings_and_a_compilation_after_them_has_them(tmp_path):
    """``jit._skip_refresh``: loading a cached kernel initialises numba's runtime only, not every
    lowering numba has (``numba.np.linalg`` stands for them: numba's ``refresh`` imports it), reads
    each kernel's code once and compiles nothing; the loaded code computes (exact POP masks); a compilation afterwards
    registers the lowerings itself."""
    cache = tmp_path / "cache"
    compile_ = "from nsys2prv.pipeline import warmup as w; [k.compiled(*a) for k, a in w._precompiled_probes()]"
    assert _run(compile_, cache).returncode == 0
    code = (
        "import sys, collections, numpy as np; from numba.core import caching; n = collections.Counter(); "
        "real = caching.Cache._load_overload; "
        "caching.Cache._load_overload = lambda c, sig, ctx: n.update([c._name]) or real(c, sig, ctx); "
        "from nsys2prv.pipeline import warmup as w; w.warm_numba(skip_blas_probe=True); "
        "ks = {k.__name__: k for k, _ in w._precompiled_probes()}; "
        "print('read once', sorted(set(n.values())), sorted(c.split()[1] for c in n)); "
        "print('loaded', sorted(n for n, k in ks.items() if k.compiled.signatures), "
        "sum(sum(k.compiled.stats.cache_misses.values()) for k in ks.values()), 'numba.np.linalg' in sys.modules); "
        "from nsys2prv.metrics.measures import mask_durations; "
        "a = lambda *v: np.array(v, np.int64); "
        "print('masks', mask_durations(a(0, 0, 0), a(0, 2, 10), a(5, 6, 12), a(0, 1, 0), 1, 2).tolist()); "
        "import numba; f = numba.njit(lambda a: np.linalg.norm(a)); "
        "print('compiled', f(np.ones(4)), 'numba.np.linalg' in sys.modules)"
    )
    res = _run(code, cache)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "read once [1] ['_format_compact', '_paint', '_sweep']",  # (each cached kernel's code read once)
        "loaded ['_format_compact', '_paint', '_sweep'] 0 False",
        "masks [[4, 4, 1, 3]]",  # (between the intervals 4; class 0 alone 2 + 2, class 1 alone 1, both 3)
        "compiled 2.0 True",
    ]


def test_a_cached_load_needing_more_than_numbas_runtime_takes_numbas_way_and_a_kept_load_is_taken_once(monkeypatch):
    """``jit._skip_refresh`` on a stand-in for numba's cache: a load that fails without the lowerings
    refreshes the context and loads again; an error the guard swallows is "not there"; what a check
    loaded (``keep``) is returned once, to the next load of that signature, without reading again."""
    from contextlib import contextmanager

    from nsys2prv.core import jit

    calls: list = []

    class Context:
        def refresh(self):
            calls.append("refresh")

    class Cache:
        fail = ["symbol"]

        @contextmanager
        def _guard_against_spurious_io_errors(self):
            try:
                yield
            except OSError:
                calls.append("swallowed")

        def _load_overload(self, sig, ctx):
            calls.append(f"read {sig}")
            if self.fail:
                what = self.fail.pop(0)
                if what == "symbol":
                    raise RuntimeError("Symbols not found: _numba_hashsecret")
                raise OSError(what)
            return f"cres {sig}"

    monkeypatch.setattr(jit, "rtsys", type("Runtime", (), {"initialize": lambda self, ctx: calls.append("nrt")})())
    cache, ctx = Cache(), Context()
    jit._skip_refresh(cache)
    assert cache.load_overload("a", ctx) == "cres a"
    assert calls == ["nrt", "read a", "refresh", "read a"]
    calls.clear()
    cache.fail = ["EIO"]
    assert cache.load_overload("b", ctx) is None and calls == ["nrt", "read b", "swallowed"]
    calls.clear()
    assert cache.load_overload("c", ctx, keep=True) == "cres c" and cache.load_overload("c", ctx) == "cres c"
    assert cache.load_overload("c", ctx) == "cres c"
    assert calls == ["nrt", "read c", "nrt", "read c"]  # (the kept one taken once, then read again)


def test_a_command_that_fails_before_converting_stops_its_compiler(tmp_path):
    """An input given twice: the command line has started the compiler (a large input) and ends with
    its one-line error; the compiler's process is gone and none is left registered."""
    large = tmp_path / "large.sqlite"
    with open(large, "wb") as fh:
        fh.truncate(4 << 20)
    args = [str(large), str(large), str(tmp_path / "out")]
    code = (
        "import nsys2prv.pipeline.warmup as w; from nsys2prv.cli import main; procs = []; "
        "start = w.Precompile.__init__; "
        "w.Precompile.__init__ = lambda self, names: (start(self, names), procs.append(self.proc))[0]\n"
        f"try:\n    main({args!r}, standalone_mode=False)\nexcept SystemExit as exc:\n    print('exit', exc.code)\n"
        "print('started', len(procs), 'alive', procs[0].is_alive(), 'left', w._early)"
    )
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["exit 2", "started 1 alive False left None"]
    assert "this file is given twice" in res.stderr, res.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_conversion_takes_the_command_lines_compiler_with_the_same_outputs(monkeypatch, tmp_path, jobs):
    """The command line starts the compiler (``start_early``; the size threshold lowered to 0 for the
    small real ranks) and the conversion's ``precompile`` takes it over, whether a reading worker
    leaves one of the two cores idle (-j 1) or both are busy (-j 2): the cache holds the three kernels
    and is marked ready, none is left registered, and the outputs are those of Python kernels."""
    ranks = [str(p) for p in sorted(MPI4.glob("rank*.sqlite"))]
    args = ["-q", "-j", str(jobs), "-t", "mpi,nvtx,osrt", "-m", *ranks, str(tmp_path / "pre" / "t")]
    code = (
        "import nsys2prv.pipeline.warmup as w; w.PRECOMPILE_FROM_BYTES = 0; "
        "import nsys2prv.pipeline.conversion as c; c.default_jobs = lambda: 2; from nsys2prv.cli import main; "
        f"main({args!r}, standalone_mode=False); print('ready', w._ready(), w._early)"
    )
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["ready True None"]
    assert _cached_kernels(tmp_path / "cache") == PRECOMPILED_FILES
    monkeypatch.setenv("NSYS2PRV_KERNELS", "python")
    convert(["-t", "mpi,nvtx,osrt", "-m", *ranks, tmp_path / "py" / "t"])
    assert _outputs(tmp_path / "pre" / "t") == _outputs(tmp_path / "py" / "t")


@pytest.mark.parametrize("seed", range(6))
def test_lanes_of_intervals_without_overlaps_skip_the_sweep_and_agree_with_it(seed):
    """Groups whose intervals follow one another (touching allowed) are all lane 0 without the sweep;
    one overlap anywhere runs the sweep: both as the sweep on its own gives (``_lanes_sorted``)."""
    from nsys2prv.core.intervals import _lanes_sorted

    rng = np.random.default_rng(seed)
    n = 2_000
    g = rng.integers(0, 5, n).astype(np.int64)
    gap = rng.integers(0, 3, n)  # 0: the next starts where this one ends
    dur = rng.integers(1, 50, n)
    s = np.cumsum(gap + dur) - dur  # back to back, per position (any group)
    e = s + dur
    for starts, ends in ((s, e), (s, e + (np.arange(n) == n // 2) * 1_000)):  # then one overlap
        order = np.lexsort((starts, g)).astype(np.int64)
        want = _lanes_sorted(g, starts.astype(np.int64), ends.astype(np.int64), order)
        got = overlap_lanes(g, starts, ends)
        assert (got == want).all()
    assert not overlap_lanes(g, s, e).any() and overlap_lanes(g, s, e + (np.arange(n) == n // 2) * 1_000).any()


@pytest.mark.parametrize("seed", range(4))
def test_the_lanes_order_is_a_lexsort_of_groups_and_starts(seed):
    """Starts in order within each group (the groups alone sorted, then checked) or not (the lexsort),
    ties in input order, groups past 16 bits: the order of ``np.lexsort((start, group))``."""
    from nsys2prv.core.intervals import _by_group_then_start

    rng = np.random.default_rng(seed)
    n = 3_000
    for top in (4, 1 << 20):  # (group codes beyond int16: the lexsort)
        g = rng.integers(0, 4, n) * (top // 4)
        s = rng.integers(0, 200, n)  # ties
        in_order = np.empty(n, np.int64)
        for k in np.unique(g):
            in_order[g == k] = np.sort(s[g == k])
        for start in (s, in_order):
            assert (_by_group_then_start(g, start) == np.lexsort((start, g))).all()

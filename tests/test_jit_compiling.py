"""``core.jit.compiling``: numba's compiler made cheaper for nsys2prv's kernels makes the same code
(LLVM IR and machine code), keeps what it keeps only while a kernel compiles, and leaves the
garbage collector and numba's error messages as it found them; ``lean_lowerings`` (the background
compiler: fewer of numba's implementations, no cffi) makes the same code too, and a kernel needing
more compiles all the same."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import numpy as np
from conftest import ROOT

from nsys2prv.core import jit

# compiles the PRECOMPILED kernels on their warm-up probes with an empty cache, inside ``compiling``
# (Kernel.compile), also with ``lean_lowerings`` (as the background compiler does), or with numba alone:
# its own pipeline ("numba"), and its runtime too ("nrt"); prints the code's digests (the whole library's
# LLVM IR and assembly, the kernel function's own assembly) and whether numba's random numbers and cffi
# were loaded
_CODE = """
import hashlib, json, re, sys
from nsys2prv.core import jit
from nsys2prv.pipeline import warmup
from numba import njit
probes = warmup._precompiled_probes()
if sys.argv[1] == "lean":
    jit.lean_lowerings()
digest = lambda text: hashlib.sha256(text.encode()).hexdigest()
out = {}
for k, args in probes:
    options = k.options
    if sys.argv[1] in ("numba", "nrt"):  # numba's own pipeline (and "nrt": its runtime too)
        own = {o: v for o, v in options.items() if o != "pipeline_class"}
        if sys.argv[1] == "nrt":
            own.pop("_nrt", None)
        d = njit(**own)(k.py_func)
        d(*args)
    else:
        d = k.compiled
        k.compile(*args)
    (sig,) = d.signatures
    asm = d.inspect_asm(sig)
    # the kernel's own function (not its CPython wrapper), its name left out (numba's mangled names
    # carry the compiler's flags): the same machine code with or without numba's runtime
    name = next(n for n in re.findall(r"^(_ZN\\S+):$", asm, re.M) if not n.startswith("_ZN7cpython"))
    body = asm[asm.index(name + ":") :].split(".Lfunc_end", 1)[0].replace(name, "K")
    flat, nrt = "pipeline_class" in options, options.get("_nrt", True)
    out[k.__name__] = [digest(d.inspect_llvm(sig)), digest(asm), digest(body), flat, nrt]
out["loaded"] = ["numba.np.random" in sys.modules, sys.modules.get("cffi", 0) is not None]
print(json.dumps(out))
"""


def _digests(tmp_path, how: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NSYS2PRV_KERNELS"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / how)  # (empty: each process compiles)
    res = subprocess.run(
        [sys.executable, "-c", _CODE, how], env=env, capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_kernels_compiled_inside_compiling_are_the_same_code_as_numbas_own(tmp_path):
    cheaper, lean, numba_own, nrt = (_digests(tmp_path, how) for how in ("cheaper", "lean", "numba", "nrt"))
    assert sorted(cheaper) == ["_format_compact", "_paint", "_sweep", "loaded"]
    # (the three: no function inside, no array made: the flat pipeline, without numba's runtime)
    assert all(cheaper[n][3:] == [True, False] for n in ("_format_compact", "_paint", "_sweep"))
    # the flat pipeline, inside ``compiling``: the same code as numba's own pipeline, whole
    assert cheaper == numba_own and numba_own["loaded"] == [True, True]  # (numba's own: all of it)
    assert lean.pop("loaded") == [False, False]  # (lean: neither numba's random numbers nor cffi)
    numba_own.pop("loaded")
    assert lean == numba_own
    # with numba's runtime: other wrappers (the whole code differs), the kernel's own code the same
    nrt.pop("loaded")
    for name, (_, asm, body, _, _) in numba_own.items():
        assert nrt[name][2] == body and nrt[name][1] != asm


def test_kernels_get_the_flat_pipeline_and_no_runtime_only_where_they_can():
    from nsys2prv.metrics import replay
    from nsys2prv.translate import mpi_messages

    def nested(a):
        return (lambda x: x + 1)(a[0])

    # the two choices apart: a function inside keeps numba's pipeline, whatever it allocates
    assert "pipeline_class" not in jit._options(nested, allocates=True)  # (a function inside: numba's own)
    assert jit._options(nested, allocates=True).get("_nrt", True)
    without = jit._options(nested, allocates=False)
    assert "pipeline_class" not in without and without["_nrt"] is False
    # kernels making arrays keep numba's runtime (np.full, np.zeros ...), the flat pipeline all the same
    for k in (replay._replay, mpi_messages._wildcards):
        options = k.options
        assert options.get("_nrt", True) and options["pipeline_class"] is jit._FlatPipeline


_SORT_SUM = """
import numpy as np

def sort_sum(a):
    return np.sort(a)[0] + a.sum()
"""

_FALLBACK = """
import sys
import numpy as np
from nsys2prv.core import jit
from sort_sum import sort_sum

k = jit.Kernel(sort_sum, 0)
jit.lean_lowerings()
before = ["numba.np.arraymath" in sys.modules, sys.modules.get("cffi", 0) is None]
out = k.compile(np.array([3, 1, 2], np.int64))
print(before, int(out), "numba.np.arraymath" in sys.modules, jit._numba_loads, sys.modules.get("cffi", 0) is None)
"""


def test_a_kernel_needing_more_than_the_lean_lowerings_compiles_with_all_of_numbas(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NSYS2PRV_KERNELS"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    (tmp_path / "sort_sum.py").write_text(_SORT_SUM)
    res = subprocess.run(
        [sys.executable, "-c", _FALLBACK], env=env, capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert res.returncode == 0, res.stderr
    # lean: np.sort's implementation (numba.np.arraymath) not loaded, cffi blocked; then all of numba's
    assert res.stdout.split("\n")[0] == "[False, True] 7 True None False"


def test_compiling_keeps_call_types_only_inside_and_restores_the_collector():
    from numba import njit

    def add(a, b):
        return a + b + len(a)

    x = np.arange(3, dtype=np.int64)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            with jit.compiling():
                assert not gc.isenabled()
                with jit.compiling():  # (nested: the outermost restores)
                    assert njit(add)(x, x).tolist() == [3, 5, 7]
                    kept = len(jit._call_types)
                assert not gc.isenabled() and len(jit._call_types) == kept > 0
            assert gc.isenabled() is enabled and jit._call_types == {} and jit._flags_alive == []
        # outside ``compiling``: numba's own resolution, nothing kept
        assert njit(add)(x, x.copy()).tolist() == [3, 5, 7] and jit._call_types == {}
    finally:
        (gc.enable if was else gc.disable)()


def test_a_resolution_that_fails_raises_as_numbas_own_and_is_not_kept():
    from numba import njit
    from numba.core import errors
    from numba.core.errors import TypingError

    def bad(a):
        return a + "x"

    for inside in (False, True):
        try:
            if inside:
                with jit.compiling():
                    njit(bad)(np.arange(3))
            else:
                njit(bad)(np.arange(3))
        except TypingError as e:
            assert "add" in str(e) or "+" in str(e)
            assert ("\x1b[" in str(e)) is not inside  # (inside: plain text, without colorama's markup)
        else:
            raise AssertionError("typed an array plus a string")
    assert jit._call_types == {} and "_markup" not in vars(errors.termcolor())

"""``core.jit.compiling``: numba's compiler made cheaper for nsys2prv's kernels makes the same code
(LLVM IR and machine code), keeps what it keeps only while a kernel compiles, and leaves the
garbage collector as it found it."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import numpy as np
from conftest import ROOT

from nsys2prv.core import jit

# compiles _sweep and _format_compact on their warm-up probes with an empty cache, inside
# ``compiling`` (Kernel.compile) or with numba alone (the dispatcher), and prints the code's digests
_CODE = """
import hashlib, json, sys
from nsys2prv.pipeline import warmup
out = {}
for k, args in warmup._precompiled_probes():
    if k.__name__ == "_paint":
        continue
    (k.compile if sys.argv[1] == "cheaper" else k.compiled)(*args)
    (sig,) = k.compiled.signatures
    digest = lambda text: hashlib.sha256(text.encode()).hexdigest()
    out[k.__name__] = [digest(k.compiled.inspect_llvm(sig)), digest(k.compiled.inspect_asm(sig))]
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
    cheaper, numba_own = _digests(tmp_path, "cheaper"), _digests(tmp_path, "numba")
    assert sorted(cheaper) == ["_format_compact", "_sweep"]
    assert cheaper == numba_own


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
        else:
            raise AssertionError("typed an array plus a string")
    assert jit._call_types == {}

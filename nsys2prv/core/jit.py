"""numba for nsys2prv's kernels: ``kernel`` (tiered: interpreted on small inputs until compiled) and
``njit`` (for the helpers kernels call), with their compiled-code cache in the user's cache
directory (``$XDG_CACHE_HOME/nsys2prv/numba``, else ``~/.cache/nsys2prv/numba``), never inside the
installed package: a cache written into ``site-packages/nsys2prv/__pycache__`` outlives an
uninstall and shadows a later editable install.

``NUMBA_CACHE_DIR``, when set, is numba's own choice and wins; so do numba's own locators where
the user's cache directory cannot be written.

Compiling a kernel takes 0.3-1.5 s, far longer than running it on a small input: a first conversion
of a small run would spend most of its time compiling.  A ``kernel`` therefore runs as Python (the
same source, with the helpers it calls as Python too) while it is neither compiled in this process
nor in the cache and its input is small (fewer elements in its largest array than its
``interpret_below``); a larger input compiles it, once, into the cache, and from then on every call
of every run takes the compiled code.  ``NSYS2PRV_KERNELS=python`` or ``=compiled`` forces one form
(the tests compare them).

A kernel compiles inside ``compiling``, which makes numba's compiler cheaper without changing what
it makes (the same LLVM IR and machine code, byte for byte): numba types each operation of a
kernel anew (``a + b`` on two int64 tries every template of ``+`` until one fits, building an error
message for each that does not), so the types of an operation are kept for its next occurrences in
the same compilation; and the garbage collector waits until the compilation has ended (numba's
compiler makes many objects, none of them garbage for long).  Both cut the CPU of compiling the
kernels a first run needs by about a quarter (BENCHMARKS.md, "Issue 40, third stop").  Inside it
numba's error messages are plain text: numba builds one (highlighted through colorama, which
costs more than the rest) for every template that does not fit an operation's types.

The background compiler (``pipeline/warmup.py``) compiles the kernels every large conversion runs
and nothing else: ``lean_lowerings`` has numba load only the implementations they use, without
cffi (numba's first compilation otherwise imports some 80 modules of it: random numbers,
polynomials, typed containers, cffi's C parser); a kernel that does not compile so is compiled
again with all of numba's (``Kernel.compile``).  Kernels have no C callback wrapper
(``no_cfunc_wrapper``: nsys2prv calls them from Python only) and are compiled without numba's IR
rewrites (``no_rewrites``: the mode numba itself falls back to when a rewrite fails; other machine
code, no slower).  In all, 16-20 % less CPU to compile (BENCHMARKS.md, "Issue 40, fourth stop").
A kernel that defines no function inside it skips numba's closure inlining (``_FlatPipeline``), and
one that makes no array (``allocates=False``) is compiled without numba's reference-counting
runtime: about 10 % less again, the kernels' own code the same (``_options``).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from nsys2prv.core.numba_import import import_numba

import_numba()  # (first: numba's start-up without SciPy and PyYAML)

from numba import njit
from numba.core import caching, compiler, cpu, errors, targetconfig, untyped_passes
from numba.core.registry import CPUDispatcher
from numba.core.types import functions

rtsys: Any
try:
    from numba.core.runtime import rtsys
except ImportError:  # (numba moved it: ``_skip_refresh`` keeps numba's own way)
    rtsys = None

from nsys2prv.core.environment import environment
from nsys2prv.core.paths import user_cache_dir

PACKAGE_DIR = Path(__file__).resolve().parent.parent


class _UserCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's cache locator for functions defined in this package's files."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(user_cache_dir() / "numba" / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.environ.get("NUMBA_CACHE_DIR") or not Path(py_file).resolve().is_relative_to(PACKAGE_DIR):
            return None
        return super().from_function(py_func, py_file)


def _install() -> None:
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if _UserCacheLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, _UserCacheLocator)


_install()

_depth = 0  # nesting of ``compiling``
_lock = threading.Lock()
_gc_was_enabled = True
_call_types: dict = {}  # (function type, typing context, argument types, flags' id) -> signature
_flags_alive: list = []  # (the flags whose ids are in _call_types' keys, alive while they are)
_numba_loads: Any = None  # numba's own CPUContext.load_additional_registries while ``lean_lowerings`` replaces it
_cffi_blocked = False


def _plain(msg, *_style):
    return msg


@contextmanager
def compiling():
    """numba's compiler made cheaper while nsys2prv compiles a kernel (module doc): the signature
    numba resolves for a function type (an operator, ``len``, ``np.int64``, ...) and argument types
    is kept until the outermost ``compiling`` ends, and the garbage collector is off until then."""
    global _depth, _gc_was_enabled
    with _lock:  # (threads: the outermost of them all restores)
        _keep_call_types()
        if _depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
            _plain_messages(True)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _call_types.clear()
                _flags_alive.clear()
                _plain_messages(False)
                if _gc_was_enabled:
                    gc.enable()


def _plain_messages(on: bool) -> None:
    """numba's error messages as plain text (on) or highlighted again (its colour scheme's markup;
    where numba has none, colorama missing, or names it otherwise: left alone)."""
    scheme = errors.termcolor()
    if not hasattr(type(scheme), "_markup"):
        return
    if on:
        setattr(scheme, "_markup", _plain)  # (an attribute of this instance: its class's again when removed)
    else:
        vars(scheme).pop("_markup", None)


def lean_lowerings() -> None:
    """For a process compiling nsys2prv's kernels and nothing else (the background compiler):
    numba's CPU target loads only the implementations of what the kernels do (integers, ranges,
    tuples, slices, arrays: numba's ``builtins``, ``numbers``, ``rangeobj``, ``slicing``,
    ``tupleobj``, ``iterators``, ``arrayobj``) instead of all of them, and cffi is not importable
    (as where it is not installed: no kernel calls a C function through it).  The kernels' code is
    the same (tests/test_jit_compiling.py); one that needs more is compiled again after
    ``all_lowerings``.  Where numba's names differ, its own way is kept."""
    global _numba_loads, _cffi_blocked
    own = getattr(cpu.CPUContext, "load_additional_registries", None)
    if _numba_loads is not None or own is None or rtsys is None:
        return

    def load_additional_registries(self):
        rtsys.initialize(self)  # (as numba's own, first)
        # implementations registered by importing their modules (numba's own imports these among others)
        from numba.cpython import builtins, iterators, numbers, rangeobj, slicing, tupleobj  # noqa: F401
        from numba.np import arrayobj  # noqa: F401

    _numba_loads = own
    setattr(cpu.CPUContext, "load_additional_registries", load_additional_registries)
    if "cffi" not in sys.modules:
        sys.modules["cffi"] = None  # type: ignore[assignment]  # import's "not importable"
        _cffi_blocked = True


def all_lowerings(context) -> bool:
    """Undo ``lean_lowerings`` and load the rest of numba's implementations into ``context`` (a
    target context); False where it was not in effect."""
    global _numba_loads, _cffi_blocked
    if _numba_loads is None:
        return False
    setattr(cpu.CPUContext, "load_additional_registries", _numba_loads)
    _numba_loads = None
    if _cffi_blocked and sys.modules.get("cffi", 0) is None:
        del sys.modules["cffi"]
    _cffi_blocked = False
    with _lock:
        _call_types.clear()  # (resolved among fewer templates)
    context.refresh()
    return True


def _keep_call_types() -> None:
    """Once: numba's ``BaseFunction.get_call_type`` answers from ``_call_types`` inside ``compiling``
    (the same function type, typing context, argument types and compiler flags: the same templates
    tried in the same order, the same answer); outside it, and for keyword arguments, numba's own.
    A resolution that fails raises, as numba's, and is not kept.  Where numba's names differ (another
    version), numba's own is left alone."""
    base = getattr(functions, "BaseFunction", None)
    numba_own = getattr(base, "get_call_type", None)
    flags_now = getattr(getattr(targetconfig, "ConfigStack", None), "top_or_none", None)
    if base is None or numba_own is None or flags_now is None or getattr(numba_own, "nsys2prv_keeps", False):
        return

    def get_call_type(self, context, args, kws, *more, **named):
        if _depth == 0 or kws or more or named:
            return numba_own(self, context, args, kws, *more, **named)
        flags = flags_now()
        key = (self, context, tuple(args), id(flags))
        try:
            return _call_types[key]
        except KeyError:
            pass
        except TypeError:  # (an argument type that cannot be hashed: numba's own)
            return numba_own(self, context, args, kws)
        sig = numba_own(self, context, args, kws)
        _flags_alive.append(flags)
        _call_types[key] = sig
        return sig

    get_call_type.nsys2prv_keeps = True  # type: ignore[attr-defined]
    base.get_call_type = get_call_type


# kernels: called from Python only (no C callback wrapper); numba's IR rewrites off (numba's own
# fallback mode: 4-6 % less CPU to compile the three a first run needs, the kernels no slower)
_KERNEL_OPTIONS: dict[str, Any] = {"no_cfunc_wrapper": True, "no_rewrites": True}


class _FlatPipeline(compiler.CompilerBase):
    """numba's nopython pipeline without its closure inlining, for a kernel that defines no function
    inside it (no code object among its constants: nothing to inline).  The pass otherwise only
    walks the IR (0.03 s of the 0.8 s that compiling the kernels of a first run takes); the code is
    the same (tests/test_jit_compiling.py)."""

    def define_pipelines(self):
        pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [p for p in pm.passes if p[0] is not untyped_passes.InlineClosureLikes]
        pm.finalize()
        return [pm]


def _options(fn, allocates: bool) -> dict[str, Any]:
    """numba's options for kernel ``fn``: ``_KERNEL_OPTIONS``; the flat pipeline where ``fn``
    defines no function; without numba's reference-counting runtime (NRT) where it ``allocates``
    nothing (the kernel's code is the same, its CPython wrapper smaller: 0.03-0.05 s less to compile
    the three of a first run; one that allocates then fails to compile)."""
    options = dict(_KERNEL_OPTIONS)
    if not any(isinstance(c, types.CodeType) for c in fn.__code__.co_consts):
        options["pipeline_class"] = _FlatPipeline
    if not allocates:
        options["_nrt"] = False
    return options


class Kernel:
    """A cached numba kernel that runs interpreted on small inputs until it is compiled (module doc)."""

    announce = None  # callable(text): told when a kernel is compiled (set by the command line)

    def __init__(self, fn, interpret_below: int, size=None, python=None, allocates: bool = True):
        self.py_func = fn
        self.options = _options(fn, allocates)  # (numba's options, but for the cache)
        self.compiled = njit(cache=True, **self.options)(fn)
        self.interpret_below = interpret_below
        self.size = size
        self.planned = 0
        self._python = python
        self._not_cached: set = set()
        self.__doc__, self.__name__, self.__wrapped__ = fn.__doc__, fn.__name__, fn

    def __call__(self, *args):
        mode = environment().kernels  # tests: "python" or "compiled" forces one form
        if mode == "python":
            return self.python(*args)
        if not self.compiled.signatures and mode != "compiled":
            size = max(
                self.planned,
                self.size(args)
                if self.size is not None
                else max((a.size for a in args if isinstance(a, np.ndarray)), default=0),
            )
            if not self.load(*args):
                if size < self.interpret_below:
                    return self.python(*args)
                if Kernel.announce is not None:
                    Kernel.announce(
                        f"nsys2prv: compiling {self.__name__} for this machine (first run only; "
                        f"cached in {user_cache_dir() / 'numba'}) ..."
                    )
        if not self.compiled.signatures:
            return self.compile(*args)
        return self.compiled(*args)

    def compile(self, *args):
        """Compile this kernel for ``args``' types (into the cache; loaded from it when it is there)
        inside ``compiling``, and run it on ``args`` (where it fails with ``lean_lowerings`` in
        effect: again with all of numba's implementations)."""
        try:
            with compiling():
                return self.compiled(*args)
        except Exception:
            if not all_lowerings(self.compiled.targetctx):
                raise
        # (numba keeps a compilation's failure for these types: forgotten, it compiles again)
        getattr(getattr(self.compiled, "_compiler", None), "_failed_cache", {}).clear()
        with compiling():
            return self.compiled(*args)

    def plan(self, size: int) -> None:
        """The caller is about to run ``size`` elements through this kernel in several calls: each
        call counts as that large (compile for a large total, however small the calls)."""
        self.planned = size

    def load(self, *args) -> bool:
        """Take this kernel's compiled code for ``args``' types from the cache (True), or say that
        it is not there (False); never compiles."""
        if self.compiled.signatures:
            return True
        try:
            sig = tuple(self.compiled.typeof_pyval(a) for a in args)
        except Exception:
            return False
        if sig in self._not_cached:
            return False
        if not self._in_cache(sig):
            self._not_cached.add(sig)
            return False
        self.compiled.compile(sig)  # loads what was just found (no compilation)
        return True

    def in_cache(self, *args) -> bool:
        """Whether the cache on disk holds this kernel's compiled code for ``args``' types (what a
        process that compiled it checks before saying so: numba skips a cache it cannot write)."""
        try:
            sig = tuple(self.compiled.typeof_pyval(a) for a in args)
        except Exception:
            return False
        return self._in_cache(sig)

    def _in_cache(self, sig) -> bool:
        try:
            cache = self.compiled._cache  # numba's private cache (see except)
            _skip_refresh(cache)
            # no index: nothing cached (and numba's compiler is not started just to look)
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            return (index is None or os.path.exists(index)) and cache.load_overload(
                sig, self.compiled.targetctx, keep=True
            ) is not None
        except Exception:  # numba's private cache API changed: compile when needed
            return False

    def forget_misses(self) -> None:
        """Look in the cache again (another process may have compiled this kernel since)."""
        self._not_cached.clear()

    def python(self, *args):
        """The kernel as Python, calling its helpers as Python (or its ``python`` twin, if given)."""
        if self._python is None:
            self._python = _interpreted(self.py_func)
        return self._python(*args)


def _skip_refresh(cache) -> None:
    """This kernel's numba cache loads without ``refresh``ing the target context, and each overload
    once: numba's ``Cache.load_overload`` refreshes the context first, which imports and registers
    every lowering numba has (0.07-0.1 s of CPU in each process: most of loading its first kernel),
    when cached object code needs only numba's runtime (NRT, initialised here); a compilation
    refreshes the context itself (numba's ``CompilerBase``), as does a lowering not yet registered
    (``BaseContext.get_function``).  What ``Kernel._in_cache`` loaded (``keep``) is what the
    dispatcher's ``compile`` then takes, instead of loading it again.  Where numba's private names
    differ, its own way is kept."""
    load = getattr(cache, "_load_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    if load is None or guard is None or rtsys is None or "load_overload" in vars(cache):
        return
    kept: dict = {}

    def load_overload(sig, target_context, keep: bool = False):
        if sig in kept:
            return kept.pop(sig)
        rtsys.initialize(target_context)
        cres = None  # (when the guard swallows an error reading the cache: as numba's own, not there)
        try:
            with guard():
                cres = load(sig, target_context)
        except Exception:  # (code needing more than NRT, e.g. a symbol a lowering module adds): numba's way
            target_context.refresh()
            with guard():
                cres = load(sig, target_context)
        if keep and cres is not None:
            kept[sig] = cres
        return cres

    cache.load_overload = load_overload


def _interpreted(fn):
    """``fn`` with every numba function among its module's globals replaced by its Python version
    (the helpers it calls, and theirs)."""
    g = dict(fn.__globals__)
    for name, value in list(g.items()):
        if isinstance(value, CPUDispatcher):
            f = value.py_func
            g[name] = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
        elif isinstance(value, Kernel):
            g[name] = types.FunctionType(value.py_func.__code__, g, name)
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def kernel(interpret_below: int, size=None, python=None, allocates: bool = True):
    """Decorator: a cached numba kernel run as Python below ``interpret_below`` (``Kernel``).  The size
    of a call is ``size(args)``, else the length of its largest array; ``python`` replaces the
    kernel's own source as its Python form (a vectorised twin, for kernels too slow interpreted);
    ``allocates`` False: the kernel makes no array (compiled without numba's runtime, ``_options``)."""
    return lambda fn: Kernel(fn, interpret_below, size, python, allocates)


def kernels() -> list[Kernel]:
    """Every kernel of the modules loaded so far."""
    return [
        v
        for m in list(sys.modules.values())
        if getattr(m, "__name__", "").startswith("nsys2prv.")
        for v in vars(m).values()
        if isinstance(v, Kernel)
    ]


__all__ = ["njit", "kernel", "Kernel", "kernels", "compiling", "lean_lowerings", "all_lowerings"]

"""Load numba and every cached compiled kernel of nsys2prv once, early (before worker processes are
forked, so that they inherit them instead of loading them again).  Nothing is compiled here: a
kernel not yet cached runs interpreted on small inputs and is compiled when an input needs it
(``core/jit.py``), with a line on stderr when the command line shows progress.

Numba's start-up probes BLAS by importing ``scipy.linalg`` when SciPy is installed;
nsys2prv's kernels never use BLAS, so a process that owns its numba (the command line and its
local workers) can skip that probe with ``skip_blas_probe=True``.

A first conversion of a large input (an empty cache) compiles the kernels every such conversion
runs (``PRECOMPILED``) in a forked process of its own, instead of in the main process between the
stages: the main process waits only for the kernels it is about to call, then loads them from the
cache.  The command line forks it first (``start_early``: before pandas is imported, so that it
compiles on the core the start-up leaves idle, then beside stage A's readers); the conversion takes
it over (``precompile``, which starts one itself, for the Python API, where stage A leaves a core
idle).  Once the cache holds all of them it is marked ready, and later runs fork nothing.
BENCHMARKS.md ("First run") has what each part gains.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import stat
import sys
from pathlib import Path

from nsys2prv.core import collector
from nsys2prv.core.dirs import open_dir
from nsys2prv.core.environment import environment
from nsys2prv.core.paths import distrust, user_cache_dir
from nsys2prv.core.workers import init_worker, start_reporter

_done = False
_PACKAGE = Path(__file__).resolve().parent.parent  # nsys2prv/


# the modules defining nsys2prv's kernels (each has ``warmup_probes``), and those defining the PRECOMPILED
# ones (their sources' stamps name the cache's "ready" mark; no pandas: ``metrics.replay`` imports it)
KERNEL_MODULES = (
    "nsys2prv.core.intervals",
    "nsys2prv.metrics.measures",
    "nsys2prv.metrics.replay",
    "nsys2prv.paraver.format",
)
PRECOMPILED_MODULES = ("nsys2prv.core.intervals", "nsys2prv.metrics.measures", "nsys2prv.paraver.format")


def _probes_of(modules: tuple[str, ...]) -> list[tuple]:
    """The kernels of ``modules`` with arguments of the types the conversion calls them with (one
    element each); imports those modules (here, not at the top: importing them loads numba)."""
    return [probe for m in modules for probe in importlib.import_module(m).warmup_probes()]


def _probes():
    """Every kernel with arguments of the types the conversion calls it with (one element each)."""
    return _probes_of(KERNEL_MODULES)  # (warm_numba blocks numba's BLAS probe first)


def warm_numba(skip_blas_probe: bool = False, say=None, load: bool = True) -> None:
    """``say(text)``, when given, is told when a kernel is compiled (once per kernel and machine);
    ``load`` False: the cached kernels are not loaded here (each process that runs one loads it)."""
    global _done
    if _done:
        return
    block = skip_blas_probe and "scipy.linalg" not in sys.modules and "numba.np.arraymath" not in sys.modules
    if block:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # import's "not importable": numba's BLAS probe fails fast
    try:
        # after the BLAS probe is blocked above: importing these loads numba
        from nsys2prv.core.jit import Kernel

        Kernel.announce = say
        for k, args in _probes() if load else ():
            k.load(*args)
    finally:
        if block and sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]
    _done = True


def expect_rows(rows: int) -> None:
    """Before the workers fork: each will run up to ``rows`` rows through the kernels every
    conversion uses (states, POP sweeps); where that is large enough to compile them, compile (or
    load) them once here so that the workers inherit them instead of each compiling its own."""
    for k, args in _probes():
        if k.__name__ in PRECOMPILED[:2] and rows >= k.interpret_below:
            k.plan(rows)
            k(*args)


# every conversion of a large input runs these (states, POP sweeps, the .prv's text), in this order
PRECOMPILED = ("_paint", "_sweep", "_format_compact")
PRECOMPILE_FROM_BYTES = 4 << 20  # the largest input from which they are compiled in the background

_early: Precompile | None = None  # started by the command line (``start_early``), taken by ``precompile``


def _precompiled_probes() -> list[tuple]:
    """The PRECOMPILED kernels with their probes, in that order; imports only their modules (numba,
    no pandas: the background compiler starts before the command line has loaded anything heavy)."""
    by_name = {k.__name__: (k, args) for k, args in _probes_of(PRECOMPILED_MODULES)}
    return [by_name[n] for n in PRECOMPILED]


class Precompile:
    """A forked process compiling kernels into the user's cache (``precompile``)."""

    def __init__(self, names: list[str]):
        self.pending = set(names)
        self.proc, self._recv = start_reporter(_compile, names)

    def wait(self, *names: str) -> None:
        """Until ``names`` are compiled (or the process ended without them: each then compiles
        itself when it is called); from then on they load from the cache."""
        if not self.pending & set(names):
            return
        while self.pending & set(names):
            try:
                self.pending.discard(self._recv.recv())
            except (EOFError, OSError):
                self.pending.clear()
        # (importing it loads numba: warm_numba decides how, first)
        from nsys2prv.core.jit import kernels

        for k in kernels():
            k.forget_misses()

    def stop(self) -> None:
        """End the process (compiling still, when the run needed no more of it) and wait for it."""
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self._recv.close()


def _compile(names: list[str], send, parent: int) -> None:
    init_worker(parent)  # (like the pools' workers: dies with the conversion, leaves it the signals)
    collector.release()  # (forked while the command imports: the collector on, as in a worker)
    # nsys2prv's kernels never use BLAS: numba's start-up probe for it (importing scipy.linalg) fails fast
    sys.modules.setdefault("scipy.linalg", None)  # type: ignore[arg-type]
    try:
        probes, done = _precompiled_probes(), 0
        # (here: importing it loads numba, after the BLAS probe is blocked above)
        from nsys2prv.core.jit import lean_lowerings

        lean_lowerings()  # (this process compiles these kernels and nothing else)
        for i, (k, args) in enumerate(probes):
            if k.__name__ in names and not k.load(*args):
                k.compile(*args)  # compiles (into the cache) and runs the one-element probe
            done += k.in_cache(*args)
            if done == len(probes) and i == len(probes) - 1:
                _mark_ready()  # (before the last name: the main process may end this one when it has it)
            send.send(k.__name__)
    except Exception:  # the main process compiles what is missing when it needs it
        pass
    finally:
        send.close()


def _ready_name() -> str:
    """The name of the mark saying that the cache holds every PRECOMPILED kernel for this machine,
    Python, numba and these kernels' sources (a hint: a kernel missing all the same is compiled
    where it is called, as without the mark)."""
    numba = importlib.util.find_spec("numba")  # (a top-level package: found, not imported)
    key = [sys.version, os.uname().nodename, os.environ.get("NUMBA_CACHE_DIR", "")]
    # the modules' files by their names (find_spec would import their packages: pandas, numba)
    sources = [str(_PACKAGE.joinpath(*m.split(".")[1:]).with_suffix(".py")) for m in PRECOMPILED_MODULES]
    for f in [numba.origin if numba is not None and numba.origin else "", *sources]:
        try:
            st = os.stat(f)
            key.append(f"{f} {st.st_mtime_ns} {st.st_size}")
        except OSError:
            key.append(f"{f} -")
    return "ready-" + hashlib.sha256("\n".join(key).encode()).hexdigest()[:32]


def _ready() -> bool:
    """The mark is there, a regular file of this user (or root) that no one else can write."""
    try:
        st = os.stat(user_cache_dir() / "numba" / _ready_name(), follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and distrust(st) is None


def _mark_ready() -> None:
    """Create the mark (empty; O_EXCL | O_NOFOLLOW in the cache directory's descriptor)."""
    where = user_cache_dir() / "numba"
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd = open_dir(where)
    except OSError:
        return
    try:
        os.close(os.open(_ready_name(), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd))
    except OSError:  # (there already, or the cache is not writable: the next run looks again)
        pass
    finally:
        os.close(fd)


def _large(inputs: list) -> bool:
    try:
        return max((Path(p).stat().st_size for p in inputs), default=0) >= PRECOMPILE_FROM_BYTES
    except OSError:
        return False  # (the readers name what is wrong with it)


def start_early(inputs: list) -> None:
    """The command line, first thing (before pandas is imported): for a large input
    (``precompile``) and a cache not marked ready, the PRECOMPILED kernels compiled in a forked
    process from now on, on the core the main process leaves idle while it imports (about a second),
    then beside stage A's readers; ``precompile`` takes it over."""
    global _early
    if _early is None and environment().kernels != "python" and sys.platform.startswith("linux"):
        if _large(inputs) and not _ready():
            # numba and the kernels' modules imported here, before the fork (this process imports
            # them anyway): the compiler inherits them instead of importing them (0.25 s of CPU)
            _precompiled_probes()
            _early = Precompile(list(PRECOMPILED))


def stop_early() -> None:
    """End the command line's compiler where no ``precompile`` took it (the conversion has ended)."""
    global _early
    if _early is not None:
        _early.stop()
        _early = None


def precompile(inputs: list, readers: int, cores: int, say=None) -> Precompile | None:
    """For a large input (the largest report of ``inputs`` at least PRECOMPILE_FROM_BYTES), the
    PRECOMPILED kernels the cache lacks compiled in a forked process (before any pool forks: none
    of its workers inherits the pipe's writing end): the one the command line started
    (``start_early``), else one started here where stage A's ``readers`` processes leave one of the
    ``cores`` idle (started this late, the compiler would only take the readers' CPU: BENCHMARKS.md
    measured no gain on two busy cores).  None where nothing is to compile."""
    global _early
    pre, _early = _early, None
    if environment().kernels == "python":
        if pre is not None:
            pre.stop()
        return None
    if pre is None and (readers >= cores or not _large(inputs)):
        return None
    missing = [k.__name__ for k, args in _precompiled_probes() if not k.load(*args)]
    if pre is None:
        if not missing:
            return None
        pre = Precompile(missing)
    else:
        pre.pending = set(missing)  # (the others are loaded: its process goes on to mark the cache ready)
    if missing and say is not None:
        say(
            f"nsys2prv: compiling {', '.join(missing)} for this machine while the reports are read "
            f"(first run only; cached in {user_cache_dir() / 'numba'}) ..."
        )
    return pre

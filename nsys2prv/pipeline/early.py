"""Stage A's SQLite scans started by the command line before the heavy imports: each report's process
lifetimes (``nsys.lifetimes``: one aggregation over every event table, a quarter of stage A's CPU on a
cold run) found in a forked process on the core the main process leaves idle while it imports pandas,
numba and the rest (about 0.6 s), on an ``nsys.schema.Export`` (sqlite3 only).

``start`` (the command line, once the arguments are parsed) forks the process; it goes through the
reports in order and sends each one's lifetimes with the identity of the file it read.  ``take``
(stage A, before its workers fork: they inherit what it took) keeps what arrived and ends the process
(a report it did not reach is scanned by stage A as before).  ``lifetimes`` (stage A, per report) gives
a report's lifetimes when the file is still the one that was read, else None: the same function on
the same file, so the results are those stage A finds itself.  A report the early process cannot read
(not an export, damaged, a query past its bound) is left to stage A, which says what is wrong with it
as before; the process is ended on every path (``stop``) and dies with the command (``init_worker``).

Only for reports the table cache has no entry of (any report with ``--no-cache``: a cached one loads
its lifetimes with its metadata), local reports (not ``--dask``), where processes fork (Linux), and
SQLite inputs (a ``.nsys-rep`` is exported in stage A first).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from pathlib import Path

from nsys2prv.core import collector
from nsys2prv.core.workers import init_worker
from nsys2prv.nsys.cache_names import report_dir

_proc = None  # the forked process and the reading end of its pipe (``start``)
_recv = None
_found: dict[str, tuple[tuple, dict]] = {}  # resolved path -> (file identity, pid -> (first, last))


def _identity(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


MAX_REPORTS = 64  # the first reports only: the imports leave time for 20-30 (thousands of ranks: no
#                  path of the others resolved or looked up in the cache here, on the main process's time)


def start(inputs: list, tables: Path | None) -> None:
    """Fork the early process for ``inputs`` (the SQLite ones); nothing where it does not apply.
    ``tables``: the table cache's root (``cache_names.tables_root``), where a report with an entry
    (of any version) is left alone: its lifetimes are likely cached; None: no table cache."""
    global _proc, _recv
    stop()
    _found.clear()
    paths = []
    for p in inputs[:MAX_REPORTS]:
        try:
            path = Path(p).resolve()
            if path.suffix == ".sqlite" and (tables is None or not os.path.lexists(report_dir(tables, path))):
                paths.append(str(path))  # (a report with an entry: stage A likely reads no table of it)
        except (OSError, RuntimeError):  # (a link loop: stage A says what is wrong with it)
            continue
    if not paths or not sys.platform.startswith("linux"):  # (elsewhere workers are spawned, not forked)
        return
    import numpy  # noqa: F401 - the lifetimes' ids import it: here it is inherited (this process imports it anyway)

    ctx = mp.get_context("fork")
    _recv, send = ctx.Pipe(duplex=False)
    try:
        _proc = ctx.Process(target=_scan, args=(paths, send, os.getpid()), daemon=True)
        _proc.start()
    except OSError:  # (no process to spare: stage A finds the lifetimes itself)
        _proc = None
        _recv.close()
        _recv = None
    finally:
        send.close()  # (the child holds the only writing end: its exit is the end of the pipe)


def _scan(paths: list[str], send, parent: int) -> None:
    init_worker(parent)  # (dies with the command, leaves it the signals)
    collector.release()  # (forked while the command imports: the collector on, as in a worker)
    from nsys2prv.nsys.lifetimes import process_lifetimes
    from nsys2prv.nsys.schema import Export

    try:
        for path in paths:
            try:
                before = _identity(path)
                export = Export(path)
                try:
                    found = process_lifetimes(export)
                finally:
                    export.close()
                if _identity(path) == before:
                    send.send((path, before, found))
            except Exception:  # noqa: BLE001 - stage A reads this report itself and says what is wrong
                continue
    finally:
        send.close()


def take() -> None:
    """Keep every report's lifetimes the early process has sent so far, and end it (stage A, before
    its workers fork)."""
    global _recv
    if _recv is None:
        return
    try:
        while _recv.poll():
            path, ident, found = _recv.recv()
            _found[path] = (ident, found)
    except (EOFError, OSError):
        pass
    stop()


def stop() -> None:
    """End the early process (still scanning, or after an error or a signal) and wait for it."""
    global _proc, _recv
    if _proc is not None:
        if _proc.is_alive():
            _proc.kill()
        _proc.join()
        _proc = None
    if _recv is not None:
        _recv.close()
        _recv = None


def lifetimes(sqlite: Path) -> dict[int, tuple[int, int]] | None:
    """The lifetimes the early process found in ``sqlite``, when the file is still the one it read."""
    try:
        path = str(Path(sqlite).resolve())
        got = _found.get(path)
        return got[1] if got is not None and _identity(path) == got[0] else None
    except (OSError, RuntimeError):
        return None

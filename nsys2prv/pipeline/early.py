"""Stage A's SQLite scans started by the command line before the heavy imports: each report's process
lifetimes (``nsys.lifetimes``: one aggregation per event table) found in a forked process on the core
the main process leaves idle while it imports pandas, numba and the rest (about 0.6 s), on an
``nsys.schema.Export`` (sqlite3 only).  Only the tables stage A will not read anyway: those it reads
whole as exported for the selected -t categories (``lifetimes.read_as_exported``: the kernels, copies,
memsets and CUDA API calls whatever -t, the graph executions with ``graphs``) give their spans from
the rows stage A reads (``lifetimes.Covered``), and were most of this scan's work.

``start`` (the command line, once the arguments are parsed) forks the process; it goes through the
reports in order and sends each table's spans (``lifetimes.each_table_spans``) with the identity of
the file it read, a few tables at a time (at least every FLUSH_S seconds of work, and at each report's
end): what it found before stage A stops it is used, a report or a table it did not reach is scanned
by stage A.  ``take`` (stage A, before its workers fork: they inherit what it took) keeps what arrived
and ends the process -- but for a lone report still being scanned, whose stage A waits for the rest
once it has read its tables (``pending``, ``finish``) instead of scanning them again beside.
``spans`` (stage A, per report) gives a report's spans found here when the file is still the one that
was read, else None; stage A combines them with its own (``process_lifetimes``, the one
combination): the results are those a full scan finds.  A report the early process cannot
read (not an export, damaged, a query past its bound) is left to stage A, which says what is wrong
with it as before; the process is ended on every path (``stop``) and dies with the command
(``init_worker``).

Only for reports the table cache has no entry of (any report with ``--no-cache``: a cached one loads
its lifetimes with its metadata), local reports (not ``--dask``), where processes fork (Linux), and
SQLite inputs (a ``.nsys-rep`` is exported in stage A first).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from nsys2prv.core import collector
from nsys2prv.core.workers import init_worker, start_reporter
from nsys2prv.nsys.cache_names import report_dir

_proc = None  # the forked process and the reading end of its pipe (``start``)
_recv = None
_found: dict[str, tuple[tuple, dict]] = {}  # resolved path -> (file identity, table -> [(pid, first, last)])
_paths: list[str] = []  # the reports given to the process (``start``)
_done: set[str] = set()  # those it has sent every table of
_waiting: str | None = None  # the lone report it scans on after ``take`` (its stage A: ``finish``)
FLUSH_S = 0.02  # the scan's work (CPU s) sent at least this often: what a stop loses


def _identity(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


MAX_REPORTS = 64  # the first reports only: the imports leave time for 20-30 (thousands of ranks: no
#                  path of the others resolved or looked up in the cache here, on the main process's time)


def start(inputs: list, tables: Path | None, categories=None) -> None:
    """Fork the early process for ``inputs`` (the SQLite ones); nothing where it does not apply.
    ``tables``: the table cache's root (``cache_names.tables_root``), where a report with an entry
    (of any version) is left alone: its lifetimes are likely cached; None: no table cache.
    ``categories``: the run's -t categories (``config.parse_categories``; None: unknown), whose tables
    stage A reads as exported are left to it (``lifetimes.read_as_exported``)."""
    global _proc, _recv
    stop()
    _found.clear()
    _done.clear()
    _paths.clear()
    paths = _paths
    for p in inputs[:MAX_REPORTS]:
        try:
            path = Path(p).resolve()
            if path.suffix == ".sqlite" and (tables is None or not os.path.lexists(report_dir(tables, path))):
                paths.append(str(path))  # (a report with an entry: stage A likely reads no table of it)
        except (OSError, RuntimeError):  # (a link loop: stage A says what is wrong with it)
            continue
    if not paths or not sys.platform.startswith("linux"):  # (elsewhere workers are spawned, not forked)
        return
    # numpy: the lifetimes' ids import it; here it is inherited (this process imports it anyway)
    from nsys2prv.nsys.lifetimes import read_as_exported

    try:  # (a signal during the fork: raised after it, stopped by the command's ``finally``)
        _proc, _recv = start_reporter(_scan, paths, read_as_exported(categories))
    except OSError:  # (no process to spare: stage A finds the lifetimes itself)
        _proc = _recv = None
        return
    _widen(_recv)


PIPE_BYTES = 1 << 20  # the pipe's buffer: what the process sends while the command imports (64 reports: ~150 KB)


def _widen(conn) -> None:
    """A pipe buffer of PIPE_BYTES where Linux allows it (set through either end: the buffer is the
    pipe's): the process does not wait for the command to read (which it does only in ``take``)."""
    try:
        import fcntl  # (here: POSIX only, and only where the process forks)

        fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (OSError, ImportError):  # (above the system's limit: the default buffer)
        pass


def _scan(paths: list[str], skip: frozenset[str], send, parent: int) -> None:
    init_worker(parent)  # (dies with the command, leaves it the signals)
    collector.release()  # (forked while the command imports: the collector on, as in a worker)
    from nsys2prv.nsys.lifetimes import each_table_spans
    from nsys2prv.nsys.schema import Export

    try:
        for path in paths:
            try:
                before = _identity(path)
                export = Export(path)
                try:
                    found: dict = {}
                    sent = time.process_time()
                    for table, spans in each_table_spans(export, skip):
                        found[table] = spans
                        if time.process_time() - sent >= FLUSH_S:
                            found = _send(send, path, before, found, False)
                            sent = time.process_time()
                    _send(send, path, before, found, True)
                finally:
                    export.close()
            except Exception:  # noqa: BLE001 - stage A reads this report itself and says what is wrong
                try:
                    send.send((path, None, {}, True))  # (its stage A, if it waits for the rest: none)
                except OSError:  # (the command closed the pipe: it is ending this process)
                    return
                continue
    finally:
        send.close()


def _send(send, path: str, before: tuple, found: dict, done: bool) -> dict:
    """``found`` sent when the file is still the one the scan began on (``done``: the report's last
    tables); the tables still to send (none)."""
    if _identity(path) != before:
        raise OSError("changed while scanned")  # (the report left to stage A)
    send.send((path, before, found, done))
    return {}


def _receive(until: str | None = None) -> None:
    """Keep what the early process has sent (``until``: waiting for that report's last tables, or the
    end of the pipe: the process ended)."""
    global _recv
    if _recv is None:
        return
    try:
        while until is not None or _recv.poll():
            path, ident, found, done = _recv.recv()
            if ident is not None:
                got = _found.setdefault(path, (ident, {}))
                if got[0] == ident:  # (always: the scan of one report sends under one identity)
                    got[1].update(found)
            if done:
                _done.add(path)
                if path == until:
                    return
    except (EOFError, OSError):
        _recv.close()  # (the process ended: nothing more to wait for)
        _recv = None


def take() -> None:
    """Keep every report's lifetimes the early process has sent so far, and end it (stage A, before
    its workers fork).  A lone report still being scanned (one 10M-row report: its larger tables take
    longer than the imports) is left to the process: the stage A of that report (in this process or
    the one that runs it, which inherits the pipe) takes the rest when its reading is done
    (``pending``, ``finish``) instead of scanning those tables again beside it."""
    global _waiting
    _receive()
    if _proc is not None and _proc.is_alive() and len(_paths) == 1 and _paths[0] not in _done:
        _waiting = _paths[0]
        return
    stop()


def stop() -> None:
    """End the early process (still scanning, or after an error or a signal) and wait for it."""
    global _proc, _recv, _waiting
    if _proc is not None:
        if _proc.is_alive():
            _proc.kill()
        _proc.join()
        _proc = None
    if _recv is not None:
        _recv.close()
        _recv = None
    _waiting = None


def _path(sqlite: Path) -> str | None:
    try:
        return str(Path(sqlite).resolve())
    except (OSError, RuntimeError):
        return None


def spans(sqlite: Path) -> dict[str, list[tuple[int, int, int]]] | None:
    """The spans (table -> [(pid, first start, last end)], ``lifetimes.table_spans``) of the tables the
    early process scanned in ``sqlite`` so far, when the file is still the one it read."""
    path = _path(sqlite)
    if path is not None and path == _waiting:
        _receive()
    got = _found.get(path) if path is not None else None
    try:
        return got[1] if path is not None and got is not None and _identity(path) == got[0] else None
    except OSError:
        return None


def pending(sqlite: Path) -> bool:
    """Whether the early process is still scanning ``sqlite`` (its tables not in ``spans`` yet are
    coming: ``finish``)."""
    path = _path(sqlite)
    return path is not None and path == _waiting and path not in _done and _recv is not None


def finish(sqlite: Path) -> dict[str, list[tuple[int, int, int]]] | None:
    """``spans`` of ``sqlite`` once the early process has sent its last tables of it (or ended)."""
    global _waiting
    path = _path(sqlite)
    if path is not None and path == _waiting:
        _receive(until=path)
        _waiting = None
    return spans(sqlite)

"""An export opened read-only (``Export``): the sqlite3 connection, every query bounded (``Bound``), its
tables and columns probed.  No pandas, numpy or Arrow: the command line's early process
(``pipeline/early.py``) finds each report's process lifetimes on it while the main process is still
importing those; ``database.Report`` (the readers' export) is an ``Export``."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from nsys2prv.core.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"


class Bound:
    """A bound on every sqlite3 query of a connection: SQLite's progress handler, called every
    ``EVERY`` virtual machine steps, interrupts a query past ``STEPS_PER_BYTE`` steps per byte of the
    file (at least ``MIN_STEPS``) -- far more than any scan, sort or indexed join of the file needs,
    and a bound on what a crafted export (a recursive query behind a name) could make it run.  The
    ADBC reader (``AdbcReader``) runs the readers' queries over the export's tables only (views are
    never read: ``Report._probe_tables``), whose work the file's size bounds."""

    EVERY = 10_000
    STEPS_PER_BYTE = 1000
    MIN_STEPS = 10**10

    def __init__(self, conn: sqlite3.Connection, path: Path):
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        self.steps = max(self.MIN_STEPS, self.STEPS_PER_BYTE * size)
        self.start()
        conn.set_progress_handler(self._tick, self.EVERY)

    def start(self) -> None:
        self._left, self.exceeded = self.steps // self.EVERY, False

    def _tick(self) -> int:
        self._left -= 1
        if self._left < 0:
            self.exceeded = True
            return 1  # interrupt the query
        return 0


def open_readonly(path: Path) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to an export, and its URI (``_read_only_uri``)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError("file not found", str(path)) from None
    except OSError as exc:
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError("is a directory, not a report", str(path))
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read below forever
        raise UserError("not a regular file (a FIFO, socket or device): give the export itself", str(path))
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None
    if header[:16] != SQLITE_MAGIC:
        raise UserError("not an SQLite file (expected an nsys .sqlite export or a .nsys-rep)", str(path))
    uri = _read_only_uri(path, header)
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.text_factory = str  # (Report._fetch: invalid UTF-8 switches to decode_text)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot open SQLite database ({exc})", str(path)) from None
    return conn, uri


def _read_only_uri(path: Path, header: bytes) -> str:
    """The read-only URI of an export.  A WAL-mode database (header bytes 18-19 = 2) would need its
    ``-shm`` and ``-wal`` files, created beside it (or refused on read-only media): without a WAL file
    holding data it is opened ``immutable`` -- no locks, no side files."""
    uri = "file:" + _uri_path(path.resolve()) + "?mode=ro"
    if len(header) >= 20 and header[18] == 2 and header[19] == 2:
        wal = Path(f"{path.resolve()}-wal")
        try:
            has_wal = wal.stat().st_size > 0
        except OSError:
            has_wal = False
        if not has_wal:
            uri += "&immutable=1"
    return uri


def decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _uri_path(path: Path) -> str:
    return quote(str(path))


# Tables that only an Nsight Systems export has; one of them must exist -- or, in a lazy export
# made by ``nsys stats`` (2021-2022: no export metadata, no session start), StringIds and one of
# the event tables (NSYS_EVENT_TABLES, NSYS_EVENT_PREFIX).
NSYS_MARKER_TABLES = ("TARGET_INFO_SESSION_START_TIME", "EXPORT_META_DATA", "META_DATA_EXPORT")
NSYS_EVENT_TABLES = (
    "NVTX_EVENTS",
    "OSRT_API",
    "MPI_P2P_EVENTS",
    "MPI_COLLECTIVES_EVENTS",
    "MPI_OTHER_EVENTS",
    "MPI_START_WAIT_EVENTS",
    "CUDA_GRAPH_EVENTS",
    "GPU_METRICS",
    "GENERIC_EVENTS",
)
NSYS_EVENT_PREFIX = "CUPTI_ACTIVITY_KIND_"
NO_METADATA = (
    "no export metadata and no session start time (a lazy export made by nsys stats?): "
    "read as it is; schema and Nsight Systems version unknown"
)


class Export:
    """One Nsight Systems SQLite export, opened read-only: its tables (not its views), their columns,
    rows by bounded queries."""

    def __init__(self, path: str | os.PathLike, index: int = 0, source: str | None = None):
        self.path = Path(path)
        self.index = index
        # The file the user named (a .nsys-rep is exported to a cached .sqlite).
        self.source = source or str(path)
        self._conn, self._uri = open_readonly(self.path)  # (the URI: the ADBC reader opens the same)
        self._bound = Bound(self._conn, self.path)
        self.notes: list[str] = []  # what the conversion should say about this export
        try:
            self.tables = self._probe_tables()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise UserError(f"not a readable SQLite database ({exc})", str(self.path)) from None
        if not any(t in self.tables for t in NSYS_MARKER_TABLES):
            if "StringIds" in self.tables and any(
                t in NSYS_EVENT_TABLES or t.startswith(NSYS_EVENT_PREFIX) for t in self.tables
            ):
                self.notes.append(NO_METADATA)
            else:
                self._conn.close()
                raise UserError(
                    "SQLite file is not an Nsight Systems export (none of the tables "
                    f"{', '.join(NSYS_MARKER_TABLES)}, nor StringIds with event tables)",
                    str(self.path),
                )
        self._columns: dict[str, list[str]] = {}

    # -- probing ---------------------------------------------------------
    def _probe_tables(self) -> set[str]:
        """The export's tables.  Only objects of type 'table' are read: nsys writes no view, and a view
        (which could name a table the readers ask for and be any query, an endless recursive one
        too) is said in ``notes`` and skipped; so is a virtual table (a module's code behind a name)."""
        rows = self._conn.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        virtual = {n for t, n, sql in rows if t == "table" and str(sql or "").lstrip()[:14].upper() == "CREATE VIRTUAL"}
        for what, names in (
            ("view(s)", sorted(str(n) for t, n, _ in rows if t == "view")),
            ("virtual table(s)", sorted(str(n) for n in virtual)),
        ):
            if names:
                self.notes.append(
                    f"{len(names)} {what} in the export not read (only tables are): "
                    + ", ".join(names[:4])
                    + (" ..." if len(names) > 4 else "")
                )
        return {n for t, n, _ in rows if t == "table" and n not in virtual}

    def base_tables(self) -> list[str]:
        """The export's tables (not its views), sorted."""
        return sorted(r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'"))

    def columns(self, table: str) -> list[str]:
        if table not in self.tables:
            return []
        if table not in self._columns:
            rows = self.rows(f'PRAGMA table_info("{table}")')
            self._columns[table] = [r[1] for r in rows]
        return self._columns[table]

    # -- queries ---------------------------------------------------------
    def _fetch(self, sql: str, params: tuple = ()):
        """(cursor description, rows).  Text is decoded by sqlite3 itself (C); the first text that
        is not valid UTF-8 switches the connection to a decoder that replaces bad bytes, and the
        query is run again.  Every query is bounded (``Bound``): one that runs past it is an error."""
        self._bound.start()
        try:
            try:
                cur = self._conn.execute(sql, params)
                return cur.description, cur.fetchall()
            except sqlite3.OperationalError as exc:
                if self._conn.text_factory is not str or "decode" not in str(exc):
                    raise
                self._conn.text_factory = decode_text
                cur = self._conn.execute(sql, params)
                return cur.description, cur.fetchall()
        except sqlite3.DatabaseError as exc:
            if self._bound.exceeded:
                raise UserError(
                    f"a query ran past its bound of {self._bound.steps} SQLite steps (an export made to hang "
                    "its reader?): not converted",
                    self.source,
                ) from None
            raise UserError(f"cannot read the export ({exc})", self.source) from None

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """The rows of ``sql`` as Python tuples (small metadata tables: no DataFrame)."""
        return self._fetch(sql, params)[1]

    def close(self) -> None:
        self._conn.close()

"""Per-report cache of the normalised tables (Parquet) and of the report's metadata.

A report is read from its SQLite export once: its normalised tables (one Parquet file per data
kind), the overlap lanes of its GPU activities (``lanes-TAG.arrow``, per set of translated GPU
kinds) and their launch calls (``launches-TAG.arrow``), the readers' tallies and the metadata the
conversion needs (identity, device map, session start, ...) are stored under a directory named after
the input's identity (``STEM-HASH(resolved path)/HASH(size, mtime, TABLES_VERSION, version)``;
``TABLES_VERSION`` is derived from the code, ``core/versions.py``: a changed reader makes new
entries). A later conversion -- with other options, other categories or another output -- loads what
it needs from there without opening the SQLite file; kinds not cached yet are read from the SQLite
and added. A changed input (size or mtime) gets a new directory and the stale one of the same path
is removed.

The cache lives in ``CACHE_DIR/tables`` (``--cache-dir``, else ``$XDG_CACHE_HOME/nsys2prv``);
``--no-cache`` uses a private directory next to the output, removed after the conversion, whose
tables are Arrow IPC files (``TableCache.ipc``: read back once, cheaper to write and read than Parquet,
larger), read through the same ``parquet_file`` interface (``codec.IpcGroups``).

A cache directory may be shared (a group's project directory, scratch): nothing in it is trusted.
Below ``CACHE_DIR`` every directory and file is opened relative to its parent's descriptor without
following a symbolic link (``O_NOFOLLOW``), files must be regular files, new files are created under a
random name with ``O_EXCL`` and renamed into place, and only names this module makes are ever removed.
Nothing is unpickled: tables are Parquet / Arrow IPC, the metadata objects JSON (``encode``/``decode``:
only the dataclasses the caller names, each field checked against its annotation).  An entry that
cannot be used is a cache miss: rebuilt from the report, and said (``TableCache.notes``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nsys2prv import __version__
from nsys2prv.core.paths import distrust
from nsys2prv.core.versions import code_version
from nsys2prv.nsys.cache_manifest import MANIFEST, check_manifest, updated
from nsys2prv.nsys.cache_names import entry_hash, report_dir
from nsys2prv.nsys.codec import (
    CacheDamage,
    IpcGroups,
    arrow_source,
    decode,
    encode,
    frame_of,
    from_ipc,
    system_pool,
    table_of,
    to_ipc,
    write_batches,
    write_ipc,
    write_ipc_batches,
    write_parquet,
)

TABLES_VERSION = code_version()  # derived from the code and its storage libraries (core/versions.py)
META = "meta.n2p"
EMPTY = ".empty.arrow"  # KIND.empty.arrow: the table of a kind without rows (Arrow IPC, not Parquet)
IPC = ".arrow"  # KIND.arrow: a table as Arrow IPC (``TableCache.ipc``; its manifest schema says "ipc")
OBJ = ".n2p"  # encode()d objects: META, scan-TAG.n2p
LANES = "lanes-{}.arrow"  # the overlap lanes of the GPU activities of a set of kinds (``store_lanes``)
LAUNCHES = "launches-{}.arrow"  # each GPU activity's launch call, for a set of kinds (``store_launches``)
CACHE_NOTE = "its table cache entry"  # how every note about an unusable entry starts

# every name this module makes in an entry (and those of older versions, so that their entries go)
_ENTRY_FILE = re.compile(
    r"kinds\.json|meta\.(?:pkl|n2p)|scan-[0-9a-f]{16}\.(?:pkl|n2p)|(?:lanes|launches)-[0-9a-f]{16}\.arrow"
    r"|[a-z][a-z0-9_]*\.(?:parquet|arrow|empty\.pkl|empty\.arrow)|\.[A-Za-z0-9_.-]+\.tmp[0-9]*"
)
_ENTRY = re.compile(r"[0-9a-f]{16}")
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_UMASK = os.umask(0)
os.umask(_UMASK)


_hash = entry_hash  # (``cache_names``: 16 hex digits of SHA-256, for names of cache entries and files)


def entry_dir(root: Path, source: Path) -> Path:
    """The cache directory of one input (the SQLite export actually read)."""

    src = source.resolve()
    st = src.stat()
    # the file's identity, not only its size and mtime (which ``cp -p`` or ``rsync -t`` keep for another
    # content): a file written again has a new ctime, a file put in its place a new inode
    ident = f"{st.st_size}|{st.st_mtime_ns}|{st.st_dev}|{st.st_ino}|{st.st_ctime_ns}|{TABLES_VERSION}|{__version__}"
    return report_dir(root, src) / _hash(ident)


# --- files below CACHE_DIR: never through a link ---------------------------------------------------------
@contextmanager
def _open_file(dfd: int, name: str):
    """The descriptor of a regular file of the entry (not a link, FIFO or device), or ``CacheDamage``."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CacheDamage(f"{name} is not a regular file")
        why = distrust(st)
        if why is not None:
            raise CacheDamage(f"{name} is {why}")
        yield fd
    finally:
        os.close(fd)


def _read_file(dfd: int, name: str) -> bytes:
    """A regular file of the entry (``_open_file``), whole."""
    with _open_file(dfd, name) as fd, os.fdopen(os.dup(fd), "rb") as fh:
        return fh.read()


def _remove_entry(pfd: int, name: str) -> None:
    """Remove one entry directory of ``pfd``: only the files whose names this module makes (a link
    is removed, never followed), then the directory if that emptied it."""
    try:
        st = os.lstat(name, dir_fd=pfd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (os.getuid(), 0):
            return  # (another user's directory: not ours to empty)
        dfd = os.open(name, _O_DIR, dir_fd=pfd)
    except OSError:
        return
    try:
        for f in os.listdir(dfd):
            if _ENTRY_FILE.fullmatch(f):
                try:
                    if not stat.S_ISDIR(os.lstat(f, dir_fd=dfd).st_mode):
                        os.unlink(f, dir_fd=dfd)
                except OSError:
                    pass
    finally:
        os.close(dfd)
    try:
        os.rmdir(name, dir_fd=pfd)
    except OSError:
        pass  # something not ours left in it: the entry stays (unused)


class TableCache:
    """One input's cache entry: ``meta`` (an ``encode``-able object), ``kinds`` (kind -> tally dict or
    None when the report has no such data), one Parquet file per present kind (Arrow IPC in a run's own
    cache: ``ipc``)."""

    def __init__(self, root: Path, source: Path, ipc: bool = False):
        self.dir = entry_dir(root, source)
        self.ipc = ipc  # ``store`` writes whole tables as Arrow IPC (``write_ipc``: a run's own cache), not Parquet
        self.root = root
        self._parts = (self.dir.parent.name, self.dir.name)
        self._manifest: dict | None = None
        self._held: list | None = None  # manifest updates held for one write (``hold_manifest``)
        self._schemas: dict = {}
        self.notes: list[str] = []  # entries found unusable (each a cache miss, rebuilt)

    def _note(self, what: str, exc: BaseException) -> None:
        text = f"{CACHE_NOTE} had an unusable {what} ({exc}); not used, rebuilt from the report"
        if text not in self.notes:
            self.notes.append(text)

    def _unwritten(self, exc: BaseException) -> None:
        """A store that failed for want of space (ENOSPC, EDQUOT): said (the entry stays incomplete, a
        cache miss next time); a read-only or unusable cache is simply not used."""
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            text = f"{CACHE_NOTE} could not be completed ({exc.strerror}): the report is read again next time"
            if text not in self.notes:
                self.notes.append(text)

    def _walk(self, names: tuple[str, ...]) -> int:
        """The descriptor of ``root``'s parent / ``names``, every component opened without following a
        link (``root`` is ``CACHE_DIR/tables``: ``CACHE_DIR`` is the user's to choose)."""
        fd = os.open(self.root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in names:
                nfd = _descend(fd, name, name == self.root.name)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextmanager
    def _open(self):
        """The entry directory's descriptor (``_walk``)."""
        fd = self._walk((self.root.name, *self._parts))
        try:
            yield fd
        finally:
            os.close(fd)

    def _read(self, name: str) -> bytes:
        with self._open() as dfd:
            return _read_file(dfd, name)

    # -- reading ----------------------------------------------------------------------------------
    def load_obj(self, name: str, expect: type, classes: tuple[type, ...] = ()):
        """The object stored under ``name`` (see ``decode``), or None: absent, or unusable (noted)."""
        try:
            return decode(self._read(name), expect, classes)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, CacheDamage) as exc:
            self._note(name, exc)
            return None

    def meta(self, expect: type = object, classes: tuple[type, ...] = ()):
        return self.load_obj(META, expect, classes)

    @property
    def kinds(self) -> dict:
        if self._manifest is None:
            self._manifest, self._schemas = {}, {}
            try:
                doc = json.loads(self._read(MANIFEST))
                kinds, schemas = check_manifest(doc)
                self._manifest, self._schemas = kinds, schemas
            except (FileNotFoundError, NotADirectoryError):
                pass
            except (OSError, ValueError) as exc:
                self._note(MANIFEST, exc)
        return self._manifest

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    def table(self, kind: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        """The cached table of ``kind`` (None: the report has none).  A file that is not the one the
        manifest describes (another kind's, damaged, a link) raises ``CacheDamage``/``OSError``."""
        entry = self.kinds.get(kind)
        if entry is None or entry.get("no_table"):
            return None
        want = self._schemas.get(kind)
        if want is None:
            raise CacheDamage(f"no schema recorded for {kind}")
        system_pool()
        if not want.get("empty"):
            with self.parquet_file(kind) as pf:
                assert pf is not None  # (the kind has rows: checked above)
                # one file, one process: without the dataset layer and Arrow's thread pool (faster for
                # small tables; a worker converts one report at a time anyway)
                return frame_of(pf.read(columns=columns, use_threads=False))
        df = from_ipc(self._read(f"{kind}{EMPTY}"))
        if list(df.columns) != want["columns"]:
            raise CacheDamage(f"{kind}{EMPTY} has the columns of another table")
        return df[columns] if columns is not None else df

    def lanes(self, tag: str) -> dict[str, np.ndarray] | None:
        """The overlap lanes ``store_lanes`` stored under ``tag``: kind -> its rows' lanes (read-only, in
        the table's row order; no kind when no activity is on an extra lane); None when none are stored
        (or the file is unusable: noted)."""
        got = self._per_row(LANES.format(tag), "lane")
        return None if got is None else got[0]

    def store_lanes(self, tag: str, rows: dict[str, int], lanes: np.ndarray | None) -> None:
        """Store the overlap lanes of the activities of the kinds ``rows`` names (kind -> rows, in the
        order of ``lanes``) under ``tag``; ``lanes`` None: none is on an extra lane."""
        lane = None if lanes is None else lanes.astype(np.min_scalar_type(int(lanes.max(initial=0))))
        self._store_per_row(LANES.format(tag), "lane", rows, lane, 0)

    def launches(self, tag: str) -> tuple[dict[str, np.ndarray], int] | None:
        """The launch calls ``store_launches`` stored under ``tag``: kind -> its activities' call rows
        (-1: none), and the calls sharing a correlation id; None when none are stored (or unusable)."""
        return self._per_row(LAUNCHES.format(tag), "call")

    def store_launches(self, tag: str, rows: dict[str, np.ndarray], shared: int) -> None:
        """Store each activity's launch call (``translate.launches.Launches``: kind -> call rows) under
        ``tag``."""
        calls = np.concatenate(list(rows.values())) if rows else np.zeros(0, np.int64)
        self._store_per_row(LAUNCHES.format(tag), "call", {k: len(v) for k, v in rows.items()}, calls, shared)

    def _per_row(self, name: str, column: str) -> tuple[dict[str, np.ndarray], int] | None:
        """A value per row of some kinds' tables (``_store_per_row``): kind -> its values, and the
        file's count; None when not stored (or the file is unusable: noted)."""
        system_pool()
        try:
            with self._open() as dfd, _open_file(dfd, name) as fd:
                table = pa.ipc.open_file(arrow_source(fd)).read_all()
            table.validate(full=True)
            meta = json.loads((table.schema.metadata or {}).get(b"rows", b"null"))
            count = json.loads((table.schema.metadata or {}).get(b"count", b"0"))
            if (
                table.schema.names != [column]
                or not pa.types.is_integer(table.schema.field(column).type)
                or not isinstance(meta, list)
                or not all(
                    isinstance(kn, list)
                    and len(kn) == 2
                    and isinstance(kn[0], str)
                    and isinstance(kn[1], int)
                    and kn[1] >= 0
                    for kn in meta
                )
                or table.num_rows not in (0, sum(n for _, n in meta))
                or not isinstance(count, int)
            ):
                raise CacheDamage(f"{name} is not a file of {column}s")
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError, pa.ArrowException) as exc:
            self._note(name, exc)
            return None
        if not table.num_rows:
            return {}, count
        values = table.column(column).combine_chunks().to_numpy(zero_copy_only=False)
        cut = np.cumsum([n for _, n in meta])
        return {k: values[hi - n : hi] for (k, n), hi in zip(meta, cut)}, count

    def _store_per_row(self, name: str, column: str, rows: dict[str, int], values: np.ndarray | None, count: int):
        """Store ``values``, one per row of the kinds ``rows`` names (kind -> rows, in their order; None:
        none to store, every kind's rows the default), and a count, as file ``name``."""
        system_pool()
        if not self.prepare():
            return
        n = 0 if values is None else len(values)
        data = np.zeros(0, np.int8) if values is None else values
        table = pa.table({column: data}).replace_schema_metadata(
            {"rows": json.dumps([[k, int(r)] for k, r in rows.items()]), "count": json.dumps(int(count))}
        )
        if n and n != sum(rows.values()):
            raise ValueError(f"{n} {column}s for {sum(rows.values())} rows")
        try:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
            out = sink.getvalue()
            with self._open() as dfd:
                self._replace(dfd, name, lambda fh: fh.write(out))
        except (OSError, pa.ArrowException) as exc:
            self._unwritten(exc)  # a full or read-only cache: derived again where needed

    @contextmanager
    def parquet_file(self, kind: str):
        """The cached table of ``kind`` opened for reading by row groups (``pipeline/slices.py``): its
        Parquet file, or its Arrow IPC file as ``codec.IpcGroups`` (the same reading), checked as
        ``table`` checks it; None when the kind has no rows (or no table) in the cache."""
        entry = self.kinds.get(kind)
        want = self._schemas.get(kind)
        if entry is None or entry.get("no_table") or want is None or want.get("empty"):
            yield None
            return
        name = f"{kind}{IPC}" if want.get("ipc") else f"{kind}.parquet"
        with self._open() as dfd, _open_file(dfd, name) as fd:
            pf = IpcGroups(arrow_source(fd)) if want.get("ipc") else pq.ParquetFile(arrow_source(fd))
            if pf.schema_arrow.names != want["columns"]:
                raise CacheDamage(f"{name} has the columns of another table")
            yield pf

    def discard(self) -> None:
        """Remove the whole entry (a damaged file in it): the next read rebuilds it from the report.
        Only the files this module names are removed, never through a link."""
        try:
            fd = self._walk((self.root.name, self._parts[0]))
            try:
                _remove_entry(fd, self._parts[1])
            finally:
                os.close(fd)
        except OSError:
            pass
        self._manifest, self._schemas = None, {}
        if self._held is not None:
            self._held = []  # (the entry is gone: no update of it is written)

    # -- writing (atomic renames; concurrent writers at worst redo work) ----------------------------
    def _replace(self, dfd: int, name: str, write) -> None:
        """``write(binary file)`` into a new file of a random name (``O_EXCL``, never a link), then
        renamed to ``name`` (a link planted there is replaced, not followed)."""
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        done = False
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                os.fchmod(fh.fileno(), 0o644 & ~_UMASK)  # readable as the user's files are, writable by no other
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            done = True
        finally:
            if not done:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass

    def store_obj(self, name: str, obj) -> None:
        """Store ``obj`` (``encode``) under ``name`` in an existing entry; a cache that cannot be
        written (or an object that cannot be encoded) is simply not used."""
        try:
            data = encode(obj)
            with self._open() as dfd:
                self._replace(dfd, name, lambda fh: fh.write(data))
        except (OSError, TypeError, ValueError, pa.ArrowException) as exc:
            self._unwritten(exc)

    def prepare(self) -> bool:
        """Create the entry's directory and remove stale entries of the same input; False when the
        cache cannot be written (it is then simply not used)."""
        try:
            with self._open():
                return True  # stale entries went when this one was made
        except OSError:
            pass
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for name in (self.root.name, self._parts[0]):
                    _make_dir(fd, name, own_link_ok=name == self.root.name)
                    nfd = _descend(fd, name, name == self.root.name)
                    os.close(fd)
                    fd = nfd
                if not _make_dir(fd, self._parts[1]):
                    return True
                for other in os.listdir(fd):  # the input's other versions (not every input's:
                    if other != self._parts[1] and _ENTRY.fullmatch(other):  # that would cost ranks x ranks)
                        _remove_entry(fd, other)
            finally:
                os.close(fd)
            with self._open():
                return True
        except OSError:
            return False

    def store(self, meta, tables: dict[str, tuple[pd.DataFrame | None, dict | None]]) -> None:
        """Add ``tables`` (kind -> (table or None, tally)) and the metadata."""

        system_pool()
        if not self.prepare():
            return
        try:
            with self._open() as dfd:
                added, schemas = {}, {}
                for kind, (df, tally) in tables.items():
                    if df is not None:
                        try:
                            if len(df) == 0:
                                data = to_ipc(df)
                                self._replace(dfd, f"{kind}{EMPTY}", lambda fh: fh.write(data))
                                schemas[kind] = {"columns": [str(c) for c in df.columns], "empty": True}
                            else:
                                table = table_of(df)
                                if self.ipc:
                                    self._replace(dfd, f"{kind}{IPC}", lambda fh: write_ipc(table, fh))
                                    schemas[kind] = {"columns": table.schema.names, "ipc": True}
                                else:
                                    self._replace(dfd, f"{kind}.parquet", lambda fh: write_parquet(table, fh))
                                    schemas[kind] = {"columns": table.schema.names}
                        except (pa.ArrowException, TypeError, ValueError):
                            continue  # a column Parquet cannot hold: read from the SQLite each time
                        added[kind] = tally
                    else:  # no table, but rows counted (a table the reader could not read): keep the tally
                        added[kind] = {**tally, "no_table": True} if tally and tally.get("source_rows") else None
                if meta is not None:
                    try:
                        encoded: bytes | None = encode(meta)
                    except (TypeError, ValueError, pa.ArrowException):
                        encoded = None
                    if encoded is not None:
                        self._replace(dfd, META, lambda fh: fh.write(encoded))
                self._update_manifest(dfd, added, schemas, stale=added)
        except OSError as exc:
            self._unwritten(exc)  # a full or read-only cache never fails a conversion

    def _update_manifest(self, dfd: int, added: dict, schemas: dict, stale=()) -> None:
        """The manifest with ``added`` (kind -> tally) and ``schemas`` (kind -> its file's columns);
        the schemas of the kinds ``stale`` go (stored anew without a file).  Held (``hold_manifest``):
        in this object at once, in the file at ``write_held``."""
        update = (added, schemas, tuple(stale))
        if self._held is not None:
            self._held.append(update)
            self._manifest, self._schemas = updated(self.kinds, self._schemas, update)
            return
        self._write_manifest(dfd, [update])

    def _write_manifest(self, dfd: int, updates: list) -> None:
        """The manifest file as it is now (another writer's kinds kept) with ``updates`` applied in turn."""
        self._manifest = None
        manifest, schemas = self.kinds, self._schemas
        for update in updates:
            manifest, schemas = updated(manifest, schemas, update)
        doc = json.dumps({"version": 1, "kinds": manifest, "schemas": schemas})
        self._replace(dfd, MANIFEST, lambda fh: fh.write(doc.encode()))
        self._manifest, self._schemas = manifest, schemas

    def hold_manifest(self) -> None:
        """Hold the manifest's updates (``store``, ``store_batches``, ``set_tallies``: one per kind as
        stage A reads a report, each of which read the file again and wrote it anew: 0.02-0.03 s of
        CPU per 8 reports) until ``write_held``, which writes them as one."""
        if self._held is None:
            self._held = []

    def write_held(self) -> None:
        """Write the updates held since ``hold_manifest`` in one manifest (call it on every path)."""
        held, self._held = self._held, None
        if not held:
            return
        try:
            with self._open() as dfd:
                self._write_manifest(dfd, held)
        except OSError as exc:
            self._manifest, self._schemas = None, {}
            self._unwritten(exc)  # a full or read-only cache never fails a conversion

    def set_tallies(self, tallies: dict[str, dict]) -> None:
        """Replace the tallies of kinds already stored (counts completed after their tables were)."""
        tallies = {k: t for k, t in tallies.items() if k in self.kinds}
        if not tallies:
            return
        try:
            with self._open() as dfd:
                self._update_manifest(dfd, tallies, {})
        except OSError:
            pass

    def store_batches(self, kind: str, frames, tally) -> None:
        """``kind``'s table from the DataFrames ``frames`` yields (a large table read a batch of rows at a
        time), written as ``store`` writes a whole table; ``tally()``: its tally once they are all read.
        Every frame is taken from ``frames`` whatever happens (the caller's side effects run)."""
        system_pool()
        frames = iter(frames)
        try:
            if self.prepare():
                with self._open() as dfd:
                    names: list[str] = []
                    name, write = (
                        (f"{kind}{IPC}", write_ipc_batches) if self.ipc else (f"{kind}.parquet", write_batches)
                    )
                    self._replace(dfd, name, lambda fh: names.extend(write(frames, fh)))
                    if names:
                        schema = {"columns": names, "ipc": True} if self.ipc else {"columns": names}
                        self._update_manifest(dfd, {kind: tally()}, {kind: schema})
        except (OSError, pa.ArrowException, TypeError, ValueError) as exc:
            self._unwritten(exc)  # a full or read-only cache (or a batch Parquet cannot hold): not cached
        for _ in frames:
            pass


def _own_link(fd: int, name: str) -> bool:
    try:
        st = os.lstat(name, dir_fd=fd)
    except OSError:
        return False
    return stat.S_ISLNK(st.st_mode) and st.st_uid == os.getuid()


class Untrusted(PermissionError):
    """A directory of the cache that another user owns: not used (its contents could be anything)."""


def _descend(fd: int, name: str, own_link_ok: bool = False) -> int:
    """The directory ``name`` of ``fd``, opened without following a link -- but for ``CACHE_DIR/tables``
    (``own_link_ok``), a link of the user's own (moving the tables elsewhere) is followed.  The directory
    must be the running user's (or root's): another user's is ``Untrusted``; one of the user's own that
    others could write into loses those write bits first."""
    if own_link_ok and _own_link(fd, name):
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    else:
        nfd = os.open(name, _O_DIR, dir_fd=fd)
    try:
        st = os.fstat(nfd)
        if st.st_uid not in (os.getuid(), 0):
            raise Untrusted(errno.EPERM, f"the cache directory is {distrust(st)}: not used", name)
        if st.st_mode & 0o022 and st.st_uid == os.getuid():
            os.fchmod(nfd, st.st_mode & 0o7755)
    except BaseException:
        os.close(nfd)
        raise
    return nfd


def _make_dir(fd: int, name: str, own_link_ok: bool = False) -> bool:
    """``mkdir name`` in ``fd``; True when made.  A symbolic link planted at the name (which this
    module makes) is removed first, never followed (``own_link_ok``: the user's own link is kept)."""
    try:
        os.mkdir(name, 0o755, dir_fd=fd)
        return True
    except FileExistsError:
        if not stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode) or (own_link_ok and _own_link(fd, name)):
            return False
    os.unlink(name, dir_fd=fd)
    os.mkdir(name, 0o755, dir_fd=fd)
    return True


descend_dir = _descend  # public names for the cache's size cap (nsys/cache_size.py)
remove_entry = _remove_entry
ENTRY_NAME = _ENTRY

__all__ = ["CacheDamage", "TableCache", "decode", "encode", "entry_dir"]

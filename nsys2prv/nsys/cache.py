"""Per-report cache of the normalised tables (Parquet) and of the report's metadata.

A report is read from its SQLite export once: its normalised tables (one Parquet file per
data kind), the readers' tallies and the metadata the conversion needs (identity, device
map, session start, ...) are stored under a directory named after the input's identity
(``STEM-HASH(resolved path)/HASH(size, mtime, TABLES_VERSION, version)``; bump ``TABLES_VERSION``
whenever a reader's output changes).  A later conversion -- with other options, other categories or another output --
loads what it needs from there without opening the SQLite file; kinds not cached yet are
read from the SQLite and added.  A changed input (size or mtime) gets a new directory and
the stale one of the same path is removed.

The cache lives in ``CACHE_DIR/tables`` (``--cache-dir``, else ``$XDG_CACHE_HOME/nsys2prv``);
``--no-cache`` uses a private directory next to the output, removed after the conversion.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nsys2prv import __version__

TABLES_VERSION = "10"    # bump when a reader's normalised table or tally changes
META = "meta.pkl"
EMPTY = ".empty.pkl"     # KIND.empty.pkl: the table of a kind without rows (a tiny pickle, not a Parquet file)
MANIFEST = "kinds.json"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def entry_dir(root: Path, source: Path) -> Path:
    """The cache directory of one input (the SQLite export actually read)."""

    src = source.resolve()
    st = src.stat()
    ident = f"{st.st_size}|{st.st_mtime_ns}|{TABLES_VERSION}|{__version__}"
    return root / f"{src.stem}-{_hash(str(src))}" / _hash(ident)


def _system_pool(pa) -> None:
    """Arrow's buffers from malloc: its default pool keeps freed memory, which the per-report
    stages would carry from one report to the next."""
    try:
        pa.set_memory_pool(pa.system_memory_pool())
    except Exception:  # noqa: BLE001 - an optimisation only
        pass


def _write(pq, pa, table, path) -> None:
    """One table as Parquet: dictionary encoding only for text (names repeat; times and ids rarely
    do: encoding them cost more than half the write), no statistics (nothing filters on them)."""
    text = [f.name for f in table.schema
            if pa.types.is_dictionary(f.type) or pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    pq.write_table(table, path, compression="lz4", use_dictionary=text or False, write_statistics=False)


class TableCache:
    """One input's cache entry: ``meta`` (any picklable object), ``kinds`` (kind -> tally dict or
    None when the report has no such data), one Parquet file per present kind."""

    def __init__(self, root: Path, source: Path):
        self.dir = entry_dir(root, source)
        self._manifest: dict | None = None

    # -- reading ----------------------------------------------------------------------------------
    def meta(self):
        try:
            with open(self.dir / META, "rb") as fh:
                return pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None

    @property
    def kinds(self) -> dict:
        if self._manifest is None:
            try:
                self._manifest = json.loads((self.dir / MANIFEST).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._manifest = {}
        return self._manifest

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    def table(self, kind: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        """The cached table of ``kind`` (None: the report has none)."""
        entry = self.kinds.get(kind)
        if entry is None or entry.get("no_table"):
            return None
        try:
            with open(self.dir / f"{kind}{EMPTY}", "rb") as fh:
                df = pickle.load(fh)
            return df[columns] if columns is not None else df
        except FileNotFoundError:
            pass

        _system_pool(pa)
        # one file, one process: without the dataset layer and Arrow's thread pool (faster for
        # small tables; a worker converts one report at a time anyway)
        table = pq.ParquetFile(self.dir / f"{kind}.parquet").read(columns=columns, use_threads=False)
        return table.to_pandas(use_threads=False)

    def discard(self) -> None:
        """Remove the whole entry (a damaged file in it): the next read rebuilds it from the report."""
        shutil.rmtree(self.dir, ignore_errors=True)
        self._manifest = None

    # -- writing (atomic renames; concurrent writers at worst redo work) ----------------------------
    def _replace(self, name: str, write) -> None:
        tmp = self.dir / f".{name}.tmp{os.getpid()}"
        try:
            write(tmp)
            os.replace(tmp, self.dir / name)
        finally:
            if tmp.exists():
                tmp.unlink()

    def prepare(self) -> bool:
        """Create the entry's directory and remove stale entries of the same input; False when the
        cache cannot be written (it is then simply not used)."""
        try:
            try:
                self.dir.mkdir(parents=True)
            except FileExistsError:
                return True                 # stale entries went when this one was made
            for other in self.dir.parent.iterdir():     # the input's other versions (not every
                if other != self.dir and other.is_dir():    # input's: that would cost ranks x ranks)
                    shutil.rmtree(other, ignore_errors=True)
            return True
        except OSError:
            return False

    def store(self, meta, tables: dict[str, tuple[pd.DataFrame | None, dict | None]]) -> None:
        """Add ``tables`` (kind -> (table or None, tally)) and the metadata."""

        _system_pool(pa)
        if not self.prepare():
            return
        try:
            added = {}
            for kind, (df, tally) in tables.items():
                if df is not None and len(df) == 0:
                    self._replace(f"{kind}{EMPTY}", lambda p: p.write_bytes(pickle.dumps(df)))
                elif df is not None:
                    try:
                        table = pa.Table.from_pandas(df, preserve_index=False)
                    except (pa.ArrowException, TypeError, ValueError):
                        continue          # a column Parquet cannot hold: read from the SQLite each time
                    self._replace(f"{kind}.parquet", lambda p: _write(pq, pa, table, p))
                if df is not None:
                    added[kind] = tally
                else:       # no table, but rows counted (a table the reader could not read): keep the tally
                    added[kind] = {**tally, "no_table": True} if tally and tally.get("source_rows") else None
            if meta is not None:
                self._replace(META, lambda p: p.write_bytes(pickle.dumps(meta)))
            self._manifest = None
            manifest = {**self.kinds, **added}
            self._replace(MANIFEST, lambda p: p.write_text(json.dumps(manifest), encoding="utf-8"))
            self._manifest = manifest
        except OSError:
            pass                  # a full or read-only cache never fails a conversion

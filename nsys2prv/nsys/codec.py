"""How the table cache's files are encoded: the small objects it keeps (a report's metadata, its
Scan) as plain data, dataclasses of the expected classes and DataFrames as Arrow IPC, checked field
by field against their type hints when read (``decode``) -- never pickle; the tables as Parquet
written to and read from opened files (``write_parquet``, ``write_batches``, ``arrow_source``)."""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import json
import os
import struct
import sys
import types
import typing
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROW_GROUP = 1 << 17  # rows per Parquet row group: what a slice of a large report reads at least


class CacheDamage(ValueError):
    """A cache file that cannot be used (not ours, damaged, of another kind): a cache miss."""


# --- objects as JSON + Arrow IPC (no pickle) ---------------------------------------------------------
MAGIC = b"nsys2prv-cache 2\n"  # 2: plain dicts as two columns ("map")
_PLAIN = frozenset((bool, int, float, str, type(None)))  # what JSON holds as it is


def table_of(df: pd.DataFrame, preserve_index: bool | None = False) -> pa.Table:
    """``df`` as an Arrow table, its columns converted one after the other in this thread: Arrow's
    default starts a pool of threads per call for a frame of more than a few hundred values, which cost
    the 8 reports of a benchmark input 0.05 s of CPU more than it saved (0.098 against 0.046 s)."""
    return pa.Table.from_pandas(df, preserve_index=preserve_index, nthreads=1)


def to_ipc(df: pd.DataFrame) -> bytes:
    table = table_of(df, preserve_index=None)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pd.DataFrame:
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    table.validate(full=True)
    df = table.to_pandas(use_threads=False)
    if not isinstance(df, pd.DataFrame):
        raise CacheDamage("not a table")
    return df


def encode(obj) -> bytes:
    """``obj`` (None, bool, int, float, str, list, tuple, set, dict, numpy scalars, DataFrames and
    dataclasses of those) as bytes: a JSON tree, then the DataFrames as Arrow IPC streams."""
    blobs: list[bytes] = []

    def enc(o):
        if o is None or type(o) in (bool, int, float, str):
            return o
        if isinstance(o, np.generic) and o.dtype.kind in "biuf":
            return {"$": "np", "t": o.dtype.str, "v": o.item()}
        if isinstance(o, pd.DataFrame):
            blobs.append(to_ipc(o))
            return {"$": "df", "i": len(blobs) - 1}
        if isinstance(o, (list, tuple, set, frozenset)):
            return {"$": type(o).__name__, "v": [enc(x) for x in o]}
        if isinstance(o, dict):
            if _plain(o) and _plain(o.values()):  # (a host's process names: thousands, one JSON array each)
                return {"$": "map", "k": list(o), "v": list(o.values())}
            return {"$": "dict", "v": [[enc(k), enc(v)] for k, v in o.items()]}
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {
                "$": "dc",
                "c": type(o).__name__,
                "v": {f.name: enc(getattr(o, f.name)) for f in dataclasses.fields(o)},
            }
        raise TypeError(f"cannot cache a {type(o).__name__}")

    head = json.dumps(enc(obj), separators=(",", ":")).encode()
    parts = [MAGIC, struct.pack("<Q", len(head)), head]
    for b in blobs:
        parts += [struct.pack("<Q", len(b)), b]
    return b"".join(parts)


_SEQ = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def decode(data: bytes, expect: type, classes: tuple[type, ...] = ()):
    """The object ``encode`` wrote, which must be an ``expect``; dataclasses only among ``expect`` and
    ``classes``, every field checked against its annotation.  Anything else: ``CacheDamage``."""
    try:
        return _decode(data, expect, classes)
    except CacheDamage:
        raise
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        OverflowError,
        RecursionError,
        struct.error,
        pa.ArrowException,
        NameError,
    ) as exc:
        raise CacheDamage(f"{type(exc).__name__}: {exc}") from None


def _decode(data: bytes, expect: type, classes: tuple[type, ...]):
    if not data.startswith(MAGIC):
        raise CacheDamage("not a file of this version of nsys2prv")
    pos = len(MAGIC)
    chunks = []
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if pos + 8 + n > len(data):
            raise CacheDamage("truncated")
        chunks.append(data[pos + 8 : pos + 8 + n])
        pos += 8 + n
    if not chunks:
        raise CacheDamage("empty")
    tree, blobs = json.loads(chunks[0]), chunks[1:]
    allowed = {c.__name__: c for c in (expect, *classes) if dataclasses.is_dataclass(c)}

    def dec(t):
        if t is None or isinstance(t, (bool, int, float, str)):
            return t
        if not isinstance(t, dict):
            raise CacheDamage("unexpected JSON value")
        tag = t["$"]
        if tag in _SEQ:
            items = t["v"]
            if not isinstance(items, list):
                raise CacheDamage("not a sequence")
            return _SEQ[tag](items if _plain(items) else (dec(x) for x in items))
        if tag == "map":
            keys, values = t["k"], t["v"]
            if not (isinstance(keys, list) and isinstance(values, list) and len(keys) == len(values)):
                raise CacheDamage("a map of other lengths")
            if not (_plain(keys) and _plain(values)):
                raise CacheDamage("a map of other than plain values")
            return dict(zip(keys, values))
        if tag == "dict":
            return {dec(k): dec(v) for k, v in t["v"]}
        if tag == "np":
            dtype = np.dtype(t["t"])
            if dtype.kind not in "biuf" or not isinstance(t["v"], (bool, int, float)):
                raise CacheDamage("not a numeric scalar")
            return dtype.type(t["v"])
        if tag == "df":
            return from_ipc(blobs[t["i"]])
        if tag == "dc":
            cls = allowed.get(t["c"])
            if cls is None:
                raise CacheDamage(f"an object of type {t['c']!r}")
            fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
            values = t["v"]
            if not isinstance(values, dict) or set(values) != set(fields):
                raise CacheDamage(f"{cls.__name__} with other fields")
            hints = _hints(cls, tuple(allowed.values()))
            kw = {}
            for name, raw in values.items():
                v = dec(raw)
                if not _conforms(v, hints.get(name, typing.Any)):
                    raise CacheDamage(f"{cls.__name__}.{name} is a {type(v).__name__}")
                kw[name] = v
            return cls(**kw)
        raise CacheDamage(f"unknown tag {tag!r}")

    obj = dec(tree)
    if not isinstance(obj, expect):
        raise CacheDamage(f"a {type(obj).__name__}, not a {expect.__name__}")
    return obj


@functools.lru_cache(maxsize=64)
def _hints(cls: type, allowed: tuple[type, ...]) -> dict:
    """The type hints of the dataclass ``cls``, its annotations' names resolved in its module and among
    ``allowed`` (evaluated once per class: the same for every file)."""
    module = sys.modules[cls.__module__].__dict__
    return typing.get_type_hints(cls, globalns=module, localns={c.__name__: c for c in allowed})


def _plain(xs) -> bool:
    """Every element of ``xs`` a JSON scalar (checked per distinct type, not per element in Python)."""
    return set(map(type, xs)) <= _PLAIN


def _type_conforms(t: type, hint: type) -> bool:
    """A value of exactly the type ``t`` fits the class ``hint`` (``_conforms`` of a plain class)."""
    if hint is float:
        return issubclass(t, (int, float, np.integer, np.floating)) and not issubclass(t, bool)
    if hint is int:
        return issubclass(t, (int, np.integer))
    return issubclass(t, hint)


def _all_conform(xs, hint) -> bool:
    """Every element of ``xs`` fits ``hint``: of a plain class, decided once per distinct type."""
    if hint is typing.Any or hint is object:
        return True
    if typing.get_origin(hint) is None and isinstance(hint, type):
        return all(_type_conforms(t, hint) for t in set(map(type, xs)))
    return all(_conforms(x, hint) for x in xs)


def _conforms(v, hint) -> bool:
    """``v`` fits the annotation ``hint`` (containers checked element by element)."""
    if hint is typing.Any or hint is object:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(v, a) for a in args)
    if hint is type(None) or hint is None:
        return v is None
    if origin is None:
        if not isinstance(hint, type):
            return True
        if hint is float:
            return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        if hint is int:
            return isinstance(v, (int, np.integer))
        return isinstance(v, hint)
    if origin is collections.abc.Callable:
        return callable(v)
    if not isinstance(origin, type) or not isinstance(v, origin):
        return False
    if not args:
        return True
    if origin is dict and isinstance(v, dict):
        return _all_conform(v.keys(), args[0]) and _all_conform(v.values(), args[1])
    if origin is tuple and isinstance(v, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return _all_conform(v, args[0])
        return len(v) == len(args) and all(_conforms(x, a) for x, a in zip(v, args))
    if origin in (list, set, frozenset) and isinstance(v, (list, set, frozenset)):
        return _all_conform(v, args[0])
    return True


def _categorical(name: str, col: pa.ChunkedArray, seen: list):
    """A dictionary column of strings (one chunk) as a pandas Categorical, as ``to_pandas`` makes it,
    without pandas hashing its categories again for each column (a third of reading a table back; the
    columns of one table often share one dictionary: ``seen``, (dictionary, dtype) pairs, keeps those
    made). Arrow checks them instead -- unique, no null, every code in range: ``CacheDamage``
    otherwise; None: a column of another form (``to_pandas`` reads it)."""
    if col.num_chunks != 1 or not pa.types.is_string(col.type.value_type):
        return None
    chunk = col.chunk(0)
    values, indices = chunk.dictionary, chunk.indices
    dtype = next((d for v, d in seen if v.equals(values)), None)
    if dtype is None:
        if values.null_count:
            raise CacheDamage(f"column {name}: categories cannot be null")
        if len(pc.unique(values)) != len(values):
            raise CacheDamage(f"column {name}: categories not unique")
        categories = pd.Index(values.to_pandas())
        fast = getattr(pd.CategoricalDtype, "_from_fastpath", None)  # (pandas' own, for known-valid categories)
        dtype = fast(categories, col.type.ordered) if fast else pd.CategoricalDtype(categories, col.type.ordered)
        seen.append((values, dtype))
    codes = (indices.fill_null(-1) if indices.null_count else indices).to_numpy(zero_copy_only=False)
    if len(codes) and (codes.max() >= len(values) or codes.min() < (-1 if indices.null_count else 0)):
        raise CacheDamage(f"column {name}: a code out of range")
    try:
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)  # (checked above)
    except TypeError:  # pandas < 2.1: no ``validate``
        return pd.Categorical.from_codes(codes, dtype=dtype)


def frame_of(table: pa.Table) -> pd.DataFrame:
    """A table of the cache as a DataFrame, as ``table.to_pandas()`` makes it (a test compares them):
    numbers and booleans without nulls as writable numpy arrays, dictionary-coded text as Categoricals
    (``_categorical``: ``CacheDamage`` for a dictionary pandas would refuse, or with a code past its
    end); a table with any other column is left to ``to_pandas``."""
    cols: dict = {}
    seen: list = []
    meta = table.schema.pandas_metadata
    if meta is not None and meta.get("index_columns"):  # (an index stored: to_pandas restores it)
        return table.to_pandas(use_threads=False)
    # the pandas dtype each column had, where the table came from pandas (an Int64 or boolean without
    # nulls is stored as int64 or bool: to_pandas makes the extension type again)
    kept = {c.get("field_name"): (c.get("pandas_type"), c.get("numpy_type")) for c in meta["columns"]} if meta else {}
    for name, col in zip(table.column_names, table.columns):
        typ, was = col.type, kept.get(name)
        if pa.types.is_dictionary(typ) and (meta is None or (was is not None and was[0] == "categorical")):
            cols[name] = _categorical(name, col, seen)
            if cols[name] is None:
                break
        elif col.null_count == 0 and (
            pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)
        ):
            values = col.to_numpy()
            if meta is not None and (was is None or was[1] != str(values.dtype)):
                break
            cols[name] = values if values.flags.writeable else values.copy()
        else:
            break
    else:
        if len(cols) == table.num_columns > 0:  # (a name twice: one key of cols)
            return pd.DataFrame(cols, copy=False)
    return table.to_pandas(use_threads=False)


def system_pool() -> None:
    """Arrow's buffers from malloc: its default pool keeps freed memory, which the per-report
    stages would carry from one report to the next."""
    try:
        pa.set_memory_pool(pa.system_memory_pool())
    except Exception:  # noqa: BLE001 - an optimisation only
        pass


def _options(schema) -> dict:
    """How a table is written as Parquet: dictionary encoding only for text (names repeat; times and
    ids rarely do: encoding them cost more than half the write); the integers delta-encoded (times,
    correlation ids and row ids grow by small steps, ids and launch parameters repeat: a 10M-row
    report's tables 106 -> 16 MB, written in 0.54 instead of 0.84 CPU s and decoded in half the time
    of LZ4 over their plain bytes), then LZ4; no statistics (nothing filters on them)."""
    text = [
        f.name
        for f in schema
        if pa.types.is_dictionary(f.type) or pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    ints = {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_int64(f.type) or pa.types.is_int32(f.type)}
    return {
        "compression": "lz4",
        "use_dictionary": text or False,
        "column_encoding": ints or None,
        "write_statistics": False,
    }


def _write(table, sink) -> None:
    """One table as Parquet (``_options``)."""
    pq.write_table(table, sink, row_group_size=ROW_GROUP, **_options(table.schema))


def _wide_dictionaries(table):
    """Dictionary columns with int32 indices: every batch of a table gets the same schema."""
    fields = [
        pa.field(f.name, pa.dictionary(pa.int32(), f.type.value_type)) if pa.types.is_dictionary(f.type) else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


class _NoRows(ValueError):
    """No batch at all: nothing to store."""


def write_batches(frames, fh) -> list[str]:
    """The frames as one Parquet file (a row group a batch at most) into ``fh``; its column names
    ([] and nothing written when there was no frame)."""

    def opened(sink, schema):
        writer = pq.ParquetWriter(sink, schema, **_options(schema))
        return writer, lambda table: writer.write_table(table, row_group_size=ROW_GROUP)

    return _write_frames(frames, fh, table_of, opened)


def _write_frames(frames, fh, arrow, opened) -> list[str]:
    """The frames, each made a table by ``arrow`` (its dictionaries widened, then cast to the first
    one's schema), written into ``fh`` by the writer ``opened(sink, schema)`` gives with its write
    call; the column names ([] and nothing written when there was no frame)."""
    writer = schema = None
    write: collections.abc.Callable[[pa.Table], None] = lambda table: None  # (set with the writer)
    with _arrow_sink(fh) as sink:
        try:
            for df in frames:
                table = _wide_dictionaries(arrow(df))
                if writer is None:
                    schema = table.schema
                    writer, write = opened(sink, schema)
                else:
                    table = table.cast(schema)
                write(table)
        finally:  # (a frame that failed to come: the writer closed before its file, the file then removed)
            if writer is not None:
                writer.close()
    if schema is None:
        raise _NoRows(fh)
    return list(schema.names)


def _proc_fd(fd: int) -> str | None:
    p = f"/proc/self/fd/{fd}"
    return p if os.path.exists(p) else None


def arrow_source(fd: int):
    """An Arrow input file on an opened descriptor (memory-mapped through /proc: the same inode)."""
    p = _proc_fd(fd)
    return pa.memory_map(p) if p else os.fdopen(os.dup(fd), "rb")


@contextmanager
def _arrow_sink(fh):
    """An Arrow output on the opened Python file ``fh``: Arrow's own file on the same descriptor's inode
    where /proc has it (not a Python call per write), else ``fh`` itself."""
    p = _proc_fd(fh.fileno())
    if p is None:
        yield fh
        return
    with pa.OSFile(p, mode="wb") as sink:
        yield sink


def write_ipc(table: pa.Table, fh) -> None:
    """``table`` as an Arrow IPC file into the opened Python file ``fh``, uncompressed, a record batch
    per ROW_GROUP rows (``IpcGroups`` reads the batches as row groups): a run's own table cache
    (``--no-cache``), which is read back once and removed -- written in a third of Parquet's CPU and
    read in half (8 reports: 0.03 against 0.11 s to write), at 15x the bytes."""
    table = _as_parquet_reads(table)
    with _arrow_sink(fh) as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=ROW_GROUP)


def write_ipc_batches(frames, fh) -> list[str]:
    """The frames as one Arrow IPC file (``write_ipc``'s, a record batch per ROW_GROUP rows at most, as
    ``write_batches`` makes its row groups) into ``fh``; its column names ([] and nothing written when
    there was no frame). Each frame's text dictionaries are laid over one growing dictionary per
    column (an IPC file holds one, its growth written as deltas): every batch reads back with it."""
    grown: dict[int, pa.Array] = {}

    def opened(sink, schema):
        writer = pa.ipc.new_file(sink, schema, options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True))
        return writer, lambda table: writer.write_table(_onto(table, grown), max_chunksize=ROW_GROUP)

    return _write_frames(frames, fh, lambda df: _as_parquet_reads(table_of(df)), opened)


def _onto(table: pa.Table, grown: dict[int, pa.Array]) -> pa.Table:
    """``table`` with each dictionary column's codes onto ``grown``'s dictionary of that column (its
    new values appended to it, in their order)."""
    cols = list(table.columns)
    for j, f in enumerate(table.schema):
        if not pa.types.is_dictionary(f.type):
            continue
        col = cols[j].combine_chunks() if cols[j].num_chunks != 1 else cols[j].chunk(0)
        have = grown.get(j)
        if have is None or col.dictionary.equals(have):
            grown[j] = col.dictionary if have is None else have
            cols[j] = col
            continue
        at = pc.index_in(col.dictionary, value_set=have)
        new = pc.is_null(at)
        fresh = col.dictionary.filter(new)
        where = pc.fill_null(at, -1).to_numpy().astype(np.int32)
        where[where < 0] = len(have) + np.arange(len(fresh))
        have = grown[j] = pa.concat_arrays([have, fresh]) if len(fresh) else have
        codes = pc.take(pa.array(where), col.indices)
        cols[j] = pa.DictionaryArray.from_arrays(codes, have)
    return pa.Table.from_arrays(cols, schema=table.schema)


def _as_parquet_reads(table: pa.Table) -> pa.Table:
    """``table`` with the types a Parquet round trip gives it back (the cache's readers see one table
    whatever its file): a dictionary of text with ``string`` values (pandas' ``large_string`` ones
    would also miss ``frame_of``'s fast path), a dictionary of other values decoded."""
    fields = []
    for f in table.schema:
        if pa.types.is_dictionary(f.type):
            value = f.type.value_type
            text = pa.types.is_string(value) or pa.types.is_large_string(value)
            f = f.with_type(pa.dictionary(f.type.index_type, pa.string(), f.type.ordered) if text else value)
        fields.append(f)
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return table if schema.equals(table.schema) else table.cast(schema)


class _Groups:
    """``pq.FileMetaData``'s part the cache's readers use: the row groups and their rows."""

    def __init__(self, rows: list[int]):
        self.rows = rows
        self.num_row_groups = len(rows)

    def row_group(self, i: int):
        return types.SimpleNamespace(num_rows=self.rows[i])


class IpcGroups:
    """An Arrow IPC file of ``write_ipc`` read as the cache's readers read a ``pq.ParquetFile``
    (``schema_arrow``, ``metadata``'s row groups, ``read``, ``read_row_group``): its record batches are
    the row groups, so a table has one reading path whatever its file; each batch's columns read are
    checked in full as they are read (``CacheDamage``/``ArrowInvalid`` for a damaged one, never a wild
    read), those not read are not touched (a 10M-row report's slice plan reads the starts and ends of
    every group: not the file's other 0.4 GB into the main process's memory)."""

    def __init__(self, source):
        self._file = pa.ipc.open_file(source)
        self.schema_arrow = self._file.schema
        self.metadata = _Groups([self._file.get_batch(i).num_rows for i in range(self._file.num_record_batches)])

    def _batch(self, i: int, columns: list[str] | None) -> pa.RecordBatch:
        batch = self._file.get_batch(i)
        if columns is not None:
            batch = batch.select(columns)
        batch.validate(full=True)
        return batch

    def read_row_group(self, i: int, columns: list[str] | None = None, use_threads: bool = False) -> pa.Table:
        return pa.Table.from_batches([self._batch(i, columns)])

    def read(self, columns: list[str] | None = None, use_threads: bool = False) -> pa.Table:
        batches = [self._batch(i, columns) for i in range(self.metadata.num_row_groups)]
        if batches:
            return pa.Table.from_batches(batches)
        empty = self.schema_arrow.empty_table()
        return empty if columns is None else empty.select(columns)


def write_parquet(table, fh) -> None:
    """``table`` as Parquet into the opened Python file ``fh`` (``_arrow_sink``)."""
    with _arrow_sink(fh) as sink:
        _write(table, sink)

"""The ADBC driver's reader of an export (``AdbcReader``) and typed columns from SQLite rows
(``sql_column``); the sqlite3 connection, read-only and every query bounded: ``schema.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from nsys2prv.nsys import sqlite_mode

TEXT = {str, bytes}
NUMBER = {int, float}
# columns (as the readers name them in their queries) that hold numbers whatever else a column of the
# same query holds: text there is a damaged row, never a value
NUMERIC_COLUMNS = frozenset(
    {
        "start",
        "end",
        "tid",
        "gpid",
        "pid",
        "device",
        "context",
        "stream",
        "corr",
        "globalTid",
        "globalPid",
        "nameId",
        "shortName",
        "demangledName",
        "rank",
        "id",
        "deviceId",
        "streamId",
        "contextId",
        "correlationId",
        "typeId",
        "metricId",
        "timestamp",
        "bytes",
        "size",
        "copyKind",
        "copy_kind",
        "domainId",
        "eventType",
        "textId",
        "graphNodeId",
        "graphExecId",
    }
)


def sql_column(values: tuple, kinds: set | None = None) -> np.ndarray | pd.Series:
    """A column from sqlite tuples: int64 when all ints, Int64/float when NULLs, else object
    (``kinds``: the values' types, when the caller has them)."""
    arr = np.asarray(values, dtype=object)
    kinds = {type(v) for v in values} if kinds is None else kinds
    if kinds <= {int}:
        try:
            return arr.astype(np.int64)
        except OverflowError:
            return arr.astype(np.uint64).view(np.int64)
    if kinds <= {int, type(None)}:
        return pd.array(list(values), dtype="Int64")
    if kinds <= {int, float, type(None)}:
        return arr.astype(float)
    return arr


def _EXACT(typ) -> bool:
    """Arrow types the ADBC driver gives exactly as sqlite3 + ``sql_column`` would (it refuses an int
    column holding a float or text, and a float column holding text)."""
    return pa.types.is_int64(typ) or pa.types.is_float64(typ) or pa.types.is_null(typ)


# Rows of each batch the driver makes. Its default, 1,024, costs a batch's work every 1,024 rows (489
# batches for a stage-A window of 500,000 rows). A whole window in one batch is Arrow's read-only
# memory, copied again by ``_own``, and its buffers grown to the window's size (10M rows: 60k more page
# faults); 65,536 rows make 8 batches, concatenated into the columns the reader keeps.
BATCH_ROWS = 1 << 16


def _own(values: np.ndarray) -> np.ndarray:
    """``values`` as a writable array of their own: the driver's batches (BATCH_ROWS rows each) are
    already concatenated into a new array; a single batch is Arrow's read-only memory: copied."""
    return values if values.flags.writeable else values.copy()


class AdbcReader:
    """A read-only ADBC SQLite connection (low-level API: the DB-API module would import
    pyarrow.dataset)."""

    def __init__(self, uri: str):
        # optional dependency (extra "fast"): ImportError here means the stdlib reader
        import adbc_driver_manager
        import adbc_driver_sqlite
        import pyarrow  # noqa: F401 - the Arrow import below needs it; ImportError = no accelerator

        self._mgr = adbc_driver_manager
        sqlite_mode.multithread()  # (before its first connection; tried once per process)
        self._db = adbc_driver_sqlite.connect(uri)
        try:
            self._conn = adbc_driver_manager.AdbcConnection(self._db)
        except Exception:
            self._db.close()
            raise

    def query(self, sql: str) -> pd.DataFrame | None:

        stmt = self._mgr.AdbcStatement(self._conn)
        try:
            stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
            stmt.set_sql_query(sql)
            handle, _ = stmt.execute_query()
            reader = pa.RecordBatchReader._import_from_c(handle.address)
            if not all(_EXACT(t) for t in reader.schema.types):
                reader.close()
                return None  # text / blob: sqlite3 and decode_text decide
            table = reader.read_all()
        finally:
            stmt.close()
        names = table.column_names
        if table.num_rows == 0:
            return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
        cols = {}
        for name, col in zip(names, table.columns):
            typ = col.type
            if pa.types.is_null(typ):
                cols[name] = pd.array([None] * len(col), dtype="Int64")
            elif pa.types.is_int64(typ):
                if col.null_count:
                    values = _own(col.fill_null(0).to_numpy())
                    cols[name] = pd.arrays.IntegerArray(values, col.is_null().to_numpy(zero_copy_only=False))
                else:
                    cols[name] = _own(col.to_numpy())
            elif pa.types.is_float64(typ):
                cols[name] = _own(col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False))
            else:
                return None
        return pd.DataFrame(cols, copy=False)  # (the columns as they are: not copied into one block)

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._db.close()

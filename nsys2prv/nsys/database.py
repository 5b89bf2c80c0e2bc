"""Open one Nsight Systems SQLite export read-only and probe what it contains.

Nothing here assumes a schema version: tables and columns are discovered from
``sqlite_master`` / ``PRAGMA table_info`` once per file, and readers ask for what
they need (see docs/nsys-schema.md).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from nsys2prv.core.environment import environment
from nsys2prv.nsys.connection import (
    NUMBER,
    NUMERIC_COLUMNS,
    TEXT,
    AdbcReader,
    sql_column,
)
from nsys2prv.nsys.schema import Export

# The host, in order: TARGET_INFO_SYSTEM_ENV 'Hostname'; META_DATA_CAPTURE 'DEVICE_DISPLAY_NAME' (the
# only name of a Windows capture); the captured environment's host variables.  Placeholders name no host.
HOST_ENV_VARS = ("SLURMD_NODENAME", "HOSTNAME", "COMPUTERNAME")
NOT_A_HOST = {"", "localhost", "local (cli)", "unknown", "unknown-host"}
UNKNOWN_HOST = "unknown-host-"  # + the report file's stem, when the export names no host
_VERSION_SUFFIX = re.compile(r"_v\d+$")


def strip_version_suffix(name: str) -> str:
    """``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel`` (display names only)."""
    return _VERSION_SUFFIX.sub("", name)


class Report(Export):
    """One report (one SQLite export): schema probe (``Export``), metadata and typed queries."""

    opened = 0  # SQLite files opened by this process (the table cache's tests count them)

    def __init__(self, path: str | os.PathLike, index: int = 0, source: str | None = None):
        Report.opened += 1
        super().__init__(path, index, source)
        self._adbc: AdbcReader | Literal[False] | None = None  # the optional ADBC reader (see _adbc_query);
        #                                                          False once unusable
        self.cache: dict = {}  # per-report memo for loaders shared by several readers
        self._counts: dict[str, int] = {}  # table -> rows (``count`` without a condition: a full scan)
        # what the readers asked of each table: columns found missing, and tables some probe accepted
        self.missing_columns: dict[str, set[str]] = {}
        self.probed_ok: set[str] = set()
        self.window: tuple[str, int, int] | None = None  # queries read only rowids [lo, hi) of this table
        # while a reader runs (readers.base.Reader): rows its queries dropped for a non-numeric value
        # in a numeric column, reason -> rows; and optional columns found missing, table -> columns
        self.type_drops: dict[str, int] | None = None
        self.optional_missing: dict[str, list[str]] = {}

    def has(self, table: str, *cols: str) -> bool:
        have = self.columns(table)
        if not have:
            return False
        missing = [c for c in cols if c not in have]
        if missing:
            self.missing_columns.setdefault(table, set()).update(missing)
            return False
        self.probed_ok.add(table)
        return True

    def unreadable(self, tables) -> dict[str, list[str]]:
        """Of ``tables``, those with rows that no reader's probe accepted: table -> the columns it lacked."""
        return {
            t: sorted(self.missing_columns[t])
            for t in tables
            if t in self.missing_columns and t not in self.probed_ok and self.count(t)
        }

    def count(self, table: str, where: str = "") -> int:
        """Rows of ``table`` (matching ``where``); a whole table's count is found once (the export is
        read-only: stage A's metadata, batching and tallies ask for the same tables)."""
        if table not in self.tables:
            return 0
        if not where and table in self._counts:
            return self._counts[table]
        sql = f'SELECT count(*) FROM "{table}"' + (f" WHERE {where}" if where else "")
        n = int(self.rows(sql)[0][0])
        if not where:
            self._counts[table] = n
        return n

    def col_or_null(self, table: str, col: str, alias: str | None = None, prefix: str = "", warn: bool = False) -> str:
        """``col`` when the table has it, else ``NULL`` (always aliased to ``alias or col``); ``warn``:
        a column whose absence loses information (recorded in ``optional_missing``: the reader says it)."""
        alias = alias or col
        if col in self.columns(table):
            return f"{prefix}{col} AS {alias}"
        if warn and col not in self.optional_missing.setdefault(table, []):
            self.optional_missing[table].append(col)
        return f"NULL AS {alias}"

    @contextmanager
    def counting_type_drops(self) -> Iterator[dict[str, int]]:
        """While the block runs, rows dropped for text in a numeric column are counted in a new
        ``type_drops`` (yielded); the outer one is back after it."""
        outer, self.type_drops = self.type_drops, {}
        try:
            yield self.type_drops
        finally:
            self.type_drops = outer

    def rowid_range(self, table: str) -> tuple[int, int] | None:
        """The smallest and largest rowid of a table (None: empty, or a table without rowids)."""
        try:  # (apart: SQLite finds a lone min() or max() of the rowid in the b-tree, both together by a scan)
            lo = self.rows(f'SELECT min(rowid) FROM "{table}"')[0][0]
            hi = self.rows(f'SELECT max(rowid) FROM "{table}"')[0][0]
        except sqlite3.DatabaseError:
            return None
        return None if lo is None else (int(lo), int(hi))

    def query(self, sql: str, params: tuple = ()) -> pd.DataFrame:
        if self.window is not None:  # one batch of rows of a table (pipeline.scan.read_each)
            table, lo, hi = self.window
            sql = re.sub(
                rf"\bFROM\s+{table}\b",
                f"FROM (SELECT * FROM {table} WHERE rowid >= {lo} AND rowid < {hi}) AS {table}",
                sql,
            )
        if not params and self._adbc is not False:
            df = self._adbc_query(sql)
            if df is not None:
                return df
        description, rows = self._fetch(sql, params)
        names = [d[0] for d in description]
        if not rows:
            return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
        cols = list(zip(*rows))
        bad = None
        types = [{type(v) for v in c} for c in cols]
        for n, c, kinds in zip(names, cols, types):
            if kinds & TEXT and (kinds & NUMBER or n in NUMERIC_COLUMNS):  # text in a numeric column
                wrong = (
                    pd.to_numeric(pd.Series(c, dtype=object), errors="coerce").isna().to_numpy()
                    & ~pd.isna(pd.Series(c, dtype=object)).to_numpy()
                )
                if wrong.any():
                    self._count_wrong_type(sql, n, wrong, bad)
                    bad = wrong if bad is None else bad | wrong
        if bad is not None:  # those rows are dropped (counted), the other columns typed without them
            keep = np.flatnonzero(~bad)
            cols = [tuple(np.asarray(c, dtype=object)[keep]) for c in cols]
            if not keep.size:
                return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
            return pd.DataFrame({n: sql_column(c) for n, c in zip(names, cols)})  # kinds of the kept rows
        return pd.DataFrame({n: sql_column(c, k) for n, c, k in zip(names, cols, types)})

    def _count_wrong_type(self, sql: str, column: str, wrong: np.ndarray, before: np.ndarray | None) -> None:
        """Rows of a query dropped for a value that is not a number in a numeric column: counted in
        ``type_drops`` (a reader adds them to its tally) -- or, outside a reader, said in ``notes``."""
        m = re.search(r'\bFROM\s+"?(\w+)', sql, re.IGNORECASE)
        n = int((wrong & ~before).sum()) if before is not None else int(wrong.sum())
        if not n:
            return
        src = re.search(rf'"?(\w+)"?\s+AS\s+"?{re.escape(column)}\b', sql, re.IGNORECASE)  # the export's name
        reason = (
            f"{m.group(1) if m else 'a table'}: text in the numeric column {src.group(1) if src else column} "
            "(row not used)"
        )
        if self.type_drops is not None:
            self.type_drops[reason] = self.type_drops.get(reason, 0) + n
        else:
            self.notes.append(f"{n} row(s) of {reason}")

    def _adbc_query(self, sql: str) -> pd.DataFrame | None:
        """``sql`` through the ADBC SQLite driver (the optional ``fast`` extra: Arrow columns
        straight from C instead of sqlite3's Python tuples), or None when the driver is not
        installed, fails in any way, or gives a column it cannot give exactly as ``sql_column`` does
        (text and blob columns: it turns a number stored in a text column into text); the caller
        then reads through sqlite3."""
        try:
            if self._adbc is None:
                if environment().no_adbc:
                    raise ImportError
                self._adbc = AdbcReader(self._uri)
            elif self._adbc is False:  # found unusable before
                return None
            return self._adbc.query(sql)
        except ImportError:
            self._adbc = False
        except Exception:  # noqa: BLE001 - any driver error: sqlite3 decides
            pass
        return None

    # -- metadata --------------------------------------------------------
    @cached_property
    def meta(self) -> dict[str, str]:
        for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if self.has(t, "name", "value"):
                rows = self.rows(f'SELECT name, value FROM "{t}"')
                return {str(k): str(v) for k, v in rows}
        return {}

    @property
    def schema_version(self) -> str:
        return self.meta.get("EXPORT_SCHEMA_VERSION", "unknown")

    @property
    def product_version(self) -> str:
        return self.meta.get("EXPORT_PRODUCT_VERSION", "unknown")

    @cached_property
    def capture_env(self) -> dict[str, str]:
        """Environment variables captured at launch (META_DATA_CAPTURE, 2023+ exports)."""
        env: dict[str, str] = {}
        if not self.has("META_DATA_CAPTURE", "name", "value"):
            return env
        rows = self.rows("SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT_VARIABLE%'")
        for (v,) in rows:
            if isinstance(v, str) and "=" in v:
                k, _, val = v.partition("=")
                env.setdefault(k.strip(), val.strip().strip('"'))
        return env

    @cached_property
    def device_env(self) -> dict[str, str]:
        """The profiled process's environment as nsys 2022.x stores it: TARGET_INFO_SYSTEM_ENV row
        ``DeviceEnvironment``, NUL-separated KEY=VALUE (tests/data/mpi4/README.md)."""
        env: dict[str, str] = {}
        if not self.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
            return env
        for (v,) in self.rows("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"):
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            if not isinstance(v, str):
                continue
            for item in v.split("\0"):
                k, sep, val = item.partition("=")
                if sep and k.strip():
                    env.setdefault(k.strip(), val.strip())
        return env

    @cached_property
    def session_start_ns(self) -> int | None:
        if self.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"):
            rows = self.rows("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
            if rows and rows[0][0] is not None:
                try:
                    return int(float(rows[0][0])) if not isinstance(rows[0][0], int) else rows[0][0]
                except ValueError:
                    return None
        return None

    @property
    def time_normalized(self) -> bool:
        return self.meta.get("EXPORT_PARAM_TIME_NORMALIZE", "false").lower() == "true"

    @property
    def time_shift_ns(self) -> int:
        try:
            return int(self.meta.get("EXPORT_PARAM_TIME_SHIFT", "0") or 0)
        except ValueError:
            return 0

    @cached_property
    def _host(self) -> tuple[str, str | None]:
        """(host name, where the export has it); (a name made from the report file, None) when it has none."""
        for table, key in (("TARGET_INFO_SYSTEM_ENV", "Hostname"), ("META_DATA_CAPTURE", "DEVICE_DISPLAY_NAME")):
            if self.has(table, "name", "value"):
                for (v,) in self.rows(f"SELECT value FROM {table} WHERE name = ?", (key,)):
                    if v is not None and str(v).strip().lower() not in NOT_A_HOST:
                        return str(v).strip(), f"{table} {key}"
        env = {**self.device_env, **self.capture_env}
        for var in HOST_ENV_VARS:
            if env.get(var, "").strip().lower() not in NOT_A_HOST:
                return env[var].strip(), f"captured environment {var}"
        return UNKNOWN_HOST + Path(self.source).stem, None

    @property
    def hostname(self) -> str:
        return self._host[0]

    @property
    def host_known(self) -> bool:
        return self._host[1] is not None

    @cached_property
    def strings(self) -> pd.Series:
        """StringIds as a Series id -> text (loaded once)."""
        if not self.has("StringIds", "id", "value"):
            return pd.Series(dtype=object)
        rows = self.rows("SELECT id, value FROM StringIds")  # straight to Python objects: a
        if not rows:  # DataFrame would make Arrow strings
            return pd.Series(dtype=object)  # of them only to turn them back
        ids, values = zip(*rows)
        texts = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values]  # a BLOB
        text = np.array(texts, dtype=object)
        try:
            index = pd.Index(np.array(ids, dtype=np.int64))
            if index.is_unique:
                return pd.Series(text, index=index, dtype=object)
        except (TypeError, ValueError, OverflowError):
            pass
        return self._strings_of_damaged(ids, text)

    def _strings_of_damaged(self, ids: tuple, text: np.ndarray) -> pd.Series:
        """StringIds with an id repeated or not an integer (a damaged export): every id one text, the
        first; the rows left out said in ``notes``."""
        keys = pd.to_numeric(pd.Series(ids, dtype=object), errors="coerce")
        ok = (keys.notna() & (keys.abs() < 2**63) & (keys == keys.round())).to_numpy()
        index = np.zeros(len(ids), np.int64)
        index[ok] = keys[ok].astype(np.int64).to_numpy()
        dup = np.zeros(len(ids), bool)
        dup[ok] = pd.Series(index[ok]).duplicated().to_numpy()
        said = [f"{int(dup.sum())} row(s) repeating an id (the first text of each id kept)"] if dup.any() else []
        if not ok.all():
            said.append(f"{int((~ok).sum())} row(s) with an id that is not an integer (not used)")
        self.notes.append("StringIds: " + ", ".join(said))
        keep = ok & ~dup
        return pd.Series(text[keep], index=index[keep], dtype=object)

    def lookup(self, ids: pd.Series | np.ndarray) -> np.ndarray:
        """Map StringIds keys to text; a missing or NULL id gives None (LEFT JOIN semantics)."""
        ids = pd.Series(ids)
        valid = ids.notna()
        out = np.full(len(ids), None, dtype=object)
        if valid.any():
            keys = ids[valid].astype(np.int64).to_numpy()
            out[valid.to_numpy()] = self.strings.reindex(keys).to_numpy()
        return out

    def close(self) -> None:
        if self._adbc:
            self._adbc.close()
            self._adbc = None
        super().close()

    def __repr__(self) -> str:
        return f"Report({self.source!r}, schema={self.schema_version})"

"""Issue 40, stop 57: the ADBC driver's SQLite runs in multi-thread mode in the processes nsys2prv
owns (``nsys/sqlite_mode.py``): its connections take no mutex per value read.  Each case runs in a
fresh interpreter, where the driver's SQLite is not initialised yet (the mode can only be set then)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nsys2prv.nsys import sqlite_mode

pytest.importorskip("adbc_driver_sqlite")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the mode is set on Linux only (ELF)")

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = sqlite_mode.driver_library()
SQLITE_MISUSE = 21

# In the child: the bundled SQLite's global configuration (``sqlite3Config``, a data symbol of the
# driver's library) begins with ``int bMemstat; u8 bCoreMutex; u8 bFullMutex`` (SQLite's sqliteInt.h):
# bFullMutex is 1 in the serialized mode, 0 in multi-thread mode.
CHILD = """
import ctypes, json, sys
from nsys2prv.nsys import sqlite_mode as m
from nsys2prv.nsys.connection import AdbcReader
lib, db, claim = m.driver_library(), sys.argv[1], sys.argv[2] == "1"
if claim:
    m.claim()
reader = AdbcReader("file:" + db + "?mode=ro")
rows = reader.query("SELECT a, b FROM t ORDER BY a")
full_mutex = ctypes.c_uint8.from_address(m.address(lib, b"sqlite3Config", m.STT_OBJECT) + 5).value
again = m.config_function(lib)(m.SQLITE_CONFIG_MULTITHREAD)  # (SQLite initialised by the reader now)
reader.close()
print(json.dumps([m._state, full_mutex, again, rows["a"].tolist(), rows["b"].tolist()]))
"""


def _database(tmp_path: Path) -> tuple[Path, list[int], list[int]]:
    path = tmp_path / "t.sqlite"
    a = list(range(1, 3001))
    b = [(x * 7919) % 100003 - 50000 for x in a]
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?)", list(zip(a, b)))
    return path, a, b


def _child(db: Path, claim: bool) -> list:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("NSYS2PRV_NO_ADBC", None)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), "1" if claim else "0"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_the_driver_library_names_both_functions_once():
    anchor, config = sqlite_mode.symbol_offsets(
        LIBRARY, ((sqlite_mode.ANCHOR, sqlite_mode.STT_FUNC), (sqlite_mode.CONFIG, sqlite_mode.STT_FUNC))
    )
    assert anchor > 0 and config > 0 and anchor != config


def test_a_process_that_claims_reads_the_same_rows_in_multi_thread_mode(tmp_path):
    db, a, b = _database(tmp_path)
    state, full_mutex, again, got_a, got_b = _child(db, claim=True)
    assert state is True and full_mutex == 0  # multi-thread: no connection mutex
    assert again == SQLITE_MISUSE  # the function called is SQLite's sqlite3_config: refused once initialised
    assert (got_a, got_b) == (a, b)


def test_a_process_that_does_not_claim_keeps_the_serialized_mode(tmp_path):
    db, a, b = _database(tmp_path)
    state, full_mutex, again, got_a, got_b = _child(db, claim=False)
    assert state is None and full_mutex == 1
    assert again == SQLITE_MISUSE
    assert (got_a, got_b) == (a, b)


@pytest.mark.parametrize("own", [True, False])
def test_the_command_lines_runs_claim_the_api_callers_process_does_not(tmp_path, own):
    code = (
        "import sys; from pathlib import Path; from nsys2prv.config import Config; "
        "from nsys2prv.nsys import sqlite_mode; from nsys2prv.pipeline.conversion import _executor; "
        f"ex = _executor(Config(inputs=[Path('x.sqlite')], output=Path('o'), jobs=1, own_process={own})); "
        "ex.close(final=True); print(sqlite_mode._claimed)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[-1] == str(own)


def test_files_other_than_the_driver_give_no_function(tmp_path):
    text = tmp_path / "not-elf.so"
    text.write_text("not a shared object\n")
    head = tmp_path / "head.so"  # the driver's first bytes: its section headers are past the end
    head.write_bytes(Path(LIBRARY).read_bytes()[:4096])
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    other = (getattr(np, "_core", None) or np.core)._multiarray_umath.__file__  # (a library without them)
    for path in (text, head, empty, tmp_path / "missing.so", other):
        assert sqlite_mode.config_function(str(path)) is None, path
    assert sqlite_mode.symbol_offsets(other, ((sqlite_mode.ANCHOR, sqlite_mode.STT_FUNC),)) is None

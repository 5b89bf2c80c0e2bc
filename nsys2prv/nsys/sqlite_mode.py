"""The ADBC driver's SQLite in multi-thread mode (``multithread``): once per process, before its
first connection, in a process nsys2prv owns (``claim``: the command line's and the processes it
forks, which inherit the mode).

The driver bundles an SQLite built thread-safe, whose default is the serialized mode: every call
the driver makes per value read (``sqlite3_column_type``, ``sqlite3_column_int64``, ...) takes and
releases the connection's mutex.  Reading a 10M-row report's 2M kernels (20 columns) took 2.27-2.29
user s in serialized mode and 1.75-1.84 s in multi-thread mode (BENCHMARKS.md, "Issue 40, stop 57").
Multi-thread mode is SQLite's own setting (``sqlite3_config(SQLITE_CONFIG_MULTITHREAD)``, only
before SQLite is initialised): safe as long as no connection is used by two threads at the same
time, and nsys2prv gives every thread that reads a connection of its own (a ``Report`` each:
``read_ahead``, ``scan._lifetimes_beside``).  A process that is not nsys2prv's (the Python API's
caller) keeps the driver as it is: the mode is process-wide, and its own connections may be shared
between threads.

The driver does not export ``sqlite3_config``.  Its library keeps its symbol table (ELF ``.symtab``),
where the function is found by name, as is an exported function of the driver whose address the
dynamic linker gives: the difference of their offsets places ``sqlite3_config`` in this process.
Anything else (not Linux, not a 64-bit little-endian x86-64 or AArch64 shared object, no symbol
table, the names not functions, SQLite already initialised: ``SQLITE_MISUSE``) leaves the driver in
its serialized mode: the same rows, read at its own speed.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
import sys
import threading
from typing import Any

import numpy as np

SQLITE_OK, SQLITE_CONFIG_MULTITHREAD = 0, 2
ANCHOR = b"AdbcDriverInit"  # exported by every ADBC driver: its address is the dynamic linker's
CONFIG = b"sqlite3_config"
_MACHINES = (62, 183)  # EM_X86_64, EM_AARCH64 (a variadic int argument is passed as a plain one)
_SYMBOL = np.dtype(  # Elf64_Sym
    [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("section", "<u2"), ("value", "<u8"), ("size", "<u8")]
)
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
SHT_SYMTAB, STT_OBJECT, STT_FUNC, ET_DYN = 2, 1, 2, 3

_claimed = False
_state: bool | None = None  # None: not tried in this process's memory (a forked process inherits it)
_lock = threading.Lock()  # (readers of several threads: the first sets the mode, the others wait for it)


def claim() -> None:
    """This process is nsys2prv's (the command line's): ``multithread`` may set the driver's mode."""
    global _claimed
    _claimed = True


def multithread() -> bool:
    """The driver's SQLite in multi-thread mode, tried once per process memory where ``claim`` was
    called; whether it is (module doc)."""
    global _state
    with _lock:
        if _state is None and _claimed:
            library = driver_library()
            fn = None if library is None else config_function(library)
            _state = fn is not None and fn(SQLITE_CONFIG_MULTITHREAD) == SQLITE_OK
        return bool(_state)


def driver_library() -> str | None:
    """The ADBC SQLite driver's shared object, as its package names it to the driver manager (None:
    no driver, or a version that does not say)."""
    try:
        import adbc_driver_sqlite  # (optional: the extra "fast")
    except ImportError:
        return None
    where = getattr(adbc_driver_sqlite, "_driver_path", None)
    return None if where is None else str(where())


def config_function(library: str) -> Any:
    """The bundled SQLite's ``sqlite3_config`` (one int argument) in ``library`` as loaded in this
    process, or None where it cannot be placed with certainty (module doc)."""
    where = address(library, CONFIG)
    return None if where is None else ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(where)


def address(library: str, name: bytes, kind: int = STT_FUNC) -> int | None:
    """Where the symbol ``name`` (of ``kind``) of the shared object ``library`` is in this process:
    its offset from ANCHOR's, whose address the dynamic linker gives (None: not Linux, or not
    placed with certainty: ``symbol_offsets``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        offsets = symbol_offsets(library, ((ANCHOR, STT_FUNC), (name, kind)))
        if offsets is None:
            return None
        lib = ctypes.CDLL(library)  # (the driver manager's dlopen of the same file: the same object)
        anchor = ctypes.cast(getattr(lib, ANCHOR.decode()), ctypes.c_void_p).value
        return None if not anchor else anchor - offsets[0] + offsets[1]
    except (OSError, AttributeError, ValueError, struct.error):
        return None


def symbol_offsets(path: str, names: tuple[tuple[bytes, int], ...]) -> list[int] | None:
    """The offsets of the symbols ``names`` ((name, kind): STT_FUNC a function, STT_OBJECT data) in the
    shared object ``path`` (its ``.symtab``): None unless it is a 64-bit little-endian x86-64 or
    AArch64 shared object whose symbol table defines each name exactly once, as a symbol of its kind."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as elf:
        if elf[:6] != b"\x7fELF\x02\x01":
            return None
        e_type, machine = struct.unpack_from("<HH", elf, 16)
        shoff, shentsize, shnum = struct.unpack_from("<Q", elf, 0x28)[0], *struct.unpack_from("<HH", elf, 0x3A)
        if e_type != ET_DYN or machine not in _MACHINES or shentsize != _SECTION.size or not shoff:
            return None
        sections = [_SECTION.unpack_from(elf, shoff + i * shentsize) for i in range(shnum)]
        tables = [s for s in sections if s[1] == SHT_SYMTAB]
        if len(tables) != 1 or tables[0][9] != _SYMBOL.itemsize or tables[0][6] >= shnum:
            return None
        sym, strtab = tables[0], sections[tables[0][6]]
        strings = elf[strtab[4] : strtab[4] + strtab[5]]
        symbols = np.frombuffer(elf, _SYMBOL, sym[5] // _SYMBOL.itemsize, sym[4]).copy()  # (the map is closed below)
    defined = symbols["section"] != 0
    found: list[list[int]] = []
    for name, kind in names:
        starts, at = [], strings.find(name + b"\0")  # (a name may end a longer one's string: found there too)
        while at >= 0:
            starts.append(at)
            at = strings.find(name + b"\0", at + 1)
        of_kind = defined & ((symbols["info"] & 0xF) == kind)
        found.append(symbols["value"][of_kind & np.isin(symbols["name"], starts)].tolist())
    if any(len(v) != 1 for v in found):
        return None
    return [v[0] for v in found]

"""The cache's size cap: least recently used reports' entries go when CACHE_DIR grows past it.

A report's share of the cache is one unit: its table cache entries (``CACHE_DIR/tables/STEM-HASH/*``)
and, for an ``.nsys-rep``, its export (``CACHE_DIR/STEM-KEY.sqlite``, whose tables are that directory)
-- or an imported ``.qdstrm`` (``STEM-KEY.nsys-rep``).  Its last use is the newest modification time
of its entry directories (a conversion touches the entries it used; an export's own times are part of
its entries' names and are never touched).  After each conversion, when the units' allocated size
exceeds the cap (``--cache-max``, else ``NSYS2PRV_CACHE_MAX``, else ``DEFAULT_MAX``), the least
recently used units are removed until it does not -- never one this run used nor one used in the
last ``GRACE_S`` seconds (another conversion may be reading it) -- and the conversion says so.  Only
files and directories of the running user's, and only the names the caches make, are removed; nothing
is followed through a link.

The sizes are kept in a ledger (``CACHE_DIR/.size-ledger``: each export's and each report's table
group's allocated bytes, JSON), so that a conversion does not list every entry of a large cache: it
lists only ``CACHE_DIR`` and ``CACHE_DIR/tables`` (a name each), measures the groups and exports it
used and those new to the ledger, drops the vanished ones, and scans everything (as without a ledger)
only when the ledger's total is over the cap, when the ledger cannot be trusted or read, or when its
last full scan is ``RESCAN_S`` old: an entry that grew without a conversion measuring it (one that
ended before its cap was kept) is counted by then.  The ledger is read and written under ``flock``
(concurrent conversions lose no update), opened without following a link, and used only when it is
a regular file of the running user's (or root's) that no one else can write, with one link.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from nsys2prv.core.environment import environment
from nsys2prv.core.errors import UserError
from nsys2prv.core.paths import distrust
from nsys2prv.nsys.cache import ENTRY_NAME, descend_dir, entry_hash, remove_entry

DEFAULT_MAX = 20 * 2**30  # 20 GiB (docs/usage.md): an 8-rank run's exports and tables take ~1-2 GiB
GRACE_S = 120
RESCAN_S = 3600  # the ledger's sizes are trusted this long after a full scan
LEDGER = ".size-ledger"
_LEDGER_VERSION = 1
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_EXPORT = re.compile(r"(.+-[0-9a-f]{16})\.(sqlite|nsys-rep)")
_GROUP = re.compile(r".+-[0-9a-f]{16}")


def parse_size(text: str, what: str = "--cache-max") -> int:
    """``500M``, ``20G``, ``1.5T``, ``1000000`` (bytes; K/M/G/T are powers of 1024, a trailing B or iB
    allowed) -> bytes; anything else a one-line error."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise UserError(f"not a size (e.g. 500M, 20G): {text!r}", what)
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def cache_max(option: int | None) -> int:
    """The cap in bytes: the option, else ``NSYS2PRV_CACHE_MAX``, else ``DEFAULT_MAX``."""
    if option is not None:
        return option
    env = environment().cache_max
    return parse_size(env, "NSYS2PRV_CACHE_MAX") if env else DEFAULT_MAX


@dataclass
class _Unit:
    entries: list[str] = field(default_factory=list)  # entry directories in tables/NAME
    export: str | None = None  # a file in CACHE_DIR
    export_size: int = 0
    group_size: int = 0
    group: bool = False  # it has a directory in tables/
    used: float = 0.0

    @property
    def size(self) -> int:
        return self.export_size + self.group_size


def _blocks(st: os.stat_result) -> int:
    return st.st_blocks * 512


def _own(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid()


def _dir_size(fd: int, name: str) -> tuple[int, float]:
    """(allocated bytes of the regular files directly in ``name``, its modification time)."""
    dfd = descend_dir(fd, name)
    try:
        total, mtime = 0, os.fstat(dfd).st_mtime
        for f in os.listdir(dfd):
            try:
                st = os.lstat(f, dir_fd=dfd)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += _blocks(st)
        return total, mtime
    finally:
        os.close(dfd)


def touch(entries: list[Path]) -> None:
    """Mark the table cache entries ``entries`` used now (their directories' mtime; never a link)."""
    for e in entries:
        try:
            os.utime(e, follow_symlinks=False)
        except OSError:
            pass


def _export(cache_fd: int, name: str) -> os.stat_result | None:
    """The export ``name`` of ``CACHE_DIR`` when it is a regular file of the user's (counted, removable)."""
    try:
        st = os.lstat(name, dir_fd=cache_fd)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) and _own(st) else None


def _group(tables_fd: int, group: str) -> tuple[list[str], int, float] | None:
    """The entries of the table group ``group``, their allocated bytes and its last use; None for a
    group not counted (another user's, a link, gone)."""
    try:
        gfd = descend_dir(tables_fd, group)
    except OSError:
        return None  # (another user's, a link: not counted, never removed)
    try:
        entries, size, used = [], 0, os.fstat(gfd).st_mtime
        for entry in os.listdir(gfd):
            if not ENTRY_NAME.fullmatch(entry):
                continue
            try:
                n, mtime = _dir_size(gfd, entry)
            except OSError:
                continue
            entries.append(entry)
            size += n
            used = max(used, mtime)
        return entries, size, used
    finally:
        os.close(gfd)


def _tables(cache_fd: int) -> int | None:
    try:
        return descend_dir(cache_fd, "tables", True)
    except OSError:
        return None


def _units(cache_fd: int, cache_dir: Path) -> tuple[dict[str, _Unit], int | None]:
    units: dict[str, _Unit] = {}
    base = str(cache_dir.resolve())
    for name in os.listdir(cache_fd):
        m = _EXPORT.fullmatch(name)
        if not m or (st := _export(cache_fd, name)) is None:
            continue
        key = f"{m.group(1)}-{entry_hash(os.path.join(base, name))}" if m.group(2) == "sqlite" else name
        u = units.setdefault(key, _Unit())
        u.export, u.export_size, u.used = name, _blocks(st), max(u.used, st.st_mtime)
    tables_fd = _tables(cache_fd)
    if tables_fd is None:
        return units, None
    for group in os.listdir(tables_fd):
        if not _GROUP.fullmatch(group) or (g := _group(tables_fd, group)) is None:
            continue
        u = units.setdefault(group, _Unit())
        u.entries, u.group_size, u.group, u.used = g[0], g[1], True, max(u.used, g[2])
    return units, tables_fd


def _parts(units: dict[str, _Unit]) -> dict[str, int]:
    """The ledger's parts of ``units``: ``f/NAME`` an export's bytes, ``g/GROUP`` a table group's."""
    parts = {f"f/{u.export}": u.export_size for u in units.values() if u.export is not None}
    parts.update({f"g/{key}": u.group_size for key, u in units.items() if u.group})
    return parts


class _Ledger:
    """``CACHE_DIR/.size-ledger``, locked (``flock``) from opening to ``close``; ``parts`` None when
    there is none to trust (the module's docstring)."""

    def __init__(self, cache_fd: int):
        self.fd: int | None = None
        self.parts: dict[str, int] | None = None
        self.scanned = 0.0
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(LEDGER, flags, 0o600, dir_fd=cache_fd)
        except OSError:
            return  # (a link, a read-only cache: scanned in full, as without a ledger)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or distrust(st) is not None:
                os.close(fd)
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return
        self.fd = fd
        try:
            data = json.loads(os.pread(fd, max(os.fstat(fd).st_size, 1), 0))
            parts, scanned = data["parts"], data["scanned"]
            if (
                data["version"] == _LEDGER_VERSION
                and isinstance(scanned, (int, float))
                and isinstance(parts, dict)
                and all(isinstance(v, int) and v >= 0 for v in parts.values())
            ):
                self.parts, self.scanned = parts, float(scanned)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # (new, cut short, not ours to read: written again after a full scan)

    def save(self, parts: dict[str, int], scanned: float) -> None:
        if self.fd is None:
            return
        data = json.dumps({"version": _LEDGER_VERSION, "scanned": scanned, "parts": parts}).encode()
        try:
            os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        except OSError:  # (a full device): no ledger rather than a wrong one
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # (and the lock)
            self.fd = None


def _reconcile(cache_fd: int, known: dict[str, int], groups: set[str], exports: set[str]) -> dict[str, int]:
    """The ledger's parts now: those listed in ``CACHE_DIR`` and its ``tables``, each measured when
    new to ``known`` or used by this conversion (``groups``, ``exports``), else as ``known`` says."""
    parts: dict[str, int] = {}
    for name in os.listdir(cache_fd):
        if _EXPORT.fullmatch(name):
            key = f"f/{name}"
            if key in known and name not in exports:
                parts[key] = known[key]
            elif (st := _export(cache_fd, name)) is not None:
                parts[key] = _blocks(st)
    tables_fd = _tables(cache_fd)
    if tables_fd is None:
        return parts
    try:
        for group in os.listdir(tables_fd):
            if _GROUP.fullmatch(group):
                key = f"g/{group}"
                if key in known and group not in groups:
                    parts[key] = known[key]
                elif (g := _group(tables_fd, group)) is not None:
                    parts[key] = g[1]
    finally:
        os.close(tables_fd)
    return parts


def enforce(cache_dir: Path, limit: int, used_entries: list[Path], used_exports: list[Path]) -> str | None:
    """Keep ``cache_dir`` within ``limit`` bytes (see the module's docstring); what was removed, or None."""
    touch(used_entries)
    try:
        cache_fd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    ledger = _Ledger(cache_fd)
    try:
        if ledger.parts is not None and 0 <= time.time() - ledger.scanned < RESCAN_S:
            groups = {e.parent.name for e in used_entries}
            parts = _reconcile(cache_fd, ledger.parts, groups, {p.name for p in used_exports})
            if sum(parts.values()) <= limit:
                ledger.save(parts, ledger.scanned)
                return None
        scanned = time.time()
        units, note = _evict(cache_fd, cache_dir, limit, used_entries, used_exports)
        ledger.save(_parts(units), scanned)
        return note
    finally:
        ledger.close()
        os.close(cache_fd)


def _evict(
    cache_fd: int, cache_dir: Path, limit: int, used_entries: list[Path], used_exports: list[Path]
) -> tuple[dict[str, _Unit], str | None]:
    """Every unit of the cache listed; the least recently used removed while over ``limit``: the
    units left, and what was removed (None when within the cap)."""
    units, tables_fd = _units(cache_fd, cache_dir)
    try:
        total = sum(u.size for u in units.values())
        if total <= limit:
            return units, None
        keep = {e.parent.name for e in used_entries} | {p.name for p in used_exports}
        recent = time.time() - GRACE_S
        removed, freed = 0, 0
        for key, u in sorted(units.items(), key=lambda kv: kv[1].used):
            if total <= limit:
                break
            if key in keep or u.export in keep or u.used > recent:
                continue
            if u.export is not None:
                try:
                    os.unlink(u.export, dir_fd=cache_fd)
                except OSError:
                    continue
            if u.entries and tables_fd is not None:
                try:
                    gfd = descend_dir(tables_fd, key)
                except OSError:
                    gfd = None
                if gfd is not None:
                    try:
                        for entry in u.entries:
                            remove_entry(gfd, entry)
                    finally:
                        os.close(gfd)
                    try:
                        os.rmdir(key, dir_fd=tables_fd)
                    except OSError:
                        pass
            del units[key]  # (what is left of it, if anything, is new to the ledger next time: measured)
            removed, freed, total = removed + 1, freed + u.size, total - u.size
    finally:
        if tables_fd is not None:
            os.close(tables_fd)
    if not removed:
        return units, f"the cache {cache_dir} is over its cap of {_mb(limit)} (--cache-max), but every entry is in use"
    return units, (
        f"the cache {cache_dir} was over its cap of {_mb(limit)} (--cache-max): removed the {removed} least "
        f"recently used report(s)' entries ({_mb(freed)})"
    )


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"

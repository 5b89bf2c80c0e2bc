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
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from nsys2prv.core.environment import environment
from nsys2prv.core.errors import UserError
from nsys2prv.nsys.cache import ENTRY_NAME, descend_dir, entry_hash, remove_entry

DEFAULT_MAX = 20 * 2**30  # 20 GiB (docs/usage.md): an 8-rank run's exports and tables take ~1-2 GiB
GRACE_S = 120
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
    size: int = 0
    used: float = 0.0


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


def _units(cache_fd: int, cache_dir: Path) -> tuple[dict[str, _Unit], int | None]:
    units: dict[str, _Unit] = {}
    base = str(cache_dir.resolve())
    for name in os.listdir(cache_fd):
        m = _EXPORT.fullmatch(name)
        if not m:
            continue
        try:
            st = os.lstat(name, dir_fd=cache_fd)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or not _own(st):
            continue
        key = f"{m.group(1)}-{entry_hash(os.path.join(base, name))}" if m.group(2) == "sqlite" else name
        u = units.setdefault(key, _Unit())
        u.export, u.size, u.used = name, u.size + _blocks(st), max(u.used, st.st_mtime)
    try:
        tables_fd: int | None = descend_dir(cache_fd, "tables", True)
    except OSError:
        return units, None
    assert tables_fd is not None
    for group in os.listdir(tables_fd):
        if not _GROUP.fullmatch(group):
            continue
        try:
            gfd = descend_dir(tables_fd, group)
        except OSError:
            continue  # (another user's, a link: not counted, never removed)
        try:
            u = units.setdefault(group, _Unit())
            u.used = max(u.used, os.fstat(gfd).st_mtime)
            for entry in os.listdir(gfd):
                if not ENTRY_NAME.fullmatch(entry):
                    continue
                try:
                    size, mtime = _dir_size(gfd, entry)
                except OSError:
                    continue
                u.entries.append(entry)
                u.size += size
                u.used = max(u.used, mtime)
        finally:
            os.close(gfd)
    return units, tables_fd


def enforce(cache_dir: Path, limit: int, used_entries: list[Path], used_exports: list[Path]) -> str | None:
    """Keep ``cache_dir`` within ``limit`` bytes (see the module's docstring); what was removed, or None."""
    touch(used_entries)
    try:
        cache_fd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        units, tables_fd = _units(cache_fd, cache_dir)
        try:
            total = sum(u.size for u in units.values())
            if total <= limit:
                return None
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
                removed, freed, total = removed + 1, freed + u.size, total - u.size
        finally:
            if tables_fd is not None:
                os.close(tables_fd)
    finally:
        os.close(cache_fd)
    if not removed:
        return f"the cache {cache_dir} is over its cap of {_mb(limit)} (--cache-max), but every entry is in use"
    return (
        f"the cache {cache_dir} was over its cap of {_mb(limit)} (--cache-max): removed the {removed} least "
        f"recently used report(s)' entries ({_mb(freed)})"
    )


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"

"""Turn inputs into SQLite exports: ``.sqlite`` as is, ``.nsys-rep`` through ``nsys export``.

The user's files are never modified: an up-to-date ``REPORT.sqlite`` beside the
report is reused read-only; otherwise the export goes to a cache directory
(``--cache-dir``, else ``$XDG_CACHE_HOME/nsys2prv``) under a name derived from the
report's path, size and mtime, and is reused while it is newer than the report.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from nsys2prv.core.errors import UserError
from nsys2prv.core.paths import user_cache_dir

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
INSTALL_HINT = ("install Nsight Systems (e.g. Debian's 'nsight-systems' package, or NVIDIA's installer) "
                "and put 'nsys' on PATH or set NSYS_HOME to its install directory")


def find_nsys() -> str | None:
    home = os.environ.get("NSYS_HOME")
    if home:
        for rel in ("bin/nsys", "nsys", "host-linux-x64/nsys", "target-linux-x64/nsys"):
            cand = Path(home) / rel
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return shutil.which("nsys")


def default_cache_dir() -> Path:
    return user_cache_dir()


def cached_export_path(report: Path, cache_dir: Path) -> Path:
    st = report.stat()
    key = hashlib.sha256(f"{report.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_dir / f"{report.stem}-{key}.sqlite"


def _fresh(sqlite: Path, report: Path) -> bool:
    return sqlite.is_file() and sqlite.stat().st_mtime_ns >= report.stat().st_mtime_ns


def _supports_tables(nsys: str) -> bool:
    try:
        help_text = subprocess.run([nsys, "export", "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "--tables" in help_text


def export_report(report: Path, cache_dir: Path | None = None, force: bool = False,
                  tables: tuple[str, ...] = ()) -> Path:
    """The SQLite export of ``report`` (an .nsys-rep), exporting it when needed."""
    if not report.exists():
        raise UserError("file not found", str(report))
    beside = report.with_suffix(".sqlite")
    if not force and _fresh(beside, report):
        return beside
    cache_dir = cache_dir or default_cache_dir()
    target = cached_export_path(report, cache_dir)
    if not force and _fresh(target, report):
        return target
    nsys = find_nsys()
    if nsys is None:
        raise UserError(f"cannot read .nsys-rep: 'nsys' was not found; {INSTALL_HINT} "
                        "(or pass the .sqlite made with 'nsys export --type sqlite')", str(report))
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the export cache directory ({exc.strerror})", str(cache_dir)) from None
    tmp = target.with_name(f".tmp{os.getpid()}-{target.name}")  # nsys keeps a .sqlite suffix
    base_cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(tmp)]
    attempts = []
    if tables and _supports_tables(nsys):
        attempts.append(base_cmd + ["--tables", ",".join(tables), str(report)])
    attempts.append(base_cmd + [str(report)])
    err = ""
    try:
        for cmd in attempts:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode == 0 and tmp.is_file():
                os.replace(tmp, target)
                return target
            err = (proc.stderr or proc.stdout or "").strip().splitlines()
            err = err[-1] if err else f"exit code {proc.returncode}"
    finally:
        if tmp.exists():
            tmp.unlink()
    raise UserError(f"'nsys export' failed ({err}); the report may need a newer Nsight Systems "
                    f"than {nsys}", str(report))


def resolve_input(path: Path, cache_dir: Path | None, force: bool, tables: tuple[str, ...]) -> Path:
    """The SQLite file to read for one input path."""
    if not path.exists():
        raise UserError("file not found", str(path))
    if path.suffix in REPORT_SUFFIXES:
        return export_report(path, cache_dir, force, tables)
    return path

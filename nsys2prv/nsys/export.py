"""Turn inputs into SQLite exports: ``.sqlite`` as is, ``.nsys-rep`` through ``nsys export``, ``.qdstrm``
(what ``nsys profile`` leaves when it cannot find its importer) through ``QdstrmImporter`` first.

The user's files are never modified: an up-to-date ``REPORT.sqlite`` beside the
report is reused read-only -- when it belongs to the running user (or root) and no one else can write
it (a report's folder may be shared: another user's file there is ignored, and said); otherwise the
export goes to a cache directory (``--cache-dir``, else ``$XDG_CACHE_HOME/nsys2prv``) under a name
derived from the report's path and identity (device, inode, size, mtime and ctime: a report replaced
by another of the same size and mtime gets a new name), and is reused while it is newer than the
report and trusted as the one beside it.  ``nsys export`` writes into a private directory made for
it (``mkdtemp``: 0700, a new name) and the export is renamed into the cache from there.  A
``.qdstrm`` is copied into the cache and the copy imported (the importer rewrites its input), once.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from nsys2prv.core.errors import UserError
from nsys2prv.core.paths import distrust, user_cache_dir

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
QDSTRM_SUFFIX = ".qdstrm"
SQLITE_MAGIC = b"SQLite format 3\x00"
IMPORTER = "QdstrmImporter"
BESIDE = "beside the report not used as its export"  # (beside_note)
INSTALL_HINT = (
    "install Nsight Systems (e.g. Debian's 'nsight-systems' package, or NVIDIA's installer) "
    "and put 'nsys' on PATH or set NSYS_HOME to its install directory"
)


def find_nsys() -> str | None:
    home = os.environ.get("NSYS_HOME")
    if home:
        for rel in ("bin/nsys", "nsys", "host-linux-x64/nsys", "target-linux-x64/nsys"):
            cand = Path(home) / rel
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return shutil.which("nsys")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_importer(nsys: str | None) -> str | None:
    """QdstrmImporter: ``NSYS2PRV_IMPORTER`` (only it), else beside every link of the ``nsys`` path
    (``bin/../host-linux-x64``: NVIDIA's layout, Debian's ``/usr/lib/nsight-systems/bin``), in
    ``NSYS_HOME``, in the usual install places."""
    env = os.environ.get("NSYS2PRV_IMPORTER")
    if env:
        return env if _executable(Path(env)) else None
    cands: list[Path] = []
    if nsys:
        p = Path(nsys)
        for _ in range(8):
            d = p.parent
            cands += [d.parent / "host-linux-x64", d / "host-linux-x64", d]
            if not p.is_symlink():
                break
            p = d / os.readlink(p)
    home = os.environ.get("NSYS_HOME")
    if home:
        cands += [Path(home) / "host-linux-x64", Path(home)]
    cands.append(Path("/usr/lib/nsight-systems/host-linux-x64"))
    for root, pattern in (
        ("/opt/nvidia/nsight-systems", "*/host-linux-x64"),
        ("/usr/local/cuda", "nsight-systems*/host-linux-x64"),
    ):
        cands += sorted(Path(root).glob(pattern), reverse=True)  # the newest version first
    return next((str(d / IMPORTER) for d in cands if _executable(d / IMPORTER)), None)


def default_cache_dir() -> Path:
    return user_cache_dir()


def cached_export_path(report: Path, cache_dir: Path) -> Path:
    st = report.stat()
    ident = f"{report.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_dev}|{st.st_ino}|{st.st_ctime_ns}"
    key = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return cache_dir / f"{report.stem}-{key}.sqlite"


def _fresh(sqlite: Path, report: Path) -> bool:
    """``sqlite`` is a regular file (not a link) at least as new as ``report`` and trusted (``distrust``)."""
    try:
        st = os.lstat(sqlite)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_mtime_ns >= report.stat().st_mtime_ns and distrust(st) is None


def beside_note(report: Path) -> str | None:
    """What to say when a ``REPORT.sqlite`` beside an ``.nsys-rep`` was not taken as its export (another
    user's, or writable by others), else None."""
    if report.suffix not in REPORT_SUFFIXES:
        return None
    beside = report.with_suffix(".sqlite")
    try:
        st = os.lstat(beside)
    except OSError:
        return None
    why = distrust(st) if stat.S_ISREG(st.st_mode) else "not a regular file"
    return None if why is None else f"{beside.name} {BESIDE} ({why})"


def check_input(path: Path) -> None:
    """The input exists (a symbolic link loop named as one: ELOOP), else a one-line ``UserError``."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError("a symbolic link loop (ELOOP: too many levels of symbolic links)", str(path)) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise UserError("file not found", str(path)) from None
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None


def _supports_tables(nsys: str) -> bool:
    try:
        help_text = subprocess.run([nsys, "export", "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "--tables" in help_text


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096)
    except OSError as exc:
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None


def _is_text(head: bytes) -> bool:
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def import_qdstrm(qdstrm: Path, cache_dir: Path | None = None, force: bool = False) -> Path:
    """The ``.nsys-rep`` of ``qdstrm``, imported into the cache with QdstrmImporter when needed."""
    cache_dir = cache_dir or default_cache_dir()
    target = cached_export_path(qdstrm, cache_dir).with_suffix(".nsys-rep")
    if not force and _fresh(target, qdstrm):
        return target
    by_hand = f"{IMPORTER} -i {qdstrm} -o {qdstrm.with_suffix('.nsys-rep')}"
    importer = find_importer(find_nsys())
    if importer is None:
        raise UserError(
            f"a .qdstrm must be imported into a .nsys-rep first and {IMPORTER} was not found (it is in "
            f"the host-linux-x64 directory of Nsight Systems; set NSYS2PRV_IMPORTER or NSYS_HOME), "
            f"or import it yourself: {by_hand}",
            str(qdstrm),
        )
    if _is_text(_head(qdstrm)):
        raise UserError("not a .qdstrm written by 'nsys profile': a text file", str(qdstrm))
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".import-", dir=cache_dir))
    except OSError as exc:
        raise UserError(f"cannot create the export cache directory ({exc.strerror})", str(cache_dir)) from None
    try:
        copy, out = work / f"in{QDSTRM_SUFFIX}", work / "out.nsys-rep"
        shutil.copyfile(qdstrm, copy)  # the importer rewrites its input: never the user's
        proc = subprocess.run(
            [importer, "-i", str(copy), "-o", str(out), "-f"], cwd=work, capture_output=True, text=True
        )
        if proc.returncode != 0 or not out.is_file():
            err = (proc.stderr or proc.stdout or "").strip().splitlines()
            raise UserError(
                f"importing failed ({err[-1] if err else f'exit code {proc.returncode}'}): {importer} -i {qdstrm}",
                str(qdstrm),
            )
        os.replace(out, target)
    except OSError as exc:
        raise UserError(f"cannot import into the cache ({exc.strerror})", str(cache_dir)) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def export_report(
    report: Path, cache_dir: Path | None = None, force: bool = False, tables: tuple[str, ...] = ()
) -> Path:
    """The SQLite export of ``report`` (an .nsys-rep), exporting it when needed."""
    check_input(report)
    head = _head(report)
    if head.startswith(SQLITE_MAGIC):
        return report  # an export named like a report: read as it is
    if _is_text(head):
        raise UserError(
            f"not a Nsight Systems report: a text file (a {report.suffix} is the binary file 'nsys profile' writes)",
            str(report),
        )
    beside = report.with_suffix(".sqlite")
    if not force and _fresh(beside, report):
        return beside
    cache_dir = cache_dir or default_cache_dir()
    target = cached_export_path(report, cache_dir)
    if not force and _fresh(target, report):
        return target
    nsys = find_nsys()
    if nsys is None:
        ignored = beside_note(report)
        raise UserError(
            f"cannot read .nsys-rep: 'nsys' was not found; {INSTALL_HINT} "
            "(or pass the .sqlite made with 'nsys export --type sqlite')" + (f"; {ignored}" if ignored else ""),
            str(report),
        )
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # nsys writes into a directory of its own (mkdtemp: 0700, a new name), never at a name in the
        # shared cache directory that someone else could have planted
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=cache_dir))
    except OSError as exc:
        raise UserError(f"cannot create the export cache directory ({exc.strerror})", str(cache_dir)) from None
    tmp = work / target.name  # nsys keeps a .sqlite suffix
    base_cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(tmp)]
    attempts = []
    if tables and _supports_tables(nsys):
        attempts.append(base_cmd + ["--tables", ",".join(tables), str(report)])
    attempts.append(base_cmd + [str(report)])
    err = ""
    try:
        for cmd in attempts:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode == 0 and tmp.is_file() and not tmp.is_symlink():
                _move_into_cache(work, tmp.name, cache_dir, target.name)
                return target
            said = (proc.stderr or proc.stdout or "").strip().splitlines()
            err = said[-1] if said else f"exit code {proc.returncode}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not head.startswith(b"NVIDIA"):
        raise UserError(f"not a Nsight Systems report ('nsys export' cannot read it: {err})", str(report))
    raise UserError(
        f"'nsys export' failed ({err}); the report may be damaged or need a newer Nsight Systems than {nsys}",
        str(report),
    )


def _move_into_cache(work: Path, name: str, cache_dir: Path, dest: str) -> None:
    """``work/name`` renamed to ``cache_dir/dest`` relative to the two directories' descriptors (``work``
    opened without following a link); a file of another user's at ``dest`` that cannot be replaced is
    a one-line error naming its owner."""
    sfd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        dfd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # (the user's to choose)
        try:
            try:
                os.replace(name, dest, src_dir_fd=sfd, dst_dir_fd=dfd)
            except OSError as exc:
                try:
                    why = distrust(os.lstat(dest, dir_fd=dfd)) or exc.strerror
                except OSError:
                    why = exc.strerror
                raise UserError(
                    f"cannot store the export in the cache ({why}): choose another --cache-dir", str(cache_dir / dest)
                ) from None
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)


def resolve_input(path: Path, cache_dir: Path | None, force: bool, tables: tuple[str, ...]) -> Path:
    """The SQLite file to read for one input path."""
    check_input(path)
    if path.suffix in REPORT_SUFFIXES:
        return export_report(path, cache_dir, force, tables)
    if path.suffix == QDSTRM_SUFFIX:
        return export_report(import_qdstrm(path, cache_dir, force), cache_dir, force, tables)
    return path

"""The output set of a conversion as one unit.

Every file of a run (trace, .pcf, .row, summary, sync, POP tables, views) is written into a hidden
staging directory beside OUT (``.OUT.out<pid>``, which also holds the per-report work files) and moved
into place only when all of them are complete; a failed or interrupted run leaves the previous outputs
as they were.  A lock file (``.OUT.lock``, flock) keeps two runs from writing one OUT at once: the second
refuses with one line.  Staging directories and work files of dead runs are removed by the next run on
the same OUT (and said in its notes).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import resource
import shutil
import stat
from pathlib import Path

from nsys2prv.core.errors import UserError

INPUT_SUFFIXES = (".sqlite", ".nsys-rep", ".qdrep", ".qdstrm")
# what one run writes next to OUT, by suffix (the views go to --cfgs DIR)
SUFFIXES = (".prv", ".prv.gz", ".pcf", ".row", ".summary.json", ".sync.json", ".pop.json", ".pop.csv", ".pop.md",
            ".pop.tex", ".pop.png", ".pop.iterations.csv", ".gpu_metrics.csv")


def check_not_an_input(out: Path) -> None:
    """OUT must be a base name, not one of the inputs (``-m r0.sqlite r1.sqlite r2.sqlite`` forgets it)
    nor a directory (``outdir`` would write ``outdir.prv`` beside it, ``/tmp`` ``/tmp.prv`` into ``/``)."""
    if out.name in ("", ".", "..") or out.is_dir():
        raise UserError("is a directory: OUT is the base name of the output files, not where they go "
                        "(e.g. DIR/trace writes DIR/trace.prv)", str(out) or '""')
    if out.name.lower().endswith(INPUT_SUFFIXES) or out.is_file():
        raise UserError("looks like an input report, not an output base name: the last argument is where the "
                        "trace goes (add one, e.g. out/trace)", str(out))


def write_error_cause(exc: OSError, where: Path) -> str:
    """What an OSError of a failed write says, with its cause: a short write reported without errno
    (numpy's ``N requested and M written``) is explained from the file system of ``where`` (no space
    left, the quota) or the process's file size limit."""
    if exc.errno is not None or exc.strerror:
        return exc.strerror or str(exc)
    text = str(exc)
    cause = None
    try:
        st = os.statvfs(where)
        if st.f_bavail * st.f_frsize < (1 << 20) or (st.f_favail == 0 and st.f_files):
            cause = os.strerror(errno.ENOSPC)
    except OSError:
        pass
    if cause is None:
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY:
            cause = f"{os.strerror(errno.EFBIG)}: the file size limit is {soft} bytes (ulimit -f)"
    if cause is None:
        cause = "a short write: no space left on the device, a disk quota or a file size limit"
    return f"{cause}; {text}" if text else cause


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _open_lock(path: Path) -> int:
    """The lock file, created 0600 if absent, never through a symbolic link (O_NOFOLLOW), and only a
    regular file of one link (a FIFO would block, a hard link to another file would be truncated)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError("the lock file is a symbolic link (not followed: remove it if it is not yours)",
                            str(path)) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UserError("the lock file is not a plain file of this run's making (a FIFO, a device or a hard "
                        "link): remove it if it is not yours", str(path))
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _read_small(fd: int) -> str:
    try:
        return os.pread(fd, 64, 0).decode("ascii", "replace")
    except OSError:
        return ""


class OutputSet:
    def __init__(self, out: Path, cfgs: Path | None):
        self.out, self.cfgs = out, cfgs
        self.dir = out.parent
        self.stage = self.dir / f".{out.name}.out{os.getpid()}"
        self.staged = self.stage / out.name
        self.staged_cfgs = self.stage / "cfgs" if cfgs is not None else None
        self.work = self.stage / "work"
        self.notes: list[str] = []
        self._lock = None

    # -- before the work ---------------------------------------------------------------------------
    def open(self) -> "OutputSet":
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._take_lock()
            self._clean_stale()
            self._check_destinations()
            self.stage.mkdir()
            self.work.mkdir()
        except OSError as exc:
            self.close()
            raise UserError(f"cannot write the output there ({exc.strerror})", str(exc.filename or self.dir)) \
                from None
        except BaseException:
            self.close()
            raise
        return self

    def _lock_path(self) -> Path:
        return self.dir / f".{self.out.name}.lock"

    def _take_lock(self) -> None:
        """flock on ``.OUT.lock``: opened without following a link (a planted one is refused, never
        written through), created 0600; after the flock the name must still be that file (a run that
        released it unlinked it: then open the new one)."""
        path = self._lock_path()
        for _ in range(20):
            fd = _open_lock(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = re.sub(r"\D", "", _read_small(fd))[:12] or "?"
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise UserError(f"another nsys2prv (pid {holder}) is writing this output; wait for it or "
                                    "choose another OUT", str(self.out)) from None
                raise
            if _same_file(fd, path):
                break
            os.close(fd)                # an orphaned inode (unlinked by the run that released it): again
        else:
            raise UserError("the lock file keeps changing under this run; another nsys2prv is starting on "
                            "this OUT", str(path))
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock = fd

    def _clean_stale(self) -> None:
        """Temporaries of runs on this OUT whose process is gone (we hold the lock: none is running)."""
        pattern = re.compile(re.escape(f".{self.out.name}.") + r"(?:out|work|prv\.tmp|pcf\.tmp|row\.tmp|prv\.gz\.tmp)"
                             r"(\d+)$")
        removed = []
        for p in self.dir.iterdir():
            m = pattern.match(p.name)
            if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(p.name)
        if removed:
            self.notes.append(f"removed {len(removed)} temporary file(s) of an interrupted earlier run: "
                              + ", ".join(sorted(removed)[:4]) + (" ..." if len(removed) > 4 else ""))

    def _check_destinations(self) -> None:
        for suffix in SUFFIXES:
            p = self.out.with_name(self.out.name + suffix)
            if p.is_dir():
                raise UserError("is a directory: the output would replace it", str(p))
        if self.cfgs is not None:
            if self.cfgs.exists() and not self.cfgs.is_dir():
                raise UserError("--cfgs needs a directory, and this is a file", str(self.cfgs))
            self.cfgs.mkdir(parents=True, exist_ok=True)

    # -- after the work ----------------------------------------------------------------------------
    def final_path(self, path: str | Path) -> str:
        """Where a staged path will be once committed."""
        p = str(path)
        if self.staged_cfgs is not None and p.startswith(str(self.staged_cfgs)):
            return str(self.cfgs) + p[len(str(self.staged_cfgs)):]
        if p.startswith(str(self.stage) + os.sep):
            return str(self.dir / p[len(str(self.stage)) + 1:])
        return p

    def commit(self) -> None:
        """Move every staged file into place (views into --cfgs DIR), then drop the staging directory."""
        try:
            if self.staged_cfgs is not None and self.staged_cfgs.is_dir():
                for src in sorted(self.staged_cfgs.rglob("*")):
                    dest = self.cfgs / src.relative_to(self.staged_cfgs)
                    if src.is_dir():
                        dest.mkdir(parents=True, exist_ok=True)
                    else:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(src, dest)
            written = set()
            for src in sorted(self.stage.iterdir()):
                if src.is_file():
                    os.replace(src, self.dir / src.name)
                    written.add(src.name)
            for suffix in SUFFIXES:     # what an earlier run wrote and this one did not (OUT.prv.gz, ...)
                old = self.out.with_name(self.out.name + suffix)
                if old.name not in written and old.is_file():
                    old.unlink()
        except OSError as exc:
            raise UserError(f"cannot move the outputs into place ({exc.strerror})", str(exc.filename or self.dir)) \
                from None

    def close(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)
        if self._lock is not None:
            try:            # still holding the flock: only our own file (never a link planted since)
                if _same_file(self._lock, self._lock_path()):
                    os.unlink(self._lock_path())
            except OSError:
                pass
            os.close(self._lock)
            self._lock = None

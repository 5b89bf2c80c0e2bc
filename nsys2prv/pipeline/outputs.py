"""The output set of a conversion as one unit.

Every file of a run (trace, .pcf, .row, summary, sync, POP tables, views) is written into a hidden
staging directory beside OUT (``.OUT.out<pid>.<random>``, made with ``mkdtemp``: 0700, never an
existing name; it also holds the per-report work files) and moved into place only when all of them are
complete; a failed or interrupted run leaves the previous outputs as they were.  The moves are one step:
signals wait until they are done, and a manifest written before them lets the next run on OUT complete
them after a SIGKILL.  A lock file (``.OUT.lock``, flock) keeps two runs from writing one OUT at once: the second
refuses with one line.  Staging directories and work files of dead runs are removed by the next run on
the same OUT (and said in its notes).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import resource
import shutil
import signal
import stat
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from nsys2prv.core.errors import UserError

INPUT_SUFFIXES = (".sqlite", ".nsys-rep", ".qdrep", ".qdstrm")
# what one run writes next to OUT, by suffix (the views go to --cfgs DIR)
SUFFIXES = (
    ".prv",
    ".prv.gz",
    ".pcf",
    ".row",
    ".summary.json",
    ".sync.json",
    ".pop.json",
    ".pop.csv",
    ".pop.md",
    ".pop.tex",
    ".pop.png",
    ".pop.iterations.csv",
    ".gpu_metrics.csv",
)


def check_not_an_input(out: Path) -> None:
    """OUT must be a base name, not one of the inputs (``-m r0.sqlite r1.sqlite r2.sqlite`` forgets it)
    nor a directory (``outdir`` would write ``outdir.prv`` beside it, ``/tmp`` ``/tmp.prv`` into ``/``)."""
    if out.name in ("", ".", "..") or out.is_dir():
        raise UserError(
            "is a directory: OUT is the base name of the output files, not where they go "
            "(e.g. DIR/trace writes DIR/trace.prv)",
            str(out) or '""',
        )
    if out.name.lower().endswith(INPUT_SUFFIXES) or out.is_file():
        raise UserError(
            "looks like an input report, not an output base name: the last argument is where the "
            "trace goes (add one, e.g. out/trace)",
            str(out),
        )


COMMIT = ".commit.json"  # in a staging directory: the moves of a commit under way
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _signals_held():
    """SIGINT, SIGTERM and SIGHUP only recorded for the block (their handlers replaced: Python runs
    them in the main thread whichever thread the kernel delivers to -- a signal mask would not hold
    in a process with other threads); yields the list of those that arrived."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    old = {sig: signal.signal(sig, lambda signum, _frame: held.append(int(signum))) for sig in HELD}
    try:
        yield held
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


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
            raise UserError(
                "the lock file is a symbolic link (not followed: remove it if it is not yours)", str(path)
            ) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UserError(
            "the lock file is not a plain file of this run's making (a FIFO, a device or a hard "
            "link): remove it if it is not yours",
            str(path),
        )
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
        self._set_stage(self.dir / f".{out.name}.out{os.getpid()}")  # (the real one: open())
        self.notes: list[str] = []
        self._lock: int | None = None  # the held lock file's descriptor
        self._made_stage = False

    def _set_stage(self, stage: Path) -> None:
        self.stage = stage
        self.staged = self.stage / self.out.name
        self.staged_cfgs = self.stage / "cfgs" if self.cfgs is not None else None
        self.work = self.stage / "work"

    # -- before the work ---------------------------------------------------------------------------
    def open(self) -> "OutputSet":
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._take_lock()
            self._clean_stale()
            self._check_destinations()
            # a new directory of a random name (0700, never an existing one or a planted link)
            self._set_stage(Path(tempfile.mkdtemp(prefix=f".{self.out.name}.out{os.getpid()}.", dir=self.dir)))
            self._made_stage = True
            self.work.mkdir()
        except OSError as exc:
            self.close()
            raise UserError(f"cannot write the output there ({exc.strerror})", str(exc.filename or self.dir)) from None
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
                    raise UserError(
                        f"another nsys2prv (pid {holder}) is writing this output; wait for it or choose another OUT",
                        str(self.out),
                    ) from None
                raise
            if _same_file(fd, path):
                break
            os.close(fd)  # an orphaned inode (unlinked by the run that released it): again
        else:
            raise UserError(
                "the lock file keeps changing under this run; another nsys2prv is starting on this OUT", str(path)
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock = fd

    def _clean_stale(self) -> None:
        """Temporaries of runs on this OUT whose process is gone (we hold the lock: none is running).
        A staging directory holding a commit manifest was stopped while moving its outputs into place:
        that move is completed first.  Nothing is followed through a link (a link is removed)."""
        pattern = re.compile(
            re.escape(f".{self.out.name}.") + r"(?:out|work|prv\.tmp|pcf\.tmp|row\.tmp|prv\.gz\.tmp)"
            r"(\d+)(?:\.[A-Za-z0-9_]+)?$"
        )
        removed, completed = [], []
        for p in self.dir.iterdir():
            m = pattern.match(p.name)
            if not m or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_uid == os.getuid() and (p / COMMIT).is_file() and not (p / COMMIT).is_symlink():
                    completed += self._complete(p)
                shutil.rmtree(p, ignore_errors=True)  # (never through a link: rmtree refuses them)
            else:
                try:
                    p.unlink()
                except OSError:
                    continue
            removed.append(p.name)
        if completed:
            self.notes.append(
                "completed the moving into place of an interrupted earlier run's outputs: "
                + ", ".join(sorted(completed)[:4])
                + (" ..." if len(completed) > 4 else "")
            )
        if removed:
            self.notes.append(
                f"removed {len(removed)} temporary file(s) of an interrupted earlier run: "
                + ", ".join(sorted(removed)[:4])
                + (" ..." if len(removed) > 4 else "")
            )

    def _complete(self, stage: Path) -> list[str]:
        """Finish the commit of a dead run from its manifest (names checked: only this OUT's files)."""
        try:
            plan = json.loads((stage / COMMIT).read_text(encoding="utf-8"))
            files, obsolete = list(plan["files"]), list(plan["obsolete"])
            cfgs, cfg_files = plan.get("cfgs"), list(plan.get("cfg_files", []))
        except (OSError, ValueError, KeyError, TypeError):
            return []
        names = {self.out.name + sfx for sfx in SUFFIXES}
        if not all(isinstance(n, str) and n in names for n in files + obsolete):
            return []
        cfg_dir = self.cfgs
        if cfg_dir is None or (cfgs is not None and str(cfg_dir) != cfgs):
            cfg_moves = []  # (no --cfgs DIR, or its views went elsewhere: not this run's to finish)
        else:  # (staged view, its place in --cfgs DIR)
            cfg_moves = [
                (stage / "cfgs" / rel, cfg_dir / rel)
                for rel in cfg_files
                if isinstance(rel, str) and not rel.startswith("/") and ".." not in Path(rel).parts
            ]
        done = []
        try:
            for src, dest in cfg_moves:
                if src.is_file() and not src.is_symlink():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, dest)
            for name in files:
                src = stage / name
                if src.is_file() and not src.is_symlink():
                    os.replace(src, self.dir / name)
                    done.append(name)
            for name in obsolete:
                old = self.dir / name
                if old.is_file() and not old.is_symlink():
                    old.unlink()
        except OSError:
            pass
        return done

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
            return str(self.cfgs) + p[len(str(self.staged_cfgs)) :]
        if p.startswith(str(self.stage) + os.sep):
            return str(self.dir / p[len(str(self.stage)) + 1 :])
        return p

    def commit(self) -> None:
        """Move every staged file into place (views into --cfgs DIR), then drop the staging directory.
        One step as far as signals go: a manifest of the moves is written first (a run killed during
        them is completed by the next run on this OUT), and SIGINT/SIGTERM/SIGHUP are only noted until
        every file is in place (then the command stops, saying that the new outputs are complete)."""
        try:
            cfg_files: list[str] = []
            cfg_moves: list[tuple[Path, Path]] = []  # (staged view, its place in --cfgs DIR)
            if self.cfgs is not None and self.staged_cfgs is not None and self.staged_cfgs.is_dir():
                cfg_files = [
                    str(p.relative_to(self.staged_cfgs)) for p in sorted(self.staged_cfgs.rglob("*")) if p.is_file()
                ]
                cfg_moves = [(self.staged_cfgs / rel, self.cfgs / rel) for rel in cfg_files]
            files = sorted(p.name for p in self.stage.iterdir() if p.is_file() and p.name != COMMIT)
            # what an earlier run wrote and this one did not (OUT.prv.gz, ...)
            obsolete = [self.out.name + sfx for sfx in SUFFIXES if self.out.name + sfx not in files]
            plan = {
                "files": files,
                "obsolete": obsolete,
                "cfgs": str(self.cfgs) if self.cfgs else None,
                "cfg_files": cfg_files,
            }
            tmp = self.stage / (COMMIT + ".tmp")
            tmp.write_text(json.dumps(plan), encoding="utf-8")
            os.replace(tmp, self.stage / COMMIT)
            with _signals_held() as held:
                for src, dest in cfg_moves:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, dest)
                for name in files:
                    os.replace(self.stage / name, self.dir / name)
                for name in obsolete:
                    old = self.dir / name
                    if old.is_file() and not old.is_symlink():
                        old.unlink()
                (self.stage / COMMIT).unlink()
        except OSError as exc:
            raise UserError(
                f"cannot move the outputs into place ({exc.strerror})", str(exc.filename or self.dir)
            ) from None
        if held:
            name = signal.Signals(held[0]).name
            self.close()
            print(
                f"nsys2prv: stopped by {name} while the outputs were moved into place: they are complete",
                file=sys.stderr,
            )
            raise SystemExit(128 + held[0])

    def close(self) -> None:
        if self._made_stage:
            shutil.rmtree(self.stage, ignore_errors=True)
            self._made_stage = False
        if self._lock is not None:
            try:  # still holding the flock: only our own file (never a link planted since)
                if _same_file(self._lock, self._lock_path()):
                    os.unlink(self._lock_path())
            except OSError:
                pass
            os.close(self._lock)
            self._lock = None

"""The output set of a conversion as one unit.

Every file of a run (trace, .pcf, .row, summary, sync, POP tables, views) is written into a hidden
staging directory beside OUT (``.OUT.out<pid>.<random>``, made with ``mkdtemp``: 0700, never an
existing name; it also holds the per-report work files) and moved into place only when all of them are
complete; a failed or interrupted run leaves the previous outputs as they were.  The moves are one step:
signals wait until they are done, and a manifest written before them lets the next run on OUT complete
them after a SIGKILL.  The moves are ``renameat`` calls between directory descriptors (a file already
at an output's name is swapped with the new one, ``renameat2(RENAME_EXCHANGE)``, and freed with the
staging directory by a thread: the manifest names the new files' inodes, so that a run completing
the moves never moves an old file back): every subdirectory of ``--cfgs DIR`` is opened (or made)
with ``O_NOFOLLOW | O_DIRECTORY``, never through a symbolic link someone planted at its name; each
destination is checked again just before the moves (a directory there: nothing is moved), and a move
that still fails half-way keeps the staging directory and its manifest, says that the set is mixed,
and the next run on OUT completes it.  A lock file
(``.OUT.lock``, flock) keeps two runs from writing one OUT at once: the second refuses with one line; a
lock file of another user's (or one others can write) is refused, naming its owner.  Staging directories
and work files of dead runs are removed by the next run on the same OUT (and said in its notes).
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
from pathlib import Path

from nsys2prv.core.dirs import descend, exchange, open_dir, opened, rel_parts, remove_later, subdir, wait_removed
from nsys2prv.core.errors import UserError, signals_recorded
from nsys2prv.core.paths import distrust

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


def write_error_cause(exc: OSError, where: Path) -> str:
    """What an OSError of a failed write says, with its cause, and not the file's name (the caller
    names where): a short write reported without errno (numpy's ``N requested and M written``) is
    explained from the file system of ``where`` (no space left, the quota) or the process's file size
    limit."""
    if exc.errno is not None or exc.strerror:
        return exc.strerror or str(exc)
    # (its message as raised: a name set on it since, as ``writes.save_array`` does, would make it
    # "[Errno None] None: 'name'")
    text = str(exc.args[0]) if len(exc.args) == 1 else str(exc)
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
    why = distrust(st)
    if why is not None:
        os.close(fd)
        raise UserError(f"the lock file is {why}: not used (its owner can remove it; or choose another OUT)", str(path))
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


def _is_file_at(fd: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def _check_destination(fd: int, name: str, label: str) -> os.stat_result | None:
    """A move's destination can be replaced: absent (None), or not a directory (its ``lstat``: a link
    there is replaced, not followed); else ``IsADirectoryError`` naming it."""
    try:
        st = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory: the output would replace it", label)
    return st


def _move(src: str, dst: str, src_dir_fd: int, dst_dir_fd: int) -> None:
    """The staged file ``src`` into place at ``dst``.  A file (or link) there is swapped with it
    (``dirs.exchange``: the name is never absent, and the old file goes into the staging directory,
    removed off the critical path with it) rather than replaced: replacing a file by ``rename`` makes
    ext4 write the new file's data out at once and free the old one's blocks within the call
    (0.03-0.14 s of wall time for a 116 MB trace).  An absent destination (or a system without the
    swap) is a plain ``rename``; a directory there is never replaced (``IsADirectoryError``)."""
    st = _check_destination(dst_dir_fd, dst, dst)
    if st is None or not exchange(src_dir_fd, src, dst_dir_fd, dst):
        os.replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        return
    back = os.lstat(src, dir_fd=src_dir_fd)
    if (back.st_dev, back.st_ino, stat.S_IFMT(back.st_mode)) != (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)):
        # (replaced between the lstat and the swap; the type too: a number may be reused at once)
        exchange(src_dir_fd, src, dst_dir_fd, dst)  # (undone: a directory there is never taken)
        raise OSError(errno.EBUSY, "changed while the output was moved into place", dst)


def _inode(fd: int, name: str) -> list[int]:
    st = os.lstat(name, dir_fd=fd)
    return [st.st_dev, st.st_ino]


def _remove_obsolete(fd: int, names: list[str]) -> None:
    """The files of ``names`` in ``fd`` (regular files only: a link or directory there stays)."""
    for name in names:
        if _is_file_at(fd, name):
            os.unlink(name, dir_fd=fd)


class OutputSet:
    def __init__(self, out: Path, cfgs: Path | None):
        self.out, self.cfgs = out, cfgs
        self.dir = out.parent
        self._set_stage(self.dir / f".{out.name}.out{os.getpid()}")  # (the real one: open())
        self.notes: list[str] = []
        self._lock: int | None = None  # the held lock file's descriptor
        self._made_stage = False
        self._committed = False  # every file moved into place: the staging directory holds only what goes
        self._unfinished: list[Path] = []  # dead runs' staging directories whose commit could not be completed

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
                    done, failed = self._complete(p)
                    completed += done
                    if failed:  # kept (its manifest too) until this run's own set is in place
                        self._unfinished.append(p)
                        self.notes.append(
                            f"an interrupted earlier run's outputs are a mixed set and could not be completed "
                            f"({failed}); this run's outputs replace them"
                        )
                        continue
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

    def _complete(self, stage: Path) -> tuple[list[str], str | None]:
        """Finish the commit of a dead run from its manifest (names checked: only this OUT's files);
        (the files moved, why the rest could not be or None)."""
        try:
            plan = json.loads((stage / COMMIT).read_text(encoding="utf-8"))
            files, obsolete = list(plan["files"]), list(plan["obsolete"])
            cfgs, cfg_files = plan.get("cfgs"), list(plan.get("cfg_files", []))
            inodes = dict(plan.get("inodes", {}))
        except (OSError, ValueError, KeyError, TypeError):
            return [], None
        names = {self.out.name + sfx for sfx in SUFFIXES}
        if not all(isinstance(n, str) and n in names for n in files + obsolete):
            return [], None
        if self.cfgs is None or (cfgs is not None and str(self.cfgs) != cfgs):
            cfg_files = []  # (no --cfgs DIR, or its views went elsewhere: not this run's to finish)
        done: list[str] = []
        try:
            with opened(open_dir(self.dir)) as out_fd, opened(subdir(out_fd, stage.name)) as stage_fd:
                moves = self._plan_moves(out_fd, stage_fd, files, [c for c in cfg_files if isinstance(c, str)])
                try:
                    for src_fd, src, dst_fd, dst, label in moves:
                        # (a file whose inode is not the staged one's: the old output, swapped out)
                        if _is_file_at(src_fd, src) and inodes.get(label, _inode(src_fd, src)) == _inode(src_fd, src):
                            _move(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                            if label in files:
                                done.append(label)
                    _remove_obsolete(out_fd, obsolete)
                finally:
                    for fd in {m[0] for m in moves} | {m[2] for m in moves}:
                        if fd not in (out_fd, stage_fd):
                            os.close(fd)
        except OSError as exc:
            return done, f"{exc.filename or stage.name}: {exc.strerror}"
        return done, None

    def _plan_moves(
        self, out_fd: int, stage_fd: int, files: list[str], cfg_files: list[str]
    ) -> list[tuple[int, str, int, str, str]]:
        """(source dir fd, name, destination dir fd, name, label) of every move of a commit: the views'
        directories opened (made where absent) below ``--cfgs DIR`` without following a link, each
        destination checked (not a directory).  The caller closes the fds other than its own two."""
        moves: list[tuple[int, str, int, str, str]] = []
        dirs: dict[tuple[str, ...], tuple[int, int]] = {}
        try:
            if cfg_files and self.cfgs is not None:
                with opened(open_dir(self.cfgs)) as cfg_fd, opened(subdir(stage_fd, "cfgs")) as staged_fd:
                    for rel in cfg_files:
                        parts = rel_parts(rel)
                        if parts is None:
                            continue
                        if parts[:-1] not in dirs:
                            try:
                                into = descend(cfg_fd, parts[:-1], create=True)
                            except OSError as exc:
                                exc.filename = str(self.cfgs.joinpath(*parts[:-1]))
                                raise
                            try:
                                dirs[parts[:-1]] = (descend(staged_fd, parts[:-1]), into)
                            except BaseException:
                                os.close(into)
                                raise
                        src_fd, dst_fd = dirs[parts[:-1]]
                        moves.append((src_fd, parts[-1], dst_fd, parts[-1], rel))
            moves += [(stage_fd, name, out_fd, name, name) for name in files]
            for _, _, dst_fd, name, label in moves:
                _check_destination(dst_fd, name, str((self.dir if dst_fd == out_fd else self.cfgs or self.dir) / label))
        except BaseException:
            for fds in dirs.values():
                for fd in fds:
                    os.close(fd)
            raise
        return moves

    def _check_destinations(self) -> None:
        for suffix in SUFFIXES:
            p = self.out.with_name(self.out.name + suffix)
            if p.is_dir() and not p.is_symlink():
                raise UserError("is a directory: the output would replace it", str(p))
        if self.cfgs is not None:
            if self.cfgs.exists() and not self.cfgs.is_dir():
                raise UserError("--cfgs needs a directory, and this is a file", str(self.cfgs))
            self.cfgs.mkdir(parents=True, exist_ok=True)

    # -- after the work ----------------------------------------------------------------------------
    def holds_work(self, path: str | Path) -> bool:
        """Whether ``path`` is one of the run's work files (chunks, staged tables: never committed)."""
        return str(path).startswith(str(self.work) + os.sep)

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
        every file is in place (then the command stops, saying that the new outputs are complete).
        Every destination is checked just before the moves (nothing is moved when one cannot be
        replaced); a move failing after others were made keeps the staging directory and its
        manifest (the next run on OUT completes the set) and says that the set is mixed."""
        moved: list[str] = []
        files: list[str] = []
        try:
            cfg_files: list[str] = []
            if self.cfgs is not None and self.staged_cfgs is not None and self.staged_cfgs.is_dir():
                cfg_files = [
                    str(p.relative_to(self.staged_cfgs)) for p in sorted(self.staged_cfgs.rglob("*")) if p.is_file()
                ]
            files = sorted(p.name for p in self.stage.iterdir() if p.is_file() and p.name != COMMIT)
            # what an earlier run wrote and this one did not (OUT.prv.gz, ...)
            obsolete = [self.out.name + sfx for sfx in SUFFIXES if self.out.name + sfx not in files]
            plan: dict[str, object] = {
                "files": files,
                "obsolete": obsolete,
                "cfgs": str(self.cfgs) if self.cfgs else None,
                "cfg_files": cfg_files,
            }
            with opened(open_dir(self.dir)) as out_fd, opened(subdir(out_fd, self.stage.name)) as stage_fd:
                moves = self._plan_moves(out_fd, stage_fd, files, cfg_files)
                try:
                    # each staged file's inode: a run completing this one's moves (``_complete``) moves
                    # only those, not the old outputs ``_move`` swapped into their places here
                    plan["inodes"] = {label: _inode(src_fd, src) for src_fd, src, _, _, label in moves}
                    tmp = self.stage / (COMMIT + ".tmp")
                    tmp.write_text(json.dumps(plan), encoding="utf-8")
                    os.replace(tmp, self.stage / COMMIT)
                    with signals_recorded() as held:
                        for src_fd, src, dst_fd, dst, label in moves:
                            _move(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                            moved.append(label)
                        _remove_obsolete(out_fd, obsolete)
                        (self.stage / COMMIT).unlink()
                finally:
                    for fd in {m[0] for m in moves} | {m[2] for m in moves}:
                        if fd not in (out_fd, stage_fd):
                            os.close(fd)
        except OSError as exc:
            where = str(exc.filename or self.dir)
            if exc.errno == errno.ELOOP:
                cause = "a symbolic link there is not followed: the outputs are never written through it"
            else:
                cause = exc.strerror or str(exc)
            if not moved:
                raise UserError(
                    f"cannot move the outputs into place ({cause}); nothing was moved, the previous outputs "
                    "are as they were",
                    where,
                ) from None
            self._made_stage = False  # kept, with its manifest: the next run on OUT completes the moves
            raise UserError(
                f"cannot move the outputs into place ({cause}) after {len(moved)} of "
                f"{len(moves)} files: the output set is mixed; the next run on {self.out.name} completes it "
                f"(from {self.stage.name})",
                where,
            ) from None
        for p in self._unfinished:
            shutil.rmtree(p, ignore_errors=True)  # (an earlier run's mixed set: replaced by this one's)
        self._committed = True
        if held:
            name = signal.Signals(held[0]).name
            self.close()
            wait_removed()  # (the command stops: nothing of this run is left behind)
            print(
                f"nsys2prv: stopped by {name} while the outputs were moved into place: they are complete",
                file=sys.stderr,
            )
            raise SystemExit(128 + held[0])

    def close(self) -> None:
        """The staging directory removed (after a commit, with the old outputs swapped into it, in
        ``dirs.remove_later``'s thread: ``dirs.wait_removed`` waits for it), the lock released."""
        if self._made_stage:
            if self._committed:
                remove_later(self.stage)
            else:
                wait_removed()  # (the work files given to it first: then nothing of the stage is left)
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

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
import shutil
from pathlib import Path

from nsys2prv.core.errors import UserError

INPUT_SUFFIXES = (".sqlite", ".nsys-rep", ".qdrep", ".qdstrm")
# what one run writes next to OUT, by suffix (the views go to --cfgs DIR)
SUFFIXES = (".prv", ".prv.gz", ".pcf", ".row", ".summary.json", ".sync.json", ".pop.json", ".pop.csv", ".pop.md",
            ".pop.tex", ".pop.png", ".pop.iterations.csv", ".gpu_metrics.csv")


def check_not_an_input(out: Path) -> None:
    """OUT must be a base name, not one of the inputs (``-m r0.sqlite r1.sqlite r2.sqlite`` forgets it)."""
    if out.name.lower().endswith(INPUT_SUFFIXES) or out.is_file():
        raise UserError("looks like an input report, not an output base name: the last argument is where the "
                        "trace goes (add one, e.g. out/trace)", str(out))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    def _take_lock(self) -> None:
        path = self.dir / f".{self.out.name}.lock"
        fh = open(path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise UserError(f"another nsys2prv (pid {holder}) is writing this output; wait for it or choose "
                                "another OUT", str(self.out)) from None
            raise
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock = fh

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
            try:
                (self.dir / f".{self.out.name}.lock").unlink(missing_ok=True)
            except OSError:
                pass
            self._lock.close()
            self._lock = None

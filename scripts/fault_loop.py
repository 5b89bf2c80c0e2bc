#!/usr/bin/env python3
"""Kill conversions at random moments and check what they leave behind.

Usage: fault_loop.py [--runs 50] [--seed 1] [--attack] [WORKDIR]

Each run converts the real 8-rank reports (tests/data/mpi8) into WORKDIR/out, alternately into a fresh
OUT and over the previous run's outputs, and sends SIGKILL, SIGTERM, SIGINT or SIGHUP after a random
delay (or lets it finish).  After each run it checks: no process of the run is left (within 3 s), the
output set is either the previous one untouched or a complete new one (every file present, the summary
matching the .row), and the exit code is the documented one (0, 130, 143, 129; -9 for SIGKILL; a signal
that arrives while the interpreter itself starts, before nsys2prv's first line, has its default action).  Stale
temporaries are counted before the next run and must be gone after it.  A commit stopped by SIGKILL while
its files were moved into place may leave a mixed set until the next run on OUT completes it: counted as
such, and a BAD state if the next run does not.  Prints a tally.

``--attack``: instead of signals, each run meets one planted attack on the files it trusts least (the
cache and output directories, and the input's data): symbolic links at every name the tool creates
(the lock, staging directories, outputs, cache files and directories, pointing at a victim file or a
victim directory tree), a FIFO as the lock, foreign pickles, cache objects of the wrong type, a Parquet
file of another kind, a manifest that is a list, and text in a numeric column of an input.  A bad state:
a victim changed, a pickle executed, an exit code other than the expected one, a traceback or internal
error, a run that hangs (60 s), or outputs that differ from the clean reference run where the attack
should change nothing.

Issue 39's cases take every other run, in turn (20 runs plant each once), most planted by a second local
user (made with ``useradd`` for the loop, removed with ``userdel`` after; as root only: without it those
cases are counted as skipped): a link at a subdirectory of a shared ``--cfgs DIR``, another user's entry in
a shared cache directory, another user's export beside a report (a stand-in ``.nsys-rep`` exported by a
stand-in ``nsys``), a directory made at an output while the run works, a view named like a table (an endless
recursive query), an input rewritten with its size and mtime kept, duplicate StringIds ids, a device id of
2**40 (on generated GPU ranks), a symbolic link loop as input, and a lock file of another user's held with
flock.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXT = (".prv", ".pcf", ".row", ".summary.json", ".sync.json", ".pop.json")
EXPECTED = {None: 0, signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGHUP: 129, signal.SIGKILL: -9}


def digest(base: Path) -> dict:
    return {e: hashlib.sha256(Path(f"{base}{e}").read_bytes()).hexdigest() for e in EXT if Path(f"{base}{e}").is_file()}


def complete(base: Path) -> bool:
    if set(digest(base)) != set(EXT):
        return False
    summary = json.loads(Path(f"{base}.summary.json").read_text())
    row = Path(f"{base}.row").read_text()
    return f"LEVEL TASK SIZE {summary['ranks']}" in row


def alive(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--attack", action="store_true", help="planted links, foreign files and bad data (see above)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="nsys2prv-faults-"))
    try:
        return _main(args, work)
    finally:
        if not args.workdir:  # (a directory of its own under /tmp: removed, as much as it is)
            shutil.rmtree(work, ignore_errors=True)


def _main(args, work: Path) -> int:
    rng = random.Random(args.seed)
    work.mkdir(parents=True, exist_ok=True)
    ranks = sorted(str(p) for p in (ROOT / "tests" / "data" / "mpi8").glob("rank*.sqlite"))
    if args.attack:
        return attack_loop(args.runs, rng, work, ranks)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    tally = collections.Counter()
    pending_commit = None  # an OUT left mixed by a SIGKILL during its commit: the next run completes it
    for i in range(args.runs):
        out = work / ("out" if i % 2 else f"fresh{i}")
        before = digest(out)
        stale = [p for p in work.iterdir() if p.name.startswith(f".{out.name}.") and not p.name.endswith(".lock")]
        sig = rng.choice([None, signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
        delay = rng.uniform(0.05, 3.0)
        cmd = [sys.executable, "-m", "nsys2prv", "-q", "-j", "2", "-m", *ranks, str(out)]
        if rng.random() < 0.5:
            cmd.insert(3, "--no-cache")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if sig is not None:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        tally["runs"] += 1
        finished = proc.returncode == 0
        tally["finished" if finished else f"stopped by {signal.Signals(sig).name}"] += 1
        if not finished and proc.returncode == -sig and digest(out) == before:
            # before Python ran nsys2prv's first line (its start-up): the default action, nothing written
            tally["stopped during interpreter start-up (default action, nothing written)"] += 1
        elif not finished and proc.returncode != EXPECTED[sig]:
            tally[f"BAD exit code {proc.returncode} for {sig}"] += 1
            print(err, file=sys.stderr)
        deadline = time.monotonic() + 3
        while alive(str(out)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(str(out)):
            tally["BAD orphan processes"] += 1
        elif sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) and proc.returncode == EXPECTED[sig]:
            time.sleep(0.3)  # (a worker still writing would refill the staging directory now)
            if list(work.glob(f".{out.name}.out{proc.pid}*")):  # (not a SIGKILLed run's: the next one's)
                tally["BAD staging directory left by a run stopped by a handled signal"] += 1
        after = digest(out)
        if pending_commit == out:
            pending_commit = None
            if finished and not complete(out):
                tally["BAD state: an interrupted commit was not completed by the next run"] += 1
        if after == before:
            tally["state: previous outputs untouched" if before else "state: nothing written"] += 1
        elif complete(out):
            tally["state: new complete set"] += 1
        elif sig == signal.SIGKILL and any((p / ".commit.json").is_file() for p in work.glob(f".{out.name}.out*")):
            tally["state: killed while moving the outputs into place (the next run completes it)"] += 1
            pending_commit = out
        else:
            tally["BAD state: mixed or partial outputs"] += 1
        if stale:
            tally["stale temporaries found before the run"] += 1
            if finished and any(p.exists() for p in stale):
                tally["BAD stale temporaries survived a finished run"] += 1
    for k, v in sorted(tally.items()):
        print(f"{v:6d}  {k}")
    return 1 if any(k.startswith("BAD") for k in tally) else 0


# --- --attack ---------------------------------------------------------------------------------------------
OUTS = (".prv", ".pcf", ".row")
NUMERIC = {  # table -> numeric columns an attack may fill with text
    "MPI_P2P_EVENTS": ("start", "end", "globalTid", "textId", "remoteRank", "size", "tag"),
    "MPI_COLLECTIVES_EVENTS": ("start", "end", "globalTid", "textId", "size"),
    "MPI_OTHER_EVENTS": ("start", "end", "globalTid", "textId"),
    "NVTX_EVENTS": ("start", "end", "globalTid", "eventType", "domainId"),
    "MPI_RANKS": ("rank", "globalTid"),
    "PROCESSES": ("pid",),
}


def _bytes(base: Path) -> dict:
    return {e: Path(f"{base}{e}").read_bytes() for e in OUTS if Path(f"{base}{e}").is_file()}


def _put(path: Path, data: bytes) -> None:
    """Plant a file (an earlier attack's link at that name removed first: never written through)."""
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_bytes(data)


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else None) for p in sorted(d.rglob("*"))}


def _plant(rng, work: Path, cache: Path, out: Path, victim: Path, vdir: Path, marker: Path) -> tuple[str, dict]:
    """One attack; returns its name and what the run must do: {"code", "same" (outputs as the
    reference), "inputs" (replaced inputs), "flags"}."""
    import pickle

    entries = sorted(p for p in (cache / "tables").glob("*/*") if p.is_dir() and not p.is_symlink())
    kind = rng.choice(
        [
            "lock link",
            "lock fifo",
            "staging link",
            "output links",
            "cache file links",
            "cache dir link",
            "entry dir link",
            "pickles",
            "wrong objects",
            "parquet of another kind",
            "manifest a list",
            "text in a numeric column",
        ]
    )
    want = {"code": 0, "same": True}
    if kind == "lock link":
        (out.parent / f".{out.name}.lock").symlink_to(victim)
        want = {"code": 2, "same": False, "unchanged": True}
    elif kind == "lock fifo":
        os.mkfifo(out.parent / f".{out.name}.lock")
        want = {"code": 2, "same": False, "unchanged": True}
    elif kind == "staging link":
        for name in (f".{out.name}.out{2**22 + 3}", f".{out.name}.out{2**22 + 4}.abcdef", f".{out.name}.work1"):
            (out.parent / name).symlink_to(vdir, target_is_directory=True)
    elif kind == "output links":
        for e in (*OUTS, ".summary.json", ".pop.json", ".pop.md", ".sync.json"):
            p = Path(f"{out}{e}")
            if p.exists() or p.is_symlink():
                p.unlink()
            p.symlink_to(victim)
    elif kind == "cache file links" and entries:
        for e in rng.sample(entries, min(3, len(entries))):
            for f in list(e.iterdir()):
                f.unlink()
                f.symlink_to(victim)
            if not (e / f".meta.n2p.tmp{os.getpid()}").is_symlink():
                (e / f".meta.n2p.tmp{os.getpid()}").symlink_to(victim)
    elif kind == "cache dir link" and entries:
        e = rng.choice(entries).parent
        shutil.rmtree(e)
        e.symlink_to(vdir, target_is_directory=True)
    elif kind == "entry dir link" and entries:
        e = rng.choice(entries)
        shutil.rmtree(e)
        e.symlink_to(vdir, target_is_directory=True)
    elif kind == "pickles" and entries:

        class Boom:
            def __reduce__(self):
                return (os.system, (f"touch {marker}",))

        bomb = pickle.dumps(Boom())
        for e in entries:
            for f in [*e.glob("*.n2p"), e / "meta.pkl", e / "scan-0123456789abcdef.pkl", e / "mpi.empty.pkl"]:
                _put(f, bomb)
    elif kind == "wrong objects" and entries:
        sys.path.insert(0, str(ROOT))
        from nsys2prv.nsys.codec import encode

        for e in entries:
            for f in e.glob("*.n2p"):
                _put(f, encode(rng.choice([{"a": 1}, [1, 2], "text", None, 3.5])))
    elif kind == "parquet of another kind" and entries:
        for e in entries:
            files = sorted(e.glob("*.parquet"))
            if len(files) > 1:
                _put(files[0], files[1].read_bytes())
            for f in e.glob("scan-*"):
                f.unlink()
    elif kind == "manifest a list" and entries:
        for e in entries:
            _put(e / "kinds.json", rng.choice(["[1, 2]", '{"version": 1, "kinds": [], "schemas": {}}', "7"]).encode())
            for f in e.glob("scan-*"):
                f.unlink()
    elif kind == "text in a numeric column":
        src = Path(rng.choice(sorted(str(p) for p in (ROOT / "tests" / "data" / "mpi8").glob("rank*.sqlite"))))
        bad = work / "inputs" / src.name
        bad.parent.mkdir(exist_ok=True)
        shutil.copy2(src, bad)
        import sqlite3

        with sqlite3.connect(bad) as con:
            tables = [
                t
                for t in NUMERIC
                if con.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]
            ]
            table = rng.choice(tables)
            col = rng.choice(NUMERIC[table])
            con.execute(
                f'UPDATE {table} SET "{col}" = \'x{rng.randint(0, 9)}\' WHERE rowid IN '
                f"(SELECT rowid FROM {table} ORDER BY random() LIMIT {rng.randint(1, 3)})"
            )
        con.close()
        kind = f"text in {table}.{col}"
        want = {"code": 0, "same": False, "inputs": {src.name: bad}, "flags": ["--no-cache"]}
    else:
        kind = "none (no cache entry to attack yet)"
    return kind, want


# --- issue 39: a second local user ----------------------------------------------------------------------
class Attacker:
    """A local user made for the loop (``useradd``), removed after (``userdel``); None when not root."""

    def __init__(self) -> None:
        import pwd

        self.name = f"n2patk{os.getpid() % 100000}"
        subprocess.run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin", self.name], check=True)
        pw = pwd.getpwnam(self.name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        # (the system's Python: the attacker may not reach this one, under a home directory of 0700)
        self.python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

    def _drop(self) -> None:
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)

    def run(self, code: str) -> None:
        """Python ``code`` run as the attacker."""
        subprocess.run([self.python, "-c", code], preexec_fn=self._drop, check=True, cwd="/")

    def start(self, code: str) -> subprocess.Popen:
        """Python ``code`` run as the attacker in the background (it prints a line when ready)."""
        proc = subprocess.Popen(
            [self.python, "-c", code], preexec_fn=self._drop, cwd="/", stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        return proc

    def remove(self) -> None:
        subprocess.run(["userdel", self.name], check=False, capture_output=True)


def _attacker() -> Attacker | None:
    if os.getuid() != 0 or not shutil.which("useradd"):
        return None
    return Attacker()


FAKE_NSYS = """#!/bin/sh
if [ "$1" = export ] && [ "$2" = --help ]; then exit 0; fi
out=; rep=
while [ $# -gt 0 ]; do [ "$1" = -o ] && { out="$2"; shift; }; rep="$1"; shift; done
exec cp "${rep%.nsys-rep}.export" "$out"
"""
ENDLESS = (
    "CREATE VIEW {name} AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
    "SELECT n AS start, n AS end, n AS globalTid, 0 AS textId FROM c"
)
ISSUE39 = (
    "cfgs subdirectory link",
    "foreign cache entry",
    "foreign export beside the report",
    "directory made at an output",
    "view named like a table",
    "input rewritten, mtime kept",
    "duplicate StringIds",
    "device id 2**40",
    "symbolic link loop as input",
    "foreign lock held",
)
NEEDS_USER = {ISSUE39[i] for i in (0, 1, 2, 3, 9)}


def _copy_input(work: Path, src: str) -> Path:
    bad = work / "inputs" / Path(src).name
    bad.parent.mkdir(exist_ok=True)
    shutil.copy2(src, bad)
    return bad


class Scene:
    """What the issue 39 cases share: the attacker, the stable inputs, references, a stand-in nsys."""

    def __init__(self, work: Path, ranks: list[str], base: list[str], env: dict, attacker: Attacker | None):
        import sqlite3

        self.work, self.attacker, self.base, self.env = work, attacker, base, env
        self.stable = work / "stable"
        self.stable.mkdir()
        self.ranks = [str(shutil.copy2(r, self.stable / Path(r).name)) for r in ranks]
        variant = work / "variant"
        variant.mkdir()
        self.variant = [str(shutil.copy2(r, variant / Path(r).name)) for r in ranks]
        with sqlite3.connect(self.variant[0]) as con:  # the same size, other names
            con.execute("UPDATE StringIds SET value = replace(value, 'MPI', 'MPJ')")
        con.close()
        os.utime(self.variant[0], ns=(os.stat(self.ranks[0]).st_atime_ns, os.stat(self.ranks[0]).st_mtime_ns))
        assert os.path.getsize(self.variant[0]) == os.path.getsize(self.ranks[0])
        self.refs = {}
        for name, inputs in (("stable", self.ranks), ("variant", self.variant)):
            out = work / "ref" / name
            subprocess.run([*base, "--no-cache", "-m", *inputs, str(out)], env=env, check=True, capture_output=True)
            self.refs[name] = _bytes(out)
        subprocess.run([*base, "-m", *self.ranks, str(work / "ref" / "warm")], env=env, check=True, capture_output=True)
        # a cache of the stable inputs no other attack touches (the rewritten input's case reads it)
        self.cache39 = work / "cache39"
        warm = [*base[: base.index("--cache-dir")], "--cache-dir", str(self.cache39)]
        warm += ["-m", *self.ranks, str(work / "ref" / "warm39")]
        subprocess.run(warm, env=env, check=True, capture_output=True)
        sys.path.insert(0, str(ROOT / "tests"))
        from test_schema_versions import build_rank  # (the fixture generator: GPU ranks)

        gpu = work / "gpu"
        gpu.mkdir()
        self.gpu = [str(build_rank(gpu / f"rank{r}.sqlite", "3.13.2", r)) for r in (0, 1)]
        home = work / "nsys-home"
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "nsys").write_text(FAKE_NSYS)
        (home / "bin" / "nsys").chmod(0o755)
        self.nsys_home = home
        for d in (work, self.stable, variant, gpu, home, home / "bin"):
            d.chmod(0o755)  # (the attacker reads what it copies)


def _plant39(kind: str, sc: Scene, d: Path, out: Path, vdir: Path) -> dict:
    """Issue 39's case ``kind``, planted for the run writing ``out`` in ``d``; what the run must do."""
    import sqlite3

    sys.path.insert(0, str(ROOT))
    from nsys2prv.nsys.cache import entry_dir

    atk = sc.attacker
    d.chmod(0o1777)  # OUT's directory is shared
    if kind == "cfgs subdirectory link":
        assert atk is not None
        cfgs = d / "cfgs"
        cfgs.mkdir(mode=0o1777)
        cfgs.chmod(0o1777)
        atk.run(f"import os; os.symlink({str(vdir)!r}, {str(cfgs / 'analysis')!r})")
        return {"code": 2, "same": False, "unchanged": True, "flags": ["--cfgs", str(cfgs)], "says": "symbolic link"}
    if kind == "foreign cache entry":
        assert atk is not None
        shared = d / "shared-cache"
        shared.mkdir()
        shared.chmod(0o1777)
        mine, theirs = (
            entry_dir(shared / "tables", Path(sc.ranks[0])),
            entry_dir(sc.cache39 / "tables", Path(sc.ranks[1])),  # (a cache no attack damages)
        )
        atk.run(
            f"import os, shutil; os.makedirs({str(mine)!r}); "
            f"[shutil.copyfile(os.path.join({str(theirs)!r}, f), os.path.join({str(mine)!r}, f)) "
            f"for f in os.listdir({str(theirs)!r})]"
        )
        return {"code": 0, "same": True, "cache": str(shared)}
    if kind == "foreign export beside the report":
        assert atk is not None
        rep = d / "reports"
        rep.mkdir()
        rep.chmod(0o1777)
        report = rep / "rank0.nsys-rep"
        report.write_bytes(b"NVIDIA Nsight Systems report (a stand-in)\0")
        shutil.copyfile(sc.ranks[0], rep / "rank0.export")  # what the stand-in nsys exports
        atk.run(f"import shutil; shutil.copyfile({sc.ranks[1]!r}, {str(rep / 'rank0.sqlite')!r})")
        return {"code": 0, "same": True, "inputs": {"rank0.sqlite": report}, "env": {"NSYS_HOME": str(sc.nsys_home)}}
    if kind == "directory made at an output":
        assert atk is not None
        during = f"import contextlib, os\nwith contextlib.suppress(OSError): os.mkdir({str(out) + '.row'!r})"
        return {"code": (0, 2), "same": True, "unchanged": True, "during": during, "says": "is a directory"}
    if kind == "view named like a table":
        bad = _copy_input(sc.work, sc.ranks[0])
        with sqlite3.connect(bad) as con:
            con.execute("DROP TABLE NVTX_EVENTS")
            con.execute(ENDLESS.format(name="NVTX_EVENTS"))
        con.close()
        return {"code": 0, "same": False, "inputs": {"rank0.sqlite": bad}, "flags": ["--no-cache"]}
    if kind == "input rewritten, mtime kept":
        x = Path(sc.ranks[0])
        st = x.stat()
        with open(x, "r+b") as fh:
            fh.write(Path(sc.variant[0]).read_bytes())
        os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns))
        return {"code": 0, "same": "variant", "restore": True, "cache": str(sc.cache39)}
    if kind == "duplicate StringIds":
        bad = _copy_input(sc.work, sc.ranks[0])
        with sqlite3.connect(bad) as con:
            con.execute("CREATE TABLE s2 AS SELECT id, value FROM StringIds")
            con.execute("DROP TABLE StringIds")
            con.execute("ALTER TABLE s2 RENAME TO StringIds")
            con.execute("INSERT INTO StringIds SELECT id, 'IMPOSTOR' FROM StringIds WHERE value LIKE 'MPI_%'")
        con.close()
        return {"code": 0, "same": True, "inputs": {"rank0.sqlite": bad}, "flags": ["--no-cache"]}
    if kind == "device id 2**40":
        bad = sc.work / "inputs" / "gpu0.sqlite"
        bad.parent.mkdir(exist_ok=True)
        shutil.copyfile(sc.gpu[0], bad)
        with sqlite3.connect(bad) as con:
            con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1099511627776 WHERE rowid = 1")
        con.close()
        return {"code": 0, "same": False, "replace_all": [str(bad), sc.gpu[1]], "flags": ["--no-cache", "-t", "all"]}
    if kind == "symbolic link loop as input":
        loop = sc.work / "inputs" / "rank0.sqlite"
        loop.parent.mkdir(exist_ok=True)
        loop.symlink_to(sc.work / "inputs" / "other.sqlite")
        (sc.work / "inputs" / "other.sqlite").symlink_to(loop)
        return {"code": 2, "same": False, "unchanged": True, "inputs": {"rank0.sqlite": loop}, "says": "ELOOP"}
    if kind == "foreign lock held":
        assert atk is not None
        lock = d / f".{out.name}.lock"
        holder = atk.start(
            f"import fcntl, os, sys, time; fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT, 0o666); "
            "os.fchmod(fd, 0o666); os.write(fd, b'999999'); fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('ready', flush=True); time.sleep(120)"
        )
        return {"code": 2, "same": False, "unchanged": True, "holder": holder, "says": "owned by"}
    raise ValueError(kind)


def attack_loop(runs: int, rng, work: Path, ranks: list[str]) -> int:
    cache = work / "cache"
    victim = work / "victim.txt"
    vdir = work / "victim-dir"
    marker = work / "PWNED"
    tally = collections.Counter()
    ref = work / "ref" / "t"
    ref.parent.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "nsys2prv", "-q", "-j", "2", "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([*base, "-m", *ranks, str(ref)], env=env, check=True, capture_output=True)
    reference = _bytes(ref)
    attacker = _attacker()
    try:
        scene = Scene(work, ranks, base, env, attacker)
        return _attack_runs(runs, rng, work, ranks, scene, base, env, reference, victim, vdir, marker, tally)
    finally:
        if attacker is not None:
            attacker.remove()


def _attack_runs(runs, rng, work, ranks, scene, base, env, reference, victim, vdir, marker, tally) -> int:
    import threading

    cache = work / "cache"
    order = list(ISSUE39)
    rng.shuffle(order)
    for i in range(runs):
        if i % 2 == 0:  # issue 39's cases, every other run, in turn (20 runs plant each once)
            _put(victim, b"precious\n")
            shutil.rmtree(vdir, ignore_errors=True)
            for sub in ("0123456789abcdef/keep", "projects/keep"):
                (vdir / sub).mkdir(parents=True)
                (vdir / sub / "data.txt").write_text("mine\n")
            vtree = _tree(vdir)
            kind = order[(i // 2) % len(order)]
            if kind in NEEDS_USER and scene.attacker is None:
                tally[f"skipped (needs root for a second user): {kind}"] += 1
                continue
            d = work / f"run{i}"
            d.mkdir()
            out = d / "t"
            want = _plant39(kind, scene, d, out, vdir)
            inputs = want.get("replace_all") or [str(want.get("inputs", {}).get(Path(r).name, r)) for r in scene.ranks]
            cmd = [*base, *want.get("flags", [])]
            if "cache" in want:
                cmd[cmd.index("--cache-dir") + 1] = want["cache"]
            before = _bytes(out)
            timer = None
            if "during" in want:
                code39 = want["during"]
                timer = threading.Timer(rng.uniform(0.1, 3.0), lambda: scene.attacker.run(code39))
                timer.start()
            try:
                res = subprocess.run(
                    [*cmd, "-m", *inputs, str(out)],
                    env={**env, **want.get("env", {})},
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                code, err = res.returncode, res.stderr
            except subprocess.TimeoutExpired:
                code, err = None, "timeout"
            if timer is not None:
                timer.join()
            if "holder" in want:
                want["holder"].kill()
                want["holder"].wait()
            tally[f"attack (issue 39): {kind}"] += 1
            codes = want["code"] if isinstance(want["code"], tuple) else (want["code"],)
            bad = []
            if code is None:
                bad.append("hung (60 s)")
            elif code not in codes:
                bad.append(f"exit {code}, expected {want['code']}")
            if "Traceback" in err or "internal error" in err:
                bad.append("traceback / internal error")
            if code not in (0, None) and want.get("says") and want["says"] not in err:
                bad.append(f"the error does not say {want['says']!r}")
            if code not in (0, None) and err.count("\n") > 1:
                bad.append("an error of more than one line")
            if victim.read_bytes() != b"precious\n" or _tree(vdir) != vtree:
                bad.append("victim changed")
            same = want["same"]
            expected = scene.refs["variant"] if same == "variant" else scene.refs["stable"] if same else None
            if code == 0 and expected is not None and _bytes(out) != expected:
                bad.append("outputs differ from the clean run (another report served?)")
            if code == 0 and not all(Path(f"{out}{e}").is_file() for e in OUTS):
                bad.append("outputs missing")
            if code not in (0, None) and want.get("unchanged") and _bytes(out) != before:
                bad.append("outputs written by a refused run")
            for b in bad:
                tally[f"BAD {b}"] += 1
            if bad:
                print(f"run {i} ({kind}): {'; '.join(bad)}\n{err[-2000:]}", file=sys.stderr)
            if want.get("restore"):
                x = Path(scene.ranks[0])
                st = x.stat()
                shutil.copyfile(ranks[0], x)
                os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns))
            shutil.rmtree(d, ignore_errors=True)
            shutil.rmtree(work / "inputs", ignore_errors=True)
            continue
        _put(victim, b"precious\n")
        shutil.rmtree(vdir, ignore_errors=True)
        for sub in ("0123456789abcdef/keep", "projects/keep"):
            (vdir / sub).mkdir(parents=True)
            (vdir / sub / "data.txt").write_text("mine\n")
        vtree = _tree(vdir)
        d = work / f"run{i}"
        d.mkdir()
        out = d / "t"
        kind, want = _plant(rng, work, cache, out, victim, vdir, marker)
        inputs = [str(want.get("inputs", {}).get(Path(r).name, r)) for r in ranks]
        before = _bytes(out)
        try:
            res = subprocess.run(
                [*base, *want.get("flags", []), "-m", *inputs, str(out)],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            code, err = res.returncode, res.stderr
        except subprocess.TimeoutExpired:
            code, err = None, "timeout"
        tally[f"attack: {kind.split(' in ')[0] if kind.startswith('text in') else kind}"] += 1
        bad = []
        if code is None:
            bad.append("hung (60 s)")
        elif code != want["code"]:
            bad.append(f"exit {code}, expected {want['code']}")
        if "Traceback" in err or "internal error" in err:
            bad.append("traceback / internal error")
        if victim.read_bytes() != b"precious\n" or _tree(vdir) != vtree:
            bad.append("victim changed")
        if marker.exists():
            bad.append("a pickle was executed")
            marker.unlink()
        if code == 0 and want["same"] and _bytes(out) != reference:
            bad.append("outputs differ from the clean run")
        if code == 0 and not all(Path(f"{out}{e}").is_file() and not Path(f"{out}{e}").is_symlink() for e in OUTS):
            bad.append("outputs missing or still links")
        if code not in (0, None) and want.get("unchanged") and _bytes(out) != before:
            bad.append("outputs written by a refused run")
        for b in bad:
            tally[f"BAD {b}"] += 1
        if bad:
            print(f"run {i} ({kind}): {'; '.join(bad)}\n{err[-2000:]}", file=sys.stderr)
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(work / "inputs", ignore_errors=True)
    for k, v in sorted(tally.items()):
        print(f"{v:6d}  {k}")
    print(f"{sum(v for k, v in tally.items() if k.startswith('BAD')):6d}  bad states in {runs} runs")
    return 1 if any(k.startswith("BAD") for k in tally) else 0


if __name__ == "__main__":
    sys.exit(main())

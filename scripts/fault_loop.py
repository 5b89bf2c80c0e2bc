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
    rng = random.Random(args.seed)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="nsys2prv-faults-"))
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
        from nsys2prv.nsys.cache import encode

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
    for i in range(runs):
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

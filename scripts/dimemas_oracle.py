#!/usr/bin/env python3
"""BSC's Dimemas as the oracle of our ideal-network replay (``host.ideal_elapsed_ns`` in OUT.pop.json).

For each fixture (the real ones, and a generated run with MPI tables): convert it (``nsys2prv -t mpi``),
translate the trace with Dimemas's ``prv2dim`` and replay it with ``Dimemas`` on its shipped
``cfgs/ideal.cfg`` (zero latency, instantaneous transfers) with ``-F`` (every send asynchronous: eager,
as our replay assumes; without it a ring of blocking sends deadlocks); Dimemas's T is the end of its
simulated trace (the header's ``END_ns``).

    scripts/dimemas_oracle.py            compare Dimemas's T with ours and with the recorded oracle
    scripts/dimemas_oracle.py --record   re-record tests/oracles/dimemas.json and print what changed

The recorded file holds, per fixture, Dimemas's T, our T_ideal at recording time, the Dimemas version
and the exact commands, so that a test without Dimemas (CI) compares our T_ideal with Dimemas's answer
(tests/test_dimemas.py).  Dimemas and prv2dim are found on PATH (scripts/build_bsc_tools.sh builds them
into /opt/bsc/bin); ideal.cfg next to them (PREFIX/share/.../cfgs/ideal.cfg) or in
``NSYS2PRV_DIMEMAS_CFG``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
ORACLE = ROOT / "tests" / "oracles" / "dimemas.json"
TOLERANCE = 1e-4  # 0.01 % of T
BUILD = "scripts/build_bsc_tools.sh (PARAVER_KERNEL_SRC=... DIMEMAS_SRC=..., then /opt/bsc/bin on PATH)"

# fixture name -> its reports (converted with -t mpi): a directory of the repository, or "generated"
# (``generated_run``: MPI tables with peers, made here with tests/nsysgen.py)
FIXTURES = {
    "mpi4": "tests/data/mpi4",
    "pop4": "tests/data/pop4",
    "mpi8": "tests/data/mpi8",
    "gen4": "generated",
    "mpi23_p2p4": "tests/data/mpi23/p2p4",
    "mpi23_coll4": "tests/data/mpi23/coll4",
    "mpi23_p2p4h2": "tests/data/mpi23/p2p4h2",
    "mpi23_coll8h4": "tests/data/mpi23/coll8h4",
    "mpi23_thr6h3": "tests/data/mpi23/thr6h3",  # (MPI_THREAD_MULTIPLE: each thread replayed on its own)
    "mpi23_pp2h2": "tests/data/mpi23/pp2h2",
    "mpi23_pp4h4": "tests/data/mpi23/pp4h4",
}
CONVERT = [sys.executable, "-m", "nsys2prv", "-q", "-t", "mpi", "-m"]


def generated_run(d: Path, nranks: int = 4, iters: int = 20, seed: int = 3) -> list[str]:
    """A CPU-only MPI run in nsys's MPI tables (schema 3.22, one host, one clock) with everything that
    waits on an ideal network: per iteration a ring of blocking Send/Recv (the receives wait for their
    sends), a ring of Irecv/Isend completed by Waitall, a Bcast (root k mod N) and a Reduce (root
    k+1 mod N) with their roots named; MPI_Init and MPI_Finalize around."""
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    from nsysgen import NsysBuilder

    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    pid0 = 5000
    bs = {
        r: NsysBuilder(
            d / f"rank{r}.sqlite",
            schema="3.22",
            host="node-a",
            session_start_ns=1_700_000_000_000_000_000,
            env={"SLURM_JOB_ID": "7", "SLURM_PROCID": str(r)},
        )
        for r in range(nranks)
    }
    for r, b in bs.items():
        b.process(pid0 + r, "./app")

    def call(r: int, name: str, t0: float, t1: float, **kw) -> None:
        bs[r].mpi(pid0 + r, pid0 + r, name, int(t0), int(t1), **kw)

    ranks = range(nranks)
    init_in = {r: 1e6 + r * 2e5 for r in ranks}
    rel = max(init_in.values()) + 3e5
    for r in ranks:
        call(r, "MPI_Init", init_in[r], rel + rng.uniform(0, 1e4), kind="other")
        bs[r].mpi_rank(pid0 + r, pid0 + r, r)
    now = rel + 2e4
    for k in range(iters):
        c = {r: now + rng.uniform(1e5, 9e5) for r in ranks}
        recv_end = {r: max(c[r] + 6e3, c[(r - 1) % nranks] + 8e3) + 1e3 for r in ranks}
        for r in ranks:
            right, left = (r + 1) % nranks, (r - 1) % nranks
            call(r, "MPI_Send", c[r], c[r] + 5e3, kind="p2p", peer=right, size=4096, tag=k)
            call(r, "MPI_Recv", c[r] + 6e3, recv_end[r], kind="p2p", peer=left, size=4096, tag=k)
        a = {r: recv_end[r] + rng.uniform(1e4, 3e5) for r in ranks}
        w = {r: max(a[r], a[(r - 1) % nranks]) + 5e4 + rng.uniform(0, 1e3) for r in ranks}
        for r in ranks:
            right, left = (r + 1) % nranks, (r - 1) % nranks
            h = 100 * (k + 1)
            call(r, "MPI_Irecv", a[r], a[r] + 1e3, kind="p2p", peer=left, size=256, tag=500 + k, request=h)
            call(r, "MPI_Isend", a[r] + 2e3, a[r] + 3e3, kind="p2p", peer=right, size=256, tag=500 + k, request=h + 1)
            for req in (h, h + 1):
                call(r, "MPI_Waitall", a[r] + 4e3, w[r], kind="startwait", request=req)
        b_in = {r: w[r] + rng.uniform(1e4, 2e5) for r in ranks}
        b_out = max(b_in.values()) + 2e3
        for r in ranks:
            call(
                r,
                "MPI_Bcast",
                b_in[r],
                b_out + rng.uniform(0, 1e3),
                kind="coll",
                peer=k % nranks,
                size=64,
                recv_size=64,
            )
        r_in = {r: b_out + 5e3 + rng.uniform(1e4, 2e5) for r in ranks}
        root = (k + 1) % nranks
        r_out = {r: (max(r_in.values()) + 2e3 if r == root else r_in[r] + 2e3) for r in ranks}
        for r in ranks:
            call(r, "MPI_Reduce", r_in[r], r_out[r], kind="coll", peer=root, size=8, recv_size=8)
        now = max(r_out.values()) + 1e4
    fin = {r: now + rng.uniform(0, 5e5) for r in ranks}
    for r in ranks:
        call(r, "MPI_Finalize", fin[r], max(fin.values()) + 1e5 + rng.uniform(0, 1e4), kind="other")
    return [str(bs[r].save()) for r in ranks]


def tools() -> tuple[str, str] | None:
    """(prv2dim, Dimemas) on PATH, or None."""
    prv2dim, dimemas = shutil.which("prv2dim"), shutil.which("Dimemas")
    return (prv2dim, dimemas) if prv2dim and dimemas else None


def ideal_cfg(dimemas: str) -> Path | None:
    """Dimemas's shipped ideal.cfg: NSYS2PRV_DIMEMAS_CFG, else under the installation's share/."""
    env = os.environ.get("NSYS2PRV_DIMEMAS_CFG")
    if env:
        return Path(env)
    prefix = Path(dimemas).resolve().parent.parent
    found = sorted(prefix.glob("share/**/cfgs/ideal.cfg"))
    return found[0] if found else None


def version(dimemas: str) -> str:
    """``Dimemas --version``, with the source commit that scripts/build_bsc_tools.sh recorded in
    PREFIX/VERSIONS when it is there."""
    res = subprocess.run([dimemas, "--version"], capture_output=True, text=True)
    text = (res.stdout or res.stderr).strip()
    out = text.splitlines()[0] if text else "unknown"
    built = Path(dimemas).resolve().parent.parent / "VERSIONS"
    if built.exists():
        # "dimemas 5.5.0 commit <sha> (<describe>) (github...): ...": up to the source's describe
        lines = [x.split(" (github")[0] for x in built.read_text().splitlines() if x.startswith("dimemas ")]
        out += "".join(f"; built from {x}" for x in lines)
    return out


def reports(fixture: str, work: Path) -> list[str]:
    """The fixture's reports (a generated one: made in ``work``)."""
    if FIXTURES[fixture] == "generated":
        return generated_run(work / f"{fixture}-reports")
    return sorted(str(p) for p in (ROOT / FIXTURES[fixture]).glob("rank*.sqlite"))


def convert(fixture: str, work: Path) -> tuple[Path, int]:
    """Convert a fixture into ``work``: (OUT.prv, our T_ideal in ns)."""
    out = work / fixture
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    paths = reports(fixture, work)
    subprocess.run([*CONVERT, *paths, str(out)], check=True, capture_output=True, text=True, env=env)
    pop = json.loads(out.with_name(out.name + ".pop.json").read_text())
    return out.with_name(out.name + ".prv"), int(pop["host"]["ideal_elapsed_ns"])


def commands(prv: str, dim: str, cfg: str, sim: str) -> list[list[str]]:
    """The two commands that replay a trace, as recorded (file names as given)."""
    return [["prv2dim", prv, dim], ["Dimemas", "-F", "--dim", dim, "-p", sim, cfg]]


def replay(prv: Path, work: Path, prv2dim: str, dimemas: str, cfg: Path) -> int:
    """Dimemas's T (ns) for a Paraver trace: prv2dim, then Dimemas on ideal.cfg; the END of the
    simulated trace."""
    dim, sim = work / (prv.stem + ".dim"), work / (prv.stem + ".sim.prv")
    (to_dim, run) = commands(str(prv), str(dim), str(cfg), str(sim))
    for cmd, exe in ((to_dim, prv2dim), (run, dimemas)):
        res = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, cwd=work, timeout=600)
        if res.returncode != 0 or (cmd is to_dim and not dim.exists()):
            raise RuntimeError(f"{cmd[0]} failed ({res.returncode}): {(res.stderr or res.stdout)[-2000:]}")
    with open(sim, "rb") as fh:
        head = fh.readline().decode()
    return int(head.split(":")[2].removesuffix("_ns"))


def measure(fixture: str, work: Path) -> dict:
    found = tools()
    if found is None:
        raise SystemExit(f"prv2dim and Dimemas are not on PATH: build them with {BUILD}")
    prv2dim, dimemas = found
    cfg = ideal_cfg(dimemas)
    if cfg is None or not cfg.exists():
        raise SystemExit("Dimemas's cfgs/ideal.cfg not found next to Dimemas: set NSYS2PRV_DIMEMAS_CFG")
    prv, ours = convert(fixture, work)
    t = replay(prv, work, prv2dim, dimemas, cfg)
    where = FIXTURES[fixture] if FIXTURES[fixture] != "generated" else f"{fixture}-reports"
    return {
        "dimemas_T_ns": t,
        "nsys2prv_T_ideal_ns": ours,
        "commands": [
            " ".join(cmd)
            for cmd in (
                [*CONVERT[2:], f"{where}/rank*.sqlite", fixture],
                *commands(f"{fixture}.prv", f"{fixture}.dim", "ideal.cfg", f"{fixture}.sim.prv"),
            )
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", action="store_true", help=f"rewrite {ORACLE.relative_to(ROOT)}")
    ap.add_argument("fixtures", nargs="*", default=list(FIXTURES))
    args = ap.parse_args()
    old = json.loads(ORACLE.read_text()) if ORACLE.exists() else {"fixtures": {}}
    found = tools()
    if found is None:
        print(f"prv2dim and Dimemas are not on PATH: build them with {BUILD}", file=sys.stderr)
        return 2
    new = {
        "about": "Dimemas's T of our traces (prv2dim + Dimemas -F on cfgs/ideal.cfg); re-record with "
        "scripts/dimemas_oracle.py --record",
        "dimemas_version": version(found[1]),
        "tolerance": TOLERANCE,
        "fixtures": dict(old.get("fixtures", {})),
    }
    bad = 0
    with tempfile.TemporaryDirectory(prefix="dimemas-oracle-") as tmp:
        for fixture in args.fixtures:
            work = Path(tmp) / fixture
            work.mkdir()
            got = measure(fixture, work)
            t, ours = got["dimemas_T_ns"], got["nsys2prv_T_ideal_ns"]
            rel = abs(t - ours) / t
            was = old.get("fixtures", {}).get(fixture, {})
            print(
                f"{fixture}: Dimemas T {t} ns, nsys2prv T_ideal {ours} ns, difference {t - ours} ns ({rel:.6%})"
                + (f"; recorded Dimemas T {was['dimemas_T_ns']} ns" if was else "; not recorded")
            )
            if was and was.get("dimemas_T_ns") != t:
                print(f"  changed: Dimemas T {was['dimemas_T_ns']} -> {t} ns")
            if was and was.get("nsys2prv_T_ideal_ns") != ours:
                print(f"  changed: nsys2prv T_ideal {was['nsys2prv_T_ideal_ns']} -> {ours} ns")
            bad += rel > TOLERANCE
            new["fixtures"][fixture] = got
    if old.get("dimemas_version") not in (None, new["dimemas_version"]):
        print(f"changed: Dimemas version {old['dimemas_version']!r} -> {new['dimemas_version']!r}")
    if args.record:
        ORACLE.parent.mkdir(parents=True, exist_ok=True)
        ORACLE.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
        print(f"recorded {ORACLE.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

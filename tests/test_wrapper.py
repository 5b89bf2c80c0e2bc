"""nsys-rank.sh, the per-rank profiling wrapper (``nsys2prv wrapper`` prints its path), driven with a
stand-in ``nsys`` that records how it was called."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

FAKE_NSYS = """#!/bin/sh
{ echo "TMPDIR=$TMPDIR"; for a in "$@"; do echo "ARG=$a"; done; } > "$NSYS_LOG"
[ -d "$TMPDIR" ] && echo "TMPDIR_EXISTS" >> "$NSYS_LOG"
exit 0
"""


def wrapper_path() -> str:
    res = subprocess.run([sys.executable, "-m", "nsys2prv", "wrapper"], capture_output=True, text=True, check=True)
    return res.stdout.strip()


@pytest.fixture
def fake(tmp_path, tools):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(FAKE_NSYS)
    (bin_dir / "nsys").chmod(0o755)
    return bin_dir


TOOLS = ("bash", "sh", "mktemp", "awk", "sleep", "mkdir", "rm", "env")


@pytest.fixture
def tools(tmp_path):
    """A PATH directory with just the tools the wrapper needs: no real nsys from the system."""
    d = tmp_path / "tools"
    d.mkdir()
    for name in TOOLS:
        (d / name).symlink_to(shutil.which(name))
    return d


def run(tmp_path, bin_dir, args, **env):
    base = {"PATH": f"{bin_dir}:{tmp_path / 'tools'}", "NSYS_LOG": str(tmp_path / "log"), "TMPDIR": str(tmp_path),
            "NSYS2PRV_OUTDIR": str(tmp_path / "reports"), "NSYS2PRV_STAGGER": "0", **env}
    return subprocess.run([wrapper_path(), *args], env=base, capture_output=True, text=True, timeout=30)


def logged(tmp_path) -> tuple[list[str], str, bool]:
    lines = (tmp_path / "log").read_text().splitlines()
    return ([x[4:] for x in lines if x.startswith("ARG=")], next(x[7:] for x in lines if x.startswith("TMPDIR=")),
            "TMPDIR_EXISTS" in lines)


def test_wrapper_is_shipped_executable():
    path = wrapper_path()
    assert path.endswith("nsys-rank.sh") and os.access(path, os.X_OK)


def test_open_mpi_rank_gets_defaults_its_own_tmpdir_and_report_name(tmp_path, fake):
    res = run(tmp_path, fake, ["./app", "-n", "3"], OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_LOCAL_RANK="1")
    assert res.returncode == 0, res.stderr
    args, tmpdir, existed = logged(tmp_path)
    assert args == ["profile", "-t", "cuda,nvtx,mpi,osrt", "--mpi-impl=openmpi", "-s", "none", "--cpuctxsw=none",
                    "--force-overwrite=true", "-o", f"{tmp_path}/reports/rank3", "./app", "-n", "3"]
    assert existed and tmpdir.startswith(f"{tmp_path}/nsys-rank3.") and not os.path.exists(tmpdir)  # removed after
    assert (tmp_path / "reports").is_dir()


def test_slurm_rank_with_user_options_before_the_separator(tmp_path, fake):
    res = run(tmp_path, fake, ["-t", "cuda,nvtx", "--", "./app"], SLURM_PROCID="12", SLURM_LOCALID="0", PMI_RANK="12")
    assert res.returncode == 0, res.stderr
    args, _, _ = logged(tmp_path)
    assert args == ["profile", "-t", "cuda,nvtx", "--force-overwrite=true", "-o", f"{tmp_path}/reports/rank12", "./app"]


def test_mpich_is_guessed_from_its_environment(tmp_path, fake):
    assert run(tmp_path, fake, ["./app"], PMI_RANK="2", MPI_LOCALRANKID="0").returncode == 0
    args, _, _ = logged(tmp_path)
    assert "--mpi-impl=mpich" in args and f"{tmp_path}/reports/rank2" in args


def test_missing_nsys_is_one_clear_line(tmp_path, tools):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run(tmp_path, empty, ["./app"], OMPI_COMM_WORLD_RANK="0")
    assert res.returncode == 127
    assert res.stderr.strip() == ("nsys-rank.sh: rank 0: nsys not found: put Nsight Systems' bin directory on PATH "
                                  "or set NSYS_HOME")


def test_nsys_home_is_used_when_nsys_is_not_on_path(tmp_path, fake):
    home = tmp_path / "nsys_home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "nsys").write_text(FAKE_NSYS)
    (home / "bin" / "nsys").chmod(0o755)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(tmp_path, empty, ["./app"], NSYS_HOME=str(home)).returncode == 0
    assert logged(tmp_path)[0][-1] == "./app"

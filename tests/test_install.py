"""The newcomer's path: install, convert, reinstall editable, and the command still works; numba's
compiled kernels are cached in the user's cache directory, never inside the installed package."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import MPI4

pytestmark = pytest.mark.install  # the slow tier: python3 -m pytest -m install

ROOT = Path(__file__).resolve().parent.parent


def _env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "NSYS2PRV_KERNELS")}
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def test_compiled_kernels_are_cached_in_the_user_cache(tmp_path):
    before = {p for p in (ROOT / "nsys2prv").rglob("*.nb[ic]")}
    env = {**_env(tmp_path / "cache"), "NSYS2PRV_KERNELS": "compiled"}  # a small run would not compile
    ranks = sorted(str(p) for p in MPI4.glob("rank*.sqlite"))
    res = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "-q", "-t", "mpi", "-m", *ranks, str(tmp_path / "t")],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    cached = list((tmp_path / "cache" / "nsys2prv" / "numba").glob("*/*.nbi"))
    assert len(cached) >= 5, cached  # every kernel of core, metrics and paraver
    assert {p for p in (ROOT / "nsys2prv").rglob("*.nb[ic]")} == before


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the working tree")
def test_install_then_editable_install_keeps_the_command_working(tmp_path):
    """``pip install .``, a conversion, then ``pip install -e .``: the installed command still runs
    from any directory (a stale ``site-packages/nsys2prv`` must not shadow the editable install), and
    the installed profiling wrapper is executable."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py, exe = env_dir / "bin" / "python", env_dir / "bin" / "nsys2prv"
    # the dependencies: those of the interpreter running the tests (a venv's or the system's), as plain
    # path entries after the new venv's own site-packages (their .pth files, e.g. an editable nsys2prv
    # of the outer environment, are not processed)
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (Path(purelib) / "outer-deps.pth").write_text("".join(f"{p}\n" for p in outer))
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "out"))
    env = _env(tmp_path / "cache")
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps"]
    run = lambda cmd, cwd=tmp_path: subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)  # noqa: E731
    assert run([*pip, str(src)]).returncode == 0
    ranks = sorted(str(p) for p in MPI4.glob("rank*.sqlite"))
    res = run([str(exe), "-q", "-t", "mpi", "-m", *ranks, str(tmp_path / "out" / "t")])
    assert res.returncode == 0, res.stderr
    wrapper = run([str(exe), "wrapper"]).stdout.strip()  # shipped with its executable bit
    assert str(env_dir) in wrapper and os.access(wrapper, os.X_OK), wrapper
    assert run([*pip, "-e", str(src)]).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = run([str(exe), "--version"], cwd=elsewhere)
    assert res.returncode == 0 and "nsys2prv" in res.stdout, res.stderr
    res = run([str(exe), "-q", "-t", "mpi", "-m", *ranks, str(tmp_path / "out" / "again")], cwd=elsewhere)
    assert res.returncode == 0, res.stderr


def test_the_repository_carries_its_license_and_citation():
    """pyproject's BSD-3-Clause as a LICENSE file, and a CITATION.cff of the version being released."""
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert 'license = { text = "BSD-3-Clause" }' in (ROOT / "pyproject.toml").read_text()
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License\n")
    cff = (ROOT / "CITATION.cff").read_text()
    assert f"\nversion: {version}\n" in cff and "\nlicense: BSD-3-Clause\n" in cff


def test_the_readme_installs_real_extras_and_shows_a_picture_that_exists():
    """The README's install commands name only extras that install something; its images exist; it warns
    that `pip install nsys2prv` from PyPI is another tool."""
    readme = (ROOT / "README.md").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = dict(
        re.findall(r"^(\w+) = \[(.*?)\]", pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0], re.M)
    )
    named = {e for group in re.findall(r"pip install -e '\.\[([\w,]+)\]'", readme) for e in group.split(",")}
    assert named and all(extras.get(e, "").strip() for e in named), (named, extras)
    images = re.findall(r"!\[[^]]*\]\(([^)]+)\)", readme)
    assert images and all((ROOT / i).is_file() for i in images)
    assert "`pip install nsys2prv` (from PyPI) installs a **different tool of the same name**" in readme

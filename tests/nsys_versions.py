"""The Nsight Systems versions installed here, one way for every test to find them.

``scripts/install_nsys.sh`` installs both: Debian's 2022.4 as ``nsys`` on PATH (MPI as NVTX ranges) and
2023.4.4 unpacked into /opt/nsys-2023.4 (``NSYS23_DIR`` overrides; MPI in nsys's own MPI_* tables).

    installed()      {"2022.4": Path(".../nsys"), "2023.4": Path(".../nsys")}, the versions found
    environ(v)       os.environ with version v's nsys first on PATH (and its libssh link for 2023.4)
    require(v)       its nsys, or pytest.skip naming scripts/install_nsys.sh (pytest.fail under CI)
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

VERSIONS = ("2022.4", "2023.4")
INSTALL = "scripts/install_nsys.sh"


def _home(nsys: Path) -> Path:
    """<home>/usr/bin/nsys -> <home> (its extralib/ holds the libssh link the 2023.4 importer needs)."""
    return nsys.parent.parent.parent


def _with(env: dict[str, str], nsys: Path) -> dict[str, str]:
    env = dict(env)
    env["PATH"] = f"{nsys.parent}{os.pathsep}{env.get('PATH', '')}"
    extra = _home(nsys) / "extralib"
    if extra.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(extra), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


@functools.lru_cache(maxsize=1)
def installed() -> dict[str, Path]:
    """The first nsys found of each version: PATH's, Debian's, the unpacked 2023.4."""
    cands = [shutil.which("nsys"), "/usr/bin/nsys"]
    cands.append(str(Path(os.environ.get("NSYS23_DIR", "/opt/nsys-2023.4")) / "usr" / "bin" / "nsys"))
    found: dict[str, Path] = {}
    for c in cands:
        if not c or not os.access(c, os.X_OK):
            continue
        path = Path(c).absolute()
        try:
            out = subprocess.run(
                [str(path), "--version"], env=_with(dict(os.environ), path), capture_output=True, text=True
            ).stdout
        except OSError:
            continue
        m = re.search(r"version (\d{4}\.\d+)", out)
        if m and m.group(1) not in found:
            found[m.group(1)] = path
    return found


def environ(version: str, base: dict[str, str] | None = None) -> dict[str, str]:
    return _with(dict(os.environ if base is None else base), require(version))


def require(version: str) -> Path:
    nsys = installed().get(version)
    if nsys is None:
        msg = f"Nsight Systems {version} is not installed ({INSTALL} installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must install it: {msg}")
        pytest.skip(msg)
    return nsys

"""Issue 30: files in the cache and output directories are untrusted, bad data is accounted.

Each test reproduces one case of the issue as it was reported (a planted link, a foreign pickle, text in
a numeric column, ...) and checks the exact outcome: nothing written through a link, nothing loaded that
this tool did not write, every dropped row counted with its reason."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, convert, convert_valid
from test_schema_versions import build_rank

from nsys2prv.core.errors import UserError
from nsys2prv.pipeline import outputs as O


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("security")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


# --- 1, 5: the lock ----------------------------------------------------------------------------------
def test_1_a_lock_file_planted_as_a_link_is_not_followed(ranks, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    d = tmp_path / "d"
    d.mkdir()
    (d / ".o.lock").symlink_to("../victim")
    code, text = convert(["-m", *ranks, d / "o"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1 and "lock file is a symbolic link" in text
    assert victim.read_text() == "precious\n" and (d / ".o.lock").is_symlink()
    assert not (d / "o.prv").exists()


def test_1_the_lock_file_is_created_0600(ranks, tmp_path):
    out = O.OutputSet(tmp_path / "o", None).open()
    try:
        assert os.stat(tmp_path / ".o.lock").st_mode & 0o777 == 0o600
        assert (tmp_path / ".o.lock").read_text() == str(os.getpid())
    finally:
        out.close()
    assert leftovers(tmp_path) == []


def test_1_a_hard_link_or_fifo_as_lock_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.link(victim, tmp_path / ".o.lock")
    with pytest.raises(UserError, match="not a plain file"):
        O.OutputSet(tmp_path / "o", None).open()
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / ".p.lock")
    with pytest.raises(UserError, match="not a plain file"):       # (a FIFO would block the open)
        O.OutputSet(tmp_path / "p", None).open()


def test_5_the_lock_cannot_be_held_by_two_runs(tmp_path, monkeypatch):
    """B opened the lock file of A before A released (unlinked) it; C then creates and locks a new
    file; B's flock on the orphaned inode must not count."""
    a = O.OutputSet(tmp_path / "o", None).open()
    stale = os.open(tmp_path / ".o.lock", os.O_RDWR)          # B's open, before A's release
    a.close()
    c = O.OutputSet(tmp_path / "o", None).open()
    real, opened = O._open_lock, []

    def first_the_stale_one(path):
        opened.append(path)
        return stale if len(opened) == 1 else real(path)

    monkeypatch.setattr(O, "_open_lock", first_the_stale_one)
    try:
        with pytest.raises(UserError, match=f"another nsys2prv \\(pid {os.getpid()}\\) is writing this output"):
            O.OutputSet(tmp_path / "o", None).open()
        assert len(opened) == 2             # the orphaned inode was noticed and the current file tried
    finally:
        c.close()
    b = O.OutputSet(tmp_path / "o", None).open()                # released: B gets it
    b.close()

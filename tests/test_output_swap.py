"""Issue 40: the outputs moved into place by swapping them with the previous run's (``outputs._move``,
``dirs.exchange``), the old files removed off the critical path (``dirs.remove_later``).

Replacing a file by ``rename`` makes ext4 write the new file out and free the old one within the call;
a swap leaves the old file in the staging directory, removed by a thread.  What is at an output's
name is never followed nor written through (a link is swapped out and removed, its target untouched),
a directory there is never taken, another user's file is replaced like ours, and a commit stopped
after some swaps leaves a set the next run completes with the new files only (the old ones swapped
into the staging directory are never moved back)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import convert, validate_trace
from test_schema_versions import build_rank

from nsys2prv.core import dirs
from nsys2prv.pipeline import outputs as O

SET = ("t.prv", "t.pcf", "t.row", "t.summary.json")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("swap")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def _staged(tmp_path: Path, text: str) -> O.OutputSet:
    out = O.OutputSet(tmp_path / "t", None).open()
    for name in SET:
        (out.stage / name).write_text(text + name)
    return out


def _fds(tmp_path: Path, out: O.OutputSet) -> tuple[int, int]:
    return os.open(out.stage, os.O_RDONLY | os.O_DIRECTORY), os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)


def test_exchange_swaps_two_names(tmp_path):
    (tmp_path / "a").write_text("A")
    (tmp_path / "b").write_text("B")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert dirs.exchange(fd, "a", fd, "b") is True  # (Linux, ext4/tmpfs: renameat2 is there)
        with pytest.raises(FileNotFoundError):
            dirs.exchange(fd, "a", fd, "absent")
    finally:
        os.close(fd)
    assert (tmp_path / "a").read_text() == "B" and (tmp_path / "b").read_text() == "A"


def test_a_commit_over_old_outputs_swaps_them_out_and_removes_them(tmp_path):
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    old = {n: (tmp_path / n).stat().st_ino for n in SET}
    out = _staged(tmp_path, "new")
    new = {n: (out.stage / n).stat().st_ino for n in SET}
    out.commit()
    # in place: the staged files themselves; in the staging directory: the old ones, until close
    assert {n: (tmp_path / n).stat().st_ino for n in SET} == new
    assert {n: (out.stage / n).stat().st_ino for n in SET} == old
    assert {n: (out.stage / n).read_text() for n in SET} == {n: "old" + n for n in SET}
    out.close()
    dirs.wait_removed()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}


def test_a_link_at_an_output_is_swapped_out_never_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for name in SET:
        (tmp_path / name).symlink_to(victim)
    out = _staged(tmp_path, "new")
    out.commit()
    out.close()
    dirs.wait_removed()
    assert victim.read_text() == "precious\n"
    assert all(not (tmp_path / n).is_symlink() and (tmp_path / n).read_text() == "new" + n for n in SET)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*SET, "victim"])


def test_another_users_old_output_is_replaced(tmp_path):
    if os.getuid() != 0:
        pytest.skip("needs root to chown a file to another user (run the tests as root)")
    for name in SET:
        (tmp_path / name).write_text("old" + name)
        os.chown(tmp_path / name, 65534, 65534)
    out = _staged(tmp_path, "new")
    out.commit()
    out.close()
    dirs.wait_removed()
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
    assert {(tmp_path / n).stat().st_uid for n in SET} == {0}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)


def test_a_directory_made_at_an_output_just_before_its_swap_is_swapped_back(tmp_path, monkeypatch):
    """Between ``_move``'s look at the destination (a file) and the swap, another user puts a
    directory there: the swap is undone (the directory and what it holds stay where they were, never
    taken into the staging directory) and the commit says the set is mixed."""
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    out = _staged(tmp_path, "new")
    real, done = dirs.exchange, []

    def exchange(src_fd, src, dst_fd, dst):
        if dst == "t.row" and not done:
            done.append(dst)
            os.unlink(dst, dir_fd=dst_fd)
            os.mkdir(dst, dir_fd=dst_fd)
            (tmp_path / "t.row" / "theirs").write_text("theirs")
        return real(src_fd, src, dst_fd, dst)

    monkeypatch.setattr(O, "exchange", exchange)
    try:
        with pytest.raises(O.UserError) as err:
            out.commit()
    finally:
        monkeypatch.undo()
        out.close()
    assert "after 2 of 4 files: the output set is mixed" in str(err.value)
    assert "changed while the output was moved into place" in str(err.value)
    assert (tmp_path / "t.row" / "theirs").read_text() == "theirs"
    assert (out.stage / "t.row").read_text() == "newt.row"  # (the staged file back in the staging directory)
    # the pcf and the prv went in (sorted order); the summary was not moved
    assert {n: (tmp_path / n).read_text() for n in ("t.pcf", "t.prv", "t.summary.json")} == {
        "t.pcf": "newt.pcf",
        "t.prv": "newt.prv",
        "t.summary.json": "oldt.summary.json",
    }
    # the next run completes it with the staged files only (the old ones swapped in are not moved back)
    os.unlink(tmp_path / "t.row" / "theirs")
    os.rmdir(tmp_path / "t.row")
    dead = tmp_path / f".t.out{2**22 + 13}.xyz"
    out.stage.rename(dead)
    nxt = O.OutputSet(tmp_path / "t", None).open()
    nxt.close()
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)


def test_a_run_killed_after_a_swap_is_completed_with_the_new_files(tmp_path):
    """A SIGKILL right after the first swap: that output is new, its old file sits in the staging
    directory under the output's name; the manifest's inodes tell the next run to leave it."""
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    pid = os.fork()
    if pid == 0:
        try:
            out = _staged(tmp_path, "new")
            real = O._move

            def move(src, dst, **kw):
                real(src, dst, **kw)
                os.kill(os.getpid(), signal.SIGKILL)

            O._move = move
            out.commit()
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    (stage,) = [p for p in tmp_path.iterdir() if p.name.startswith(".t.out")]
    plan = json.loads((stage / O.COMMIT).read_text())
    assert sorted(plan["inodes"]) == sorted(SET)
    assert (tmp_path / "t.pcf").read_text() == "newt.pcf" and (stage / "t.pcf").read_text() == "oldt.pcf"
    nxt = O.OutputSet(tmp_path / "t", None).open()
    nxt.close()
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)


def test_a_failed_run_keeps_the_old_outputs_intact(ranks, tmp_path, monkeypatch):
    """An error after the trace is written (stage E, before the commit): nothing was swapped, the
    previous outputs are as they were, no staging directory is left."""
    out = tmp_path / "o"
    convert(["-m", *ranks, out])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    from nsys2prv.pipeline import conversion

    def fail(*a, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(conversion, "build_summary", fail)
    code, text = convert(["-m", *ranks, out], expect_ok=False)
    assert code != 0 and "cannot write the outputs" in text
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_conversion_over_its_previous_outputs(ranks, tmp_path):
    """The second run's outputs are in place, every old file and the staging directory gone by the
    time ``convert`` returns."""
    out = tmp_path / "o"
    convert(["-m", *ranks, out])
    first = {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.iterdir()}
    convert(["-m", *ranks, out])
    second = {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.iterdir()}
    assert sorted(second) == sorted(first) and not [n for n in second if n.startswith(".")]
    assert all(second[n][0] != first[n][0] for n in first)  # (new files, not rewritten ones)
    assert {n: b for n, (_, b) in second.items() if "json" not in n} == {
        n: b for n, (_, b) in first.items() if "json" not in n
    }
    validate_trace(str(out))


def test_remove_later_removes_every_tree_and_wait_removed_waits(tmp_path):
    trees = []
    for i in range(3):
        d = tmp_path / f"d{i}"
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_bytes(b"x" * 100_000)
        trees.append(d)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    (trees[0] / "link").symlink_to(victim)  # (removed as a link: never followed)
    for d in trees:
        dirs.remove_later(d)
    dirs.wait_removed()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim"] and (victim / "keep").read_text() == "keep"
    assert dirs._removing == []


def test_nested_trees_are_removed_each_in_its_thread_whatever_the_order(tmp_path):
    """A conversion gives its run's tables (work/tables), then its work files (stage/work), then the
    staging directory holding the earlier outputs: each freed in a thread of its own, the outer tree
    its own files first, then what the inner ones' threads leave; the order reversed too."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    for case, order in (("a", ("work/tables", "work", "")), ("b", ("", "work", "work/tables"))):
        stage = tmp_path / case
        (stage / "work" / "tables" / "r0").mkdir(parents=True)
        (stage / "work" / "tables" / "r0" / "t.arrow").write_bytes(b"t" * 300_000)
        (stage / "work" / "r0.chunk").write_bytes(b"c" * 300_000)
        (stage / "out.prv").write_bytes(b"p" * 300_000)  # (an earlier output swapped out)
        (stage / "old").mkdir()
        (stage / "old" / "x.cfg").write_text("x")
        (stage / "link").symlink_to(victim)  # (removed as a link: never followed)
        (stage / "work" / "link").symlink_to(victim)
        for rel in order:
            dirs.remove_later(stage / rel if rel else stage)
        dirs.wait_removed()
        assert not stage.exists(), case
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim"] and (victim / "keep").read_text() == "keep"
    assert dirs._removing == []

"""The cache's size cap keeps its sizes in a ledger (``nsys.cache_size``): a conversion measures only
what it used and what is new, over the cap everything is scanned and the least recently used go
first, and a ledger or entry an attacker planted is neither followed nor trusted."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from nsys2prv.nsys import cache_size as S

OTHER = 4242  # a uid no test machine's user has: "another user"
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a file of another user's (chown)")
ENTRY = "0123456789abcdef"
GROUPS = [f"rank{i}-{i:016x}" for i in range(4)]
EXPORT = "old-00000000000000ff.sqlite"
HUGE = 1 << 50


def _group(cache: Path, name: str, kib: int, age_s: int) -> Path:
    """A table group ``name`` with one entry of ``kib`` KiB of tables, last used ``age_s`` ago."""
    entry = cache / "tables" / name / ENTRY
    entry.mkdir(parents=True)
    (entry / "kernels.parquet").write_bytes(os.urandom(kib * 1024))
    (entry / "meta.n2p").write_bytes(b"m" * 100)
    _age(entry.parent, age_s)
    return entry.parent


def _age(group: Path, age_s: int) -> None:
    then = time.time() - age_s
    for p in (group / ENTRY, group):
        os.utime(p, (then, then))


def _allocated(d: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in d.rglob("*") if p.is_file() and not p.is_symlink())


def _ledger(cache: Path) -> dict:
    return json.loads((cache / S.LEDGER).read_text())


@pytest.fixture
def cache(tmp_path):
    c = tmp_path / "cache"
    for i, name in enumerate(GROUPS[:3]):
        _group(c, name, 8 * (i + 1), 3600 * (4 - i))  # 8, 16, 24 KiB; last used 4, 3, 2 hours ago
    (c / EXPORT).write_bytes(os.urandom(12 * 1024))
    return c


@pytest.fixture
def measured(monkeypatch):
    """The entry directories the cap measures (listing their files), in order."""
    seen: list[str] = []
    real = S._dir_size

    def counting(fd, name):
        seen.append(f"{os.readlink(f'/proc/self/fd/{fd}').rsplit('/', 1)[1]}/{name}")
        return real(fd, name)

    monkeypatch.setattr(S, "_dir_size", counting)
    return seen


def _parts(cache: Path, groups=GROUPS[:3], export=True) -> dict[str, int]:
    parts = {f"g/{g}": _allocated(cache / "tables" / g) for g in groups}
    if export:
        parts[f"f/{EXPORT}"] = (cache / EXPORT).lstat().st_blocks * 512
    return parts


def test_the_ledger_holds_each_group_and_export_exactly(cache, measured):
    before = time.time()
    assert S.enforce(cache, HUGE, [], []) is None
    ledger = _ledger(cache)
    assert ledger["parts"] == _parts(cache) and ledger["version"] == 1
    assert before <= ledger["scanned"] <= time.time()
    assert sorted(measured) == sorted(f"{g}/{ENTRY}" for g in GROUPS[:3])  # (the first: a full scan)
    st = (cache / S.LEDGER).lstat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()


def test_a_later_conversion_measures_only_what_it_used_and_what_is_new(cache, measured):
    S.enforce(cache, HUGE, [], [])
    scanned = _ledger(cache)["scanned"]
    measured.clear()
    used = cache / "tables" / GROUPS[0] / ENTRY
    (used / "osrt.parquet").write_bytes(os.urandom(40 * 1024))  # the used group grew: measured again
    (cache / "tables" / GROUPS[1] / ENTRY / "nvtx.parquet").write_bytes(os.urandom(4096))  # unused: not
    _group(cache, GROUPS[3], 4, 60)  # another conversion's, new to the ledger: measured
    for f in (cache / "tables" / GROUPS[2] / ENTRY).iterdir():  # gone: dropped
        f.unlink()
    (cache / "tables" / GROUPS[2] / ENTRY).rmdir()
    (cache / "tables" / GROUPS[2]).rmdir()
    assert S.enforce(cache, HUGE, [used], []) is None
    assert sorted(measured) == [f"{GROUPS[0]}/{ENTRY}", f"{GROUPS[3]}/{ENTRY}"]
    stale = (
        _allocated(cache / "tables" / GROUPS[1])
        - (cache / "tables" / GROUPS[1] / ENTRY / "nvtx.parquet").lstat().st_blocks * 512
    )
    ledger = _ledger(cache)
    assert ledger["parts"] == {**_parts(cache, [GROUPS[0], GROUPS[3]]), f"g/{GROUPS[1]}": stale}
    assert ledger["scanned"] == scanned
    # RESCAN_S after the last full scan, everything is measured again: the growth nobody measured counts
    ledger["scanned"] = time.time() - S.RESCAN_S - 1
    (cache / S.LEDGER).write_text(json.dumps(ledger))
    measured.clear()
    assert S.enforce(cache, HUGE, [], []) is None
    assert sorted(measured) == sorted(f"{g}/{ENTRY}" for g in (GROUPS[0], GROUPS[1], GROUPS[3]))
    assert _ledger(cache)["parts"] == _parts(cache, [GROUPS[0], GROUPS[1], GROUPS[3]])


def test_over_the_cap_the_least_recently_used_go_first(cache, measured):
    S.enforce(cache, HUGE, [], [])
    sizes = _parts(cache)
    total = sum(sizes.values())
    _age(cache / "tables" / GROUPS[1], 3 * 3600)
    os.utime(cache / EXPORT, (time.time() - 5 * 3600,) * 2)  # the oldest unit (an export without tables)
    # room for all but one: the export, least recently used, goes
    note = S.enforce(cache, total - 1, [], [])
    assert note == (
        f"the cache {cache} was over its cap of {(total - 1) / 2**20:.1f} MiB (--cache-max): removed the 1 least "
        f"recently used report(s)' entries ({sizes[f'f/{EXPORT}'] / 2**20:.1f} MiB)"
    )
    assert not (cache / EXPORT).exists() and _ledger(cache)["parts"] == _parts(cache, export=False)
    # room for one group, the oldest in use: the two others go, oldest first
    used = cache / "tables" / GROUPS[0] / ENTRY
    left = sizes[f"g/{GROUPS[0]}"]
    note = S.enforce(cache, left, [used], [])
    freed = sizes[f"g/{GROUPS[1]}"] + sizes[f"g/{GROUPS[2]}"]
    assert note == (
        f"the cache {cache} was over its cap of {left / 2**20:.1f} MiB (--cache-max): removed the 2 least "
        f"recently used report(s)' entries ({freed / 2**20:.1f} MiB)"
    )
    assert [p.name for p in (cache / "tables").iterdir()] == [GROUPS[0]]
    assert _ledger(cache)["parts"] == {f"g/{GROUPS[0]}": left}
    # one byte less: over the cap, but the one unit left is in use
    note = S.enforce(cache, left - 1, [used], [])
    assert (
        note
        == f"the cache {cache} is over its cap of {(left - 1) / 2**20:.1f} MiB (--cache-max), but every entry is in use"
    )
    assert _ledger(cache)["parts"] == {f"g/{GROUPS[0]}": left}


def test_the_order_of_removal_is_the_last_use(cache):
    S.enforce(cache, HUGE, [], [])
    os.unlink(cache / EXPORT)
    _age(cache / "tables" / GROUPS[0], 60 * 60)  # now the newest of the three
    sizes = _parts(cache, export=False)
    cap = sizes[f"g/{GROUPS[0]}"] + sizes[f"g/{GROUPS[2]}"]  # room for two: GROUPS[1] (3 h) goes
    assert S.enforce(cache, cap, [], []) is not None
    assert sorted(p.name for p in (cache / "tables").iterdir()) == [GROUPS[0], GROUPS[2]]
    cap = sizes[f"g/{GROUPS[0]}"]
    assert S.enforce(cache, cap, [], []) is not None
    assert [p.name for p in (cache / "tables").iterdir()] == [GROUPS[0]]


def test_a_broken_ledger_means_a_full_scan_and_a_new_ledger(cache, measured):
    S.enforce(cache, HUGE, [], [])
    for text in ("{", json.dumps({"version": 1, "scanned": time.time(), "parts": {"g/x": -5}}), ""):
        (cache / S.LEDGER).write_text(text)
        measured.clear()
        assert S.enforce(cache, HUGE, [], []) is None
        assert len(measured) == 3 and _ledger(cache)["parts"] == _parts(cache)


def test_a_ledger_link_is_not_followed(cache, tmp_path, measured):
    mine = tmp_path / "mine.txt"
    mine.write_text("my own file")
    (cache / S.LEDGER).symlink_to(mine)
    for _ in range(2):  # no ledger: each conversion scans in full (as before the ledger)
        measured.clear()
        assert S.enforce(cache, HUGE, [], []) is None
        assert len(measured) == 3
    assert mine.read_text() == "my own file" and (cache / S.LEDGER).is_symlink()
    total = sum(_parts(cache).values())
    assert S.enforce(cache, total - 1, [], []) is not None  # (the cap holds all the same)


def test_a_hard_linked_ledger_is_not_written(cache, tmp_path, measured):
    mine = tmp_path / "mine.txt"
    mine.write_text("my own file")
    os.chmod(mine, 0o600)
    os.link(mine, cache / S.LEDGER)
    assert S.enforce(cache, HUGE, [], []) is None
    assert mine.read_text() == "my own file" and len(measured) == 3


def test_a_ledger_others_can_write_is_not_trusted(cache, measured):
    forged = {"version": 1, "scanned": time.time(), "parts": {f"g/{g}": 0 for g in GROUPS[:3]}}
    (cache / S.LEDGER).write_text(json.dumps(forged))
    os.chmod(cache / S.LEDGER, 0o666)
    total = sum(_parts(cache).values())
    note = S.enforce(cache, total - 1, [], [])
    assert note is not None and "removed the 1 least recently used" in note
    assert not (cache / "tables" / GROUPS[0]).exists()
    assert json.loads((cache / S.LEDGER).read_text()) == forged


@as_root
def test_another_users_ledger_is_not_trusted_nor_written(cache, measured):
    forged = {"version": 1, "scanned": time.time(), "parts": {f"g/{g}": 0 for g in GROUPS[:3]}}
    (cache / S.LEDGER).write_text(json.dumps(forged))
    os.chmod(cache / S.LEDGER, 0o600)
    os.lchown(cache / S.LEDGER, OTHER, OTHER)
    total = sum(_parts(cache).values())
    note = S.enforce(cache, total - 1, [], [])  # a forged "nothing cached" does not stop the cap
    assert note is not None and not (cache / "tables" / GROUPS[0]).exists() and len(measured) == 3
    assert json.loads((cache / S.LEDGER).read_text()) == forged and (cache / S.LEDGER).lstat().st_uid == OTHER


@as_root
def test_a_group_of_another_user_or_a_link_is_neither_counted_nor_removed(cache, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ENTRY).mkdir(parents=True)
    (elsewhere / ENTRY / "kernels.parquet").write_bytes(os.urandom(64 * 1024))
    (cache / "tables" / GROUPS[3]).symlink_to(elsewhere)
    foreign = _group(cache, "theirs-00000000000000aa", 64, 9 * 3600)
    for p in (foreign / ENTRY / "kernels.parquet", foreign / ENTRY / "meta.n2p", foreign / ENTRY, foreign):
        os.lchown(p, OTHER, OTHER)
    assert S.enforce(cache, HUGE, [], []) is None
    assert _ledger(cache)["parts"] == _parts(cache)
    os.utime(cache / EXPORT, (time.time() - 5 * 3600,) * 2)
    assert S.enforce(cache, 0, [], []) is not None  # everything of ours goes; theirs and the link stay
    assert sorted(p.name for p in (cache / "tables").iterdir()) == sorted([GROUPS[3], foreign.name])
    assert (elsewhere / ENTRY / "kernels.parquet").stat().st_size == 64 * 1024
    assert (foreign / ENTRY / "kernels.parquet").stat().st_size == 64 * 1024
    assert _ledger(cache)["parts"] == {}


def test_the_ledger_is_read_and_written_under_its_lock(cache, measured):
    """A conversion waits for the one keeping the cap (``flock``): it reads what that one wrote, and
    writes after it (a part that is no longer in the cache, in what that one wrote, is dropped)."""
    import fcntl
    import threading

    S.enforce(cache, HUGE, [], [])
    before = _ledger(cache)
    fd = os.open(cache / S.LEDGER, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    measured.clear()
    done: list = []
    other = threading.Thread(target=lambda: done.append(S.enforce(cache, HUGE, [], [])))
    other.start()
    other.join(0.5)  # (it waits for the lock: without one it would be done, and its ledger overwritten below)
    ours = {**before, "scanned": before["scanned"] - 10, "parts": {**before["parts"], "g/gone-00000000000000ee": 7}}
    data = json.dumps(ours).encode()
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    other.join()
    assert done == [None] and measured == []
    assert _ledger(cache) == {**before, "scanned": before["scanned"] - 10}

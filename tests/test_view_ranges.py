"""Issue 36: what an analyst sees when a view opens in wxparaver, checked statically (no GUI).

On the Quick start's trace (the real 4-rank MPI reports), on a generated GPU trace holding every kind
of record and on the CloverLeaf export (when present), for every shipped view and every view --cfgs
writes for the trace:
- the y range of each code-colour window covers every value of its types the trace holds (Paraver
  draws a value above ``window_maximum_y`` as background), unless Paraver computes it on load;
- every value the trace holds that Paraver's code palette draws black (like "no data") or white (like
  "Not created") has a custom colour, and a state view's Idle (0) is not black;
- histograms open as tables of numbers (Zoom disabled), and views written for the trace are tall
  enough for a 16-pixel label per row.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from cfg_parser import parse_cfg
from conftest import CLOVERLEAF, MPI4, convert, need
from test_cfgs import SHIPPED, build

from nsys2prv.core import registry as R
from nsys2prv.paraver import palette
from nsys2prv.paraver.trace_views import row_counts

ROW_PX = 16


def trace_values(prv: Path) -> tuple[dict[int, set[int]], set[int]]:
    """(event type -> values, states) of a .prv."""
    events: dict[int, set[int]] = defaultdict(set)
    states: set[int] = set()
    with prv.open() as f:
        next(f)
        for line in f:
            if line.startswith("2:"):
                fields = line.rstrip("\n").split(":")[6:]
                for t, v in zip(fields[::2], fields[1::2], strict=True):
                    events[int(t)].add(int(v))
            elif line.startswith("1:"):
                states.add(int(line.rsplit(":", 1)[1]))
    return events, states


def _traces(tmp: Path) -> dict[str, tuple[Path, Path]]:
    """name -> (trace base, --cfgs folder)."""
    out = {}
    mpi4 = tmp / "mpi4"
    convert(["-t", "mpi,nvtx,osrt", "-m", "--cfgs", tmp / "mpi4_views", *sorted(need(MPI4).glob("rank*.sqlite")), mpi4])
    out["mpi4"] = (mpi4, tmp / "mpi4_views")
    gpu = tmp / "gpu"
    convert(["-t", "all,osrt", "--cfgs", tmp / "gpu_views", build(tmp / "rank0.sqlite"), gpu])
    out["gpu"] = (gpu, tmp / "gpu_views")
    if CLOVERLEAF.exists():
        convert(["--cfgs", tmp / "clover_views", CLOVERLEAF, tmp / "clover"])
        out["clover"] = (tmp / "clover", tmp / "clover_views")
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranges")
    return {name: (base, views, trace_values(Path(f"{base}.prv"))) for name, (base, views) in _traces(tmp).items()}


def _views(views: Path) -> dict[str, str]:
    """Every view to check: the shipped files and the trace's own (--cfgs) files."""
    mine = {f"trace:{p.relative_to(views).as_posix()}": p.read_text() for p in views.rglob("*.cfg")}
    return {**{f"shipped:{k}": v for k, v in SHIPPED.items()}, **mine}


def _shown(win, events, states) -> set[int]:
    if win.kind != "single" or win.gradient:
        return set()
    if win.compose.get("compose_thread") not in ("As Is", "Stacked Val") or win.compose.get("topcompose1") != "As Is":
        return {0, 1}  # Sign, 1-Sign: inside or not
    if not win.types:
        return set(states) if win.functions.get("thread") == "State As Is" else set()
    return set().union(*(events.get(t, set()) for t in win.types))


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_every_window_covers_the_values_the_trace_holds(traces, name):
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    _, views, (events, states) = traces[name]
    checked = 0
    for rel, text in _views(views).items():
        for win in parse_cfg(text, rel).windows:
            shown = _shown(win, events, states)
            if not shown:
                continue
            checked += 1
            hidden = sorted(v for v in shown if v > win.maximum_y)[:5]
            assert win.compute_y_max or not hidden, f"{rel} window {win.name!r}: maximum {win.maximum_y} hides {hidden}"
    assert checked >= 10, checked


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_no_value_the_trace_holds_is_drawn_black_or_white(traces, name):
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    _, views, (events, states) = traces[name]
    for rel, text in _views(views).items():
        for win in parse_cfg(text, rel).windows:
            shown = _shown(win, events, states)
            bad = sorted(v for v in shown if v > 0 and palette.unreadable(v) and v not in win.palette)
            assert not bad, f"{rel} window {win.name!r}: values {bad[:5]} drawn black or white"
            if shown and not win.types:  # a state view: Idle has a colour, not the black of no data
                assert win.palette.get(R.IDLE) == palette.IDLE, f"{rel} window {win.name!r}: Idle is black"


def test_the_palette_port_gives_paraver_own_colours():
    """The values issue 36 saw: 2 white (CloverLeaf's main kernel), 0 black; 1 Running blue, 3 red."""
    assert palette.color_of(2) == (255, 255, 255) and palette.unreadable(2)
    assert palette.color_of(0) == palette.BACKGROUND and palette.unreadable(0)
    assert palette.color_of(1) == (0, 0, 255) and not palette.unreadable(1)
    assert palette.color_of(3) == (255, 0, 0) and not palette.unreadable(3)
    assert [v for v in range(1, 50) if palette.unreadable(v)] == [2, 16, 23, 29, 42]


@pytest.mark.parametrize("name", ["mpi4", "gpu"])
def test_histograms_open_as_numbers_and_views_fit_their_rows(traces, name):
    base, views, _ = traces[name]
    rows = row_counts(Path(f"{base}.row").read_text())
    for rel, text in _views(views).items():
        cfg = parse_cfg(text, rel)
        for a in cfg.analyzers:
            assert not a.zoom, f"{rel}: histogram {a.name!r} opens zoomed (an unlabelled colour table)"
            if rel.startswith("trace:"):
                level = cfg.windows[a.control - 1].level
                assert a.height >= ROW_PX * rows[level], f"{rel}: {a.name!r} {a.height} px for {rows[level]} rows"
        if rel.startswith("trace:"):
            for win in cfg.windows:
                assert win.height >= min(ROW_PX * rows[win.level], 1000), f"{rel}: {win.name!r} too short"


def test_nvtx_nesting_level_is_drawn_one_colour_per_level():
    """Not a gradient (which painted every row in the below-minimum colour): level 0 is no range."""
    for rel, text in SHIPPED.items():
        for win in parse_cfg(text, rel).windows:
            if win.name.startswith("NVTX nesting level"):
                assert not win.gradient and win.compute_y_max, rel

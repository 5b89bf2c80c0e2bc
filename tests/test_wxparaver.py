"""Issue 36, the GUI tier: our traces and views in BSC's Paraver GUI (wxparaver) itself, under Xvfb.

- every view ``--cfgs`` writes for a trace opens in wxparaver as a user opens it (``wxparaver
  TRACE.prv VIEW.cfg``) with all its windows and no dialog: no "Some of the events specified in the
  filter doesn't appear in the trace" question, no loading error; wxparaver does not crash;
- every window of every such view is drawn by wxparaver (``-i``: it saves the window as an image):
  no crash, an image for each.

Traces: the README's Quick start (tests/data/mpi4, 4 ranks), a generated 8-rank, 2-host GPU run
(tests/gpu_cluster.py), a generated 2-GPU NCCL run (scripts/make_nccl_example.py --mpi), the oracle
case gpu-shared (8 ranks sharing a GPU per host) and the generated CloverLeaf-shaped export
(tests/nsysgen.py's cloverleaf_like, ``-t all``): their views together are every shipped view but
views/nccl_payload.cfg (no trace here has NCCL payloads); and the real CloverLeaf export where it is.
Deselected by default (``-m gui``); skipped, naming the build command, where wxparaver or Xvfb is
absent.  The helpers (tests/wxparaver_driver.py) are checked in the fast
tier on the shipped cfgs, without a GUI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import oracle_cases as O
import pytest
from cfg_parser import parse_cfg
from conftest import CLOVERLEAF, MPI4, ROOT, convert, load_trace, need, validate_trace
from gpu_cluster import gpu_cluster_reports
from view_eval import Evaluator
from wxparaver_driver import (
    BUILD_HINT,
    Xvfb,
    export_histogram_text,
    find_wxparaver,
    load_in_gui,
    paraver_home,
    save_images,
    shown_windows,
    split_cfg,
)

gui = pytest.mark.gui
SHIPPED = sorted((ROOT / "nsys2prv" / "cfgs").rglob("*.cfg"))


# -- the helpers, without a GUI (fast tier) ------------------------------------------------------------
@pytest.mark.parametrize("cfg", SHIPPED, ids=[p.relative_to(ROOT / "nsys2prv" / "cfgs").as_posix() for p in SHIPPED])
def test_split_cfg_gives_one_loadable_cfg_per_shown_window(cfg):
    text = cfg.read_text()
    whole = parse_cfg(text, cfg.name)
    parts = split_cfg(text)
    opened = [w for w in whole.windows if w.open]
    assert [label.split("-", 1)[1] for label, _ in parts] == shown_windows(text)
    assert len(parts) == len(opened) + len(whole.analyzers)
    for label, part in parts:
        p = parse_cfg(part, f"{cfg.name}:{label}")
        if label.startswith("w"):  # the cfg cut after that timeline: it is the last window
            k = int(label[1:].split("-", 1)[0])
            assert [w.name for w in p.windows] == [w.name for w in whole.windows[:k]] and not p.analyzers
        else:  # every window, that histogram alone
            assert [w.name for w in p.windows] == [w.name for w in whole.windows]
            assert [a.name for a in p.analyzers] == [whole.analyzers[int(label[1:].split("-", 1)[0]) - 1].name]


def test_the_docs_pictures_are_wxparavers_and_small():
    """Every picture of README.md and docs/paraver-views.md is one scripts/render_views.py makes from
    wxparaver (DOC_PICTURES), is a PNG and weighs less than 150 KB."""
    spec = importlib.util.spec_from_file_location("render_views", ROOT / "scripts" / "render_views.py")
    assert spec is not None and spec.loader is not None
    render_views = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_views)
    made = {name for *_, name in render_views.DOC_PICTURES}
    shown = set()
    for doc in (ROOT / "README.md", ROOT / "docs" / "paraver-views.md"):
        for ref in re.findall(r"!\[[^]]*\]\(([^)]+)\)", doc.read_text()):
            path = (doc.parent / ref).resolve()
            assert path.parent == ROOT / "docs" / "img" and path.name in made, (doc.name, ref)
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size < 150_000, path
            shown.add(path.name)
    assert shown == made  # each picture made is shown
    assert sorted(p.name for p in (ROOT / "docs" / "img").glob("*.png")) == sorted(made)


# -- the histogram wxparaver exported (tests/oracles/wxparaver.json, issue 41) ----------------------------
WX = json.loads((ROOT / "tests" / "oracles" / "wxparaver.json").read_text())


def _values(h: dict) -> list[list[float]]:
    return [[float(v) for v in values] for _, values in h["rows"]]


def test_the_wxparaver_record_names_the_tool_its_source_and_the_steps():
    assert WX["tool"] == "wxparaver" and WX["version"].startswith("wxparaver 4.11.4 commit ")
    assert "github.com/bsc-performance-tools/wxparaver" in WX["version"]
    assert WX["recorded_by"] == "python3 scripts/record_wxparaver_oracle.py"
    assert (WX["case"], WX["view"]) == ("gpu-shared", "kernel_time") and WX["steps"][1].endswith("kernel_time.cfg")
    assert len(WX["histogram"]["rows"]) == 19 and WX["histogram"]["columns"] == ["saxpy"]


def test_wxparaver_and_paramedir_recorded_the_same_numbers():
    """The GUI's export and paramedir (tests/oracles/paramedir.json) agree cell by cell."""
    pm = O.load()["cases"][WX["case"]]["views"][WX["view"]]
    assert _values(WX["histogram"]) == _values(pm) and WX["histogram"]["columns"] == pm["columns"]
    assert sum(v for row in _values(WX["histogram"]) for v in row) == 8 * 60  # 8 ranks, one 60 us saxpy each (us)


def test_the_view_evaluator_computes_wxparavers_histogram(tmp_path):
    """A fresh conversion of the case, evaluated in-repo (tests/view_eval.py), gives what wxparaver showed."""
    trace = validate_trace(str(O.convert(WX["case"], tmp_path)))
    rows = Evaluator(trace).histogram((O.ANALYSIS / f"{WX['view']}.cfg").read_text())
    assert [sorted(float(t) for t in row.values() if t) for row in rows] == [
        sorted(v for v in values if v) for values in _values(WX["histogram"])
    ]


# -- wxparaver -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wx():
    """(wxparaver, environment with DISPLAY and a scratch HOME) on a private Xvfb."""
    wxparaver = find_wxparaver()
    if wxparaver is None:
        pytest.skip(f"wxparaver (BSC's Paraver GUI) not found on PATH or in $PARAVER_HOME/bin: build it: {BUILD_HINT}")
    for tool, package in (("Xvfb", "xvfb"), ("xwininfo", "x11-utils"), ("import", "imagemagick")):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found: apt-get install {package} (scripts/build_wxparaver.sh installs it)")
    scratch = Path(tempfile.mkdtemp(prefix="wxparaver-home-"))
    with Xvfb() as x:
        home = paraver_home(scratch, wxparaver, x.display)

        yield wxparaver, dict(os.environ, HOME=str(home), DISPLAY=x.display)
    shutil.rmtree(scratch, ignore_errors=True)


def _trace(name: str, where: Path) -> tuple[Path, Path]:
    cfgs, out = where / f"{name}-cfgs", where / name
    if name == "mpi4":
        convert(["-t", "mpi,nvtx,osrt", "-m", "--cfgs", cfgs, *sorted(MPI4.glob("rank*.sqlite")), out])
    elif name == "gpu8":
        convert(["-m", "--cfgs", cfgs, *gpu_cluster_reports(where / "gpu8-reports"), out])
    elif name == "nccl2":  # scripts/make_nccl_example.py: 2 GPUs, NCCL all-reduce kernels, MPI
        spec = importlib.util.spec_from_file_location("nccl_example", ROOT / "scripts" / "make_nccl_example.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        (where / "nccl").mkdir()
        convert(
            ["-m", "--cfgs", cfgs, *(mod.rank_report(where / "nccl" / f"rank{r}.sqlite", r, True) for r in (0, 1)), out]
        )
    elif name == "gpu-shared":  # the oracle case: 8 ranks sharing a GPU per host (gpu_activity's type)
        convert(["--cfgs", cfgs, *O.CASES[name][2](where), out])
    elif name == "clover-real":  # someone else's export: skipped, naming it, where absent
        convert(["-t", "all", "--cfgs", cfgs, need(CLOVERLEAF), out])
    else:
        from nsysgen import cloverleaf_like

        convert(["-t", "all", "--cfgs", cfgs, cloverleaf_like(where / "clover.sqlite"), out])
    return Path(f"{out}.prv"), cfgs


@pytest.fixture(scope="module", params=["mpi4", "gpu8", "nccl2", "gpu-shared", "clover-generated", "clover-real"])
def trace(request, tmp_path_factory):
    """(name, TRACE.prv, its --cfgs directory)."""
    prv, cfgs = _trace(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, prv, cfgs


@gui
def test_every_view_opens_in_wxparaver_with_its_windows_and_no_dialog(wx, trace, tmp_path):
    wxparaver, env = wx
    name, prv, cfgs = trace
    views = sorted(cfgs.rglob("*.cfg"))
    assert views, f"--cfgs wrote no view for {name}"
    problems = []
    present = set(load_trace(str(prv)[:-4]).events["type"].unique().tolist())
    for cfg in views:
        rel = cfg.relative_to(cfgs).as_posix()
        res = load_in_gui(wxparaver, prv, cfg, env, shots=tmp_path / (rel.replace("/", "__") + ".png"))
        if res.exit is not None:
            problems.append(f"{rel}: wxparaver ended (exit {res.exit}): {res.output[-3:]}")
        elif res.dialogs:
            absent = sorted({t for w in parse_cfg(cfg.read_text()).windows for t in w.types} - present)
            hint = f"; event types it filters that the trace has none of: {absent}" if absent else ""
            problems.append(f"{rel}: dialog {res.dialogs}{hint} (screen: {res.screenshot})")
    assert not problems, f"{len(problems)} of {len(views)} views of {name}:\n" + "\n".join(problems)


@gui
def test_wxparaver_draws_every_window_of_every_view(wx, trace, tmp_path):
    """Each window alone (split_cfg) saved by ``wxparaver -i``.  wxparaver 4.11.4's -i crashes on
    derived (composed) timelines whatever the trace: exactly those are drawn by opening them in the
    GUI instead (the window must then be on the screen, drawn, with no dialog)."""
    wxparaver, env = wx
    name, prv, cfgs = trace
    problems, drawn, from_screen = [], 0, 0
    for cfg in sorted(cfgs.rglob("*.cfg")):
        rel = cfg.relative_to(cfgs).as_posix()
        for label, text in split_cfg(cfg.read_text()):
            part = tmp_path / "part.cfg"
            part.write_text(text)
            res = save_images(wxparaver, prv, part, tmp_path / "img", env)
            main = [p for p in res["images"] if p.name == "img.png"]
            composed = label.startswith("w") and parse_cfg(text).windows[-1].kind == "composed"
            if res["exit"] == 0 and main:
                drawn += 1
            elif composed and res["exit"] in (139, -11):  # SIGSEGV (139 through the launcher script)
                gui = load_in_gui(wxparaver, prv, part, env, grab=(label.split("-", 1)[1], tmp_path / "grab.png"))
                if gui.grabbed is None or gui.dialogs:
                    problems.append(f"{rel} {label}: -i crashed; in the GUI: dialogs {gui.dialogs}, exit {gui.exit}")
                from_screen += gui.grabbed is not None
            else:
                problems.append(f"{rel} {label}: exit {res['exit']}, images {[p.name for p in res['images']]}")
            for p in [*res["images"], tmp_path / "grab.png"]:
                p.unlink(missing_ok=True)
    assert not problems, (
        f"{len(problems)} windows of {name} not drawn ({drawn} by -i, {from_screen} from the screen):\n"
        + "\n".join(problems)
    )


@gui
def test_wxparaver_exports_the_recorded_histogram(wx, tmp_path):
    """The histogram of tests/oracles/wxparaver.json, saved again from the GUI as a user does."""
    wxparaver, env = wx
    base = O.convert(WX["case"], tmp_path / "trace")
    dest = tmp_path / "histogram.csv"
    res = export_histogram_text(wxparaver, Path(f"{base}.prv"), O.ANALYSIS / f"{WX['view']}.cfg", env, dest)
    assert (res.dialogs, res.exit) == ([], None) and dest.exists(), res
    assert O.parse_histogram(dest.read_text()) == WX["histogram"]

"""Paraver's paramedir answers, recorded, held against the product and the in-repo view evaluator.

tests/oracles/paramedir.json holds what paramedir (built from bsc-performance-tools/paraver-kernel:
its version, commit and command are in the file) computed with every shipped analysis view on the
example traces of tests/oracle_cases.py; ``python3 scripts/record_oracles.py`` re-records them and
says what changed.  These tests need no paramedir: they convert the same inputs again and check that
OUT.pop.json gives the recorded views' numbers (scripts/check_views.py's comparison) and that
tests/view_eval.py computes every recorded histogram, so a trace, a view or a POP number that drifts
from what Paraver computed fails here, on any machine.
"""

from __future__ import annotations

import importlib.util

import oracle_cases as O
import pytest
from paraver_validator import validate_trace
from trace_tools import intervals
from view_eval import Evaluator

RECORDED = O.load()


def _check_views():
    spec = importlib.util.spec_from_file_location("check_views", O.ROOT / "scripts" / "check_views.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHECK_VIEWS = _check_views()

# per case: (quantity, values compared) of scripts/check_views.py against the recorded histograms
COMPARED = {
    "mpi4": [
        ("host useful per process", 4),
        ("device useful per GPU (GPUs of one process)", 0),
        ("device transfer per GPU (GPUs of one process)", 0),
        ("device active per GPU (GPUs of one process)", 0),
        ("device idle per GPU (GPUs of one process)", 0),
        ("device useful per GPU (node views, hosts of one GPU)", 0),
        ("device transfer per GPU (node views, hosts of one GPU)", 0),
        ("device active per GPU (node views, hosts of one GPU)", 0),
        ("device idle per GPU (node views, hosts of one GPU)", 0),
    ],
    "gpu-shared": [
        ("host useful per process", 8),
        ("device useful per GPU (GPUs of one process)", 0),
        ("device transfer per GPU (GPUs of one process)", 0),
        ("device active per GPU (GPUs of one process)", 0),
        ("device idle per GPU (GPUs of one process)", 0),
        ("device useful per GPU (node views, hosts of one GPU)", 2),
        ("device transfer per GPU (node views, hosts of one GPU)", 2),
        ("device active per GPU (node views, hosts of one GPU)", 2),
        ("device idle per GPU (node views, hosts of one GPU)", 2),
        ("device useful per GPU (GPU rows)", 2),
        ("device transfer per GPU (GPU rows)", 2),
        ("device idle per GPU (GPU rows)", 2),
    ],
    "clover-generated": [
        ("host useful per process", 1),
        ("device useful per GPU (GPUs of one process)", 1),
        ("device transfer per GPU (GPUs of one process)", 1),
        ("device active per GPU (GPUs of one process)", 1),
        ("device idle per GPU (GPUs of one process)", 1),
        ("device useful per GPU (node views, hosts of one GPU)", 1),
        ("device transfer per GPU (node views, hosts of one GPU)", 1),
        ("device active per GPU (node views, hosts of one GPU)", 1),
        ("device idle per GPU (node views, hosts of one GPU)", 1),
    ],
}


def test_the_record_names_the_tool_its_source_and_the_command():
    assert RECORDED["tool"] == "paramedir"
    assert "paraver-kernel" in RECORDED["version"] and "commit " in RECORDED["version"]
    assert RECORDED["command"] == "paramedir OUT.prv nsys2prv/cfgs/analysis/VIEW.cfg VIEW.txt"
    assert set(RECORDED["cases"]) == set(O.CASES) == set(COMPARED)
    for case in RECORDED["cases"].values():
        assert set(case["views"]) <= set(O.views())
        assert case["conversion"].startswith("nsys2prv ")


@pytest.fixture(scope="module", params=sorted(O.CASES))
def converted(request, tmp_path_factory):
    base = O.convert(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, base, validate_trace(str(base))


def test_pop_json_gives_the_recorded_paramedir_numbers(converted, tmp_path):
    case, base, _ = converted
    views = RECORDED["cases"][case]["views"]
    files = {}
    for key, rel in CHECK_VIEWS.VIEWS.items():
        files[key] = tmp_path / f"{key}.txt"
        h = views[rel.split("/")[-1].removesuffix(".cfg")]
        if h is not None:  # paramedir wrote no file: the view's types are not in the trace
            files[key].write_text(O.histogram_text(h))
    results = CHECK_VIEWS.compare_histograms(base, files)
    assert [(what, n) for what, n, _ in results] == COMPARED[case]
    assert [(what, diff) for what, _, diff in results if diff] == []


# views the evaluator does not compute (other analyzers than semantic x time, the Stacked Val composition)
NOT_EVALUATED = {
    "kernel_avg_duration",
    "kernel_count",
    "launch_matrix",
    "message_matrix",
    "nvtx_time",
    "host_during_gpu_idle",  # (a derived window's product)
}
EVALUATED = {"mpi4": 3, "gpu-shared": 16, "clover-generated": 13}  # views with a recorded histogram


ZERO = {"host_useful": "Idle"}  # paramedir's column of value 0 (a state view: the state's name), else "0"


def _rows(view: str, h: dict) -> list[list[float]]:
    """Per row, the non-zero values but that of value 0 (the evaluator leaves value 0 out, paramedir
    labels columns by value or by state name: the values per row are compared)."""
    zero = ZERO.get(view, "0")
    return [sorted(float(v) for c, v in zip(h["columns"], vals) if v != 0 and c != zero) for _, vals in h["rows"]]


def test_the_view_evaluator_computes_the_recorded_histograms(converted):
    case, base, trace = converted
    ev = Evaluator(trace)
    checked = []
    for view, h in sorted(RECORDED["cases"][case]["views"].items()):
        if h is None or view in NOT_EVALUATED:  # paramedir wrote no histogram: the view's types are absent
            continue
        rows = ev.histogram((O.ANALYSIS / f"{view}.cfg").read_text())
        assert [sorted(float(t) for t in row.values() if t) for row in rows] == _rows(view, h), (case, view)
        checked.append(view)
    assert len(checked) == EVALUATED[case], checked


def test_record_oracles_says_what_changed():
    spec = importlib.util.spec_from_file_location("record_oracles", O.ROOT / "scripts" / "record_oracles.py")
    assert spec is not None and spec.loader is not None
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    old = {"c": {"views": {"v": {"columns": ["1"], "rows": [["Rank 0", [5]], ["Rank 1", [7]]]}, "w": None}}}
    new = {"c": {"views": {"v": {"columns": ["1"], "rows": [["Rank 0", [5]], ["Rank 1", [8]]]}, "w": None}}}
    assert rec.changes(old, old) == []
    assert rec.changes(old, new) == ["c v [Rank 1] [1]: 7 -> 8"]
    assert rec.changes(old, {}) == ["c: case gone"]


def _cells(h: dict | None, by_position: bool) -> dict:
    """{(row index, column): value} of the non-zero cells (a matrix: the column's index, its labels
    being thread names, not unique)."""
    if h is None:
        return {}
    return {
        (i, j if by_position else c): v
        for i, (_, vals) in enumerate(h["rows"])
        for j, (c, v) in enumerate(zip(h["columns"], vals))
        if v
    }


def test_the_views_the_evaluator_lacks_agree_with_the_trace(converted):
    """Kernel count and average duration per thread and kernel, launch links and bytes per thread
    pair: paramedir's recorded answers, counted from the trace's records directly."""
    case, _, trace = converted
    views = RECORDED["cases"][case]["views"]
    first, g = [], 0
    for n, _ in trace.header.apps[0]:
        first.append(g)
        g += n
    row = lambda task, thread: first[task - 1] + thread - 1  # noqa: E731
    want: dict[str, dict] = {"kernel_count": {}, "kernel_avg_duration": {}, "launch_matrix": {}, "message_matrix": {}}
    if 63000006 in trace.pcf.types:
        k = intervals(trace, 63000006)
        k = k.assign(row=[row(a, b) for a, b in zip(k["task"], k["thread"])], dur=k["end"] - k["start"])
        for (r, label), d in k.groupby(["row", "label"])["dur"]:
            want["kernel_count"][r, label] = len(d)
            want["kernel_avg_duration"][r, label] = round(float(d.mean()) / 1000, 2)  # (the view is in µs)
    for c in trace.comms.itertuples(index=False):
        cell = (row(c.task, c.thread), row(c.rtask, c.rthread))
        if c.tag in (55001, 55002):
            want["launch_matrix"][cell] = want["launch_matrix"].get(cell, 0) + 1
        elif c.size:  # (the message matrix leaves the launch links out: MPI messages only)
            want["message_matrix"][cell] = want["message_matrix"].get(cell, 0) + c.size
    # the launch matrix hides its empty columns (a CPU thread only receives a launch's 0 cell): its columns
    # are the rows that receive launches, in row order
    shown = sorted({col for _, col in want["launch_matrix"]})
    if views["launch_matrix"] is not None:
        assert views["launch_matrix"]["columns"] == [trace.row["THREAD"][c] for c in shown], case
    want["launch_matrix"] = {(r, shown.index(c)): n for (r, c), n in want["launch_matrix"].items()}
    for view, cells in want.items():
        assert _cells(views[view], "matrix" in view) == cells, (case, view)
    assert {v: len(c) for v, c in want.items()} == NON_ZERO_CELLS[case]


NON_ZERO_CELLS = {
    "mpi4": {"kernel_count": 0, "kernel_avg_duration": 0, "launch_matrix": 0, "message_matrix": 0},
    "gpu-shared": {"kernel_count": 8, "kernel_avg_duration": 8, "launch_matrix": 9, "message_matrix": 0},
    "clover-generated": {"kernel_count": 10, "kernel_avg_duration": 10, "launch_matrix": 1, "message_matrix": 0},
}

"""Stage C is one function (``pipeline.slices.translate_slice``, a report not cut being one slice of
it) and has one implementation of each of its steps (``pipeline/stages.py``): the launch call of every GPU
activity (``translate/launches.py``, found by stage A and stored with the tables), the -f clip
(``stages.clip``) and a POP partial (``metrics.pop.collect_partial``, called once per report or
slice)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys2prv.metrics import pop
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.resources import Model, Task
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import Launches, match, restrict

PACKAGE = Path(__file__).resolve().parent.parent / "nsys2prv"
STAGE_C = ("pipeline/stages.py", "pipeline/slices.py")
MATCHING = {"match_parts", "pair_codes", "match", "of_tables", "restrict"}  # translate/launches.py's
CLIPPING = {"in_window", "clip"}  # pipeline/stages.py's


def _functions(rel: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
    return {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}


def _calls(fn: ast.AST) -> list[str]:
    """The names called in ``fn`` (``a.b.c(...)``: ``c``), with the object for attributes (``b.c``)."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                out.append(f.id)
            elif isinstance(f, ast.Attribute):
                owner = f.value.id if isinstance(f.value, ast.Name) else ""
                out.append(f"{owner}.{f.attr}")
    return out


def test_launch_matching_and_clipping_are_defined_once():
    """Neither stage C module defines launch matching; only ``stages`` defines the clip, and the
    slices call it rather than cutting rows to the window themselves."""
    for rel in STAGE_C:
        assert not MATCHING & set(_functions(rel)), f"{rel} defines launch matching"
    assert CLIPPING <= set(_functions("pipeline/stages.py")) and not CLIPPING & set(_functions("pipeline/slices.py"))
    everywhere = [
        (path, f.name)
        for path in PACKAGE.rglob("*.py")
        for f in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(f, ast.FunctionDef) and f.name in {"match_parts", "pair_codes", "in_window"}
    ]
    assert sorted(name for _, name in everywhere) == ["in_window", "match_parts", "pair_codes"], everywhere
    for rel in STAGE_C:
        for name, fn in _functions(rel).items():
            called = {c.rsplit(".", 1)[-1] for c in _calls(fn)}
            # no join or search on correlation ids, no cut of rows to the -f window but ``stages.clip``'s
            assert not {"match_parts", "pair_codes", "merge"} & called, (rel, name)
            assert "in_window" not in called or (rel, name) == ("pipeline/stages.py", "clip"), (rel, name)
            texts = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            # the launch calls come from stage A (``scan._Facts.store_launches``) or ``launches.of_tables``
            assert "corr" not in texts and not {"match", "match_parts"} & called, (rel, name)
    # the slice's calls are found through the rows ``launches.match`` gave, searchsorted on positions only
    links = _calls(_functions("pipeline/slices.py")["_links"])
    assert "restrict" in links and "stages.clip" in links


def _callers(names: set[str]) -> dict[str, set[tuple[str, str]]]:
    """Every function of the package that calls one of ``names`` (``f``: by its last name; ``m.f``:
    as an attribute of ``m``), by name called."""
    out: dict[str, set[tuple[str, str]]] = {n: set() for n in names}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for f in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(f, ast.FunctionDef):
                for c in _calls(f):
                    for name in {c, c.rsplit(".", 1)[-1]} & names:
                        out[name].add((rel, f.name))
    return out


SLICE = "pipeline/slices.py"


def test_stage_c_is_one_function_a_whole_report_one_slice():
    """One function does stage C, ``slices.translate_slice``: a report not cut is one slice of it.
    Its steps (reading, clip, POP partial, translation, links, chunk) are called from it and its
    helpers only, so a second entry point (a whole-report function beside it, as
    ``stages.translate_report`` was) fails here, whether it reuses the steps or copies them."""
    steps = {
        "read_whole",  # a report of one slice: its rows
        "split_tables",
        "clip_job",
        "pop_share",
        "collect_partial",
        "translate_tables",
        "job_context",
        "gpu_attribution.partial",  # one slice only
    }
    got = _callers(steps)
    assert got == {
        "read_whole": {(SLICE, "translate_slice")},
        "split_tables": {("pipeline/stages.py", "read_whole"), (SLICE, "_read_slice")},
        "clip_job": {(SLICE, "translate_slice")},
        "pop_share": {(SLICE, "translate_slice")},
        "collect_partial": {(SLICE, "_window_partial")},
        "translate_tables": {(SLICE, "translate_slice"), (SLICE, "_links"), (SLICE, "_save_states")},
        "job_context": {(SLICE, "translate_slice"), (SLICE, "_save_states")},
        "gpu_attribution.partial": {(SLICE, "translate_slice")},
    }, got
    # the helpers of one slice's steps are called by it alone; the executor runs it for every report
    helpers = _callers({"_read_slice", "_running", "_window_partial", "_links", "_save_states", "translate_slice"})
    assert all(v == {(SLICE, "translate_slice")} for k, v in helpers.items() if k != "translate_slice"), helpers
    assert helpers["translate_slice"] == set(), helpers  # (only mapped by the executor, never called)
    mapped = [
        (path.relative_to(PACKAGE).as_posix(), ast.unparse(node.args[0]))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "map" and node.args
    ]
    stage_c = [m for m in mapped if m[0].startswith("pipeline/") and "translate" in m[1]]
    assert stage_c == [("pipeline/conversion.py", "slices.translate_slice"), (SLICE, "translate_slice")], mapped
    defined = {
        f.name
        for path in PACKAGE.rglob("*.py")
        for f in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(f, ast.FunctionDef)
    }
    assert "translate_report" not in defined
    # what only one slice does is a condition on the slice count in that one function
    body = ast.unparse(_functions(SLICE)["translate_slice"])
    assert "one = plan.slices == 1" in body and "job.attribution and one" in body and "links=one" in body


def test_the_first_call_of_a_shared_correlation_id_is_the_launch():
    tid = (1 << 48) + (7 << 24) + np.array([8, 8, 8, 9], np.int64)  # process 7's threads 8 and 9
    gpid = np.full(4, (1 << 48) + (7 << 24), np.int64)
    got = match(tid, np.array([5, 6, 5, -1]), {"kernels": (gpid, np.array([5, 6, 7, -1]))})
    assert got.shared == 1 and got.rows["kernels"].tolist() == [0, 1, -1, -1]
    # a -f clip dropping call 0 and kernel 1: kernel 0 keeps no call, kernel 2 none, kernel 3 none
    cut = restrict(got, np.array([False, True, True, True]), {"kernels": np.array([True, False, True, True])}, 1)
    assert cut.rows["kernels"].tolist() == [-1, -1, -1] and cut.shared == 1
    kept = restrict(got, np.array([True, False, True, True]), None, 0)
    assert kept.rows["kernels"].tolist() == [0, -1, -1, -1]
    assert Launches().of("memcpy", 2).tolist() == [-1, -1]
    # no call with a correlation id (an export without the column): no activity has a launch call
    none = match(tid, np.full(4, -1), {"kernels": (gpid, np.array([5, 6, 7, -1]))})
    assert none.shared == 0 and none.rows["kernels"].tolist() == [-1, -1, -1, -1]


@pytest.mark.parametrize("processes", [1, 3])
@pytest.mark.parametrize("without_id", [False, True])
def test_each_activitys_launch_is_the_first_call_of_its_process_and_id(processes, without_id):
    """``match`` against the rule read literally (each activity: the first call of the same process and
    correlation id, -1 none), on one process (its codes without hashing) and on three, with calls
    without an id (negative: dropped before matching) or none."""
    rng = np.random.default_rng(processes + 10 * without_id)
    pids = (1 << 48) + (rng.integers(1, processes + 1, 2_000) << 24)
    tid = pids + rng.integers(1, 4, 2_000)
    corr = rng.integers(-3 if without_id else 0, 400, 2_000)
    acts = {
        "kernels": ((1 << 48) + (rng.integers(1, processes + 1, 700) << 24), rng.integers(-1, 420, 700)),
        "memcpy": ((1 << 48) + (rng.integers(1, processes + 1, 90) << 24), rng.integers(0, 420, 90)),
    }
    got = match(tid, corr, acts)
    first: dict = {}
    for i, (t, c) in enumerate(zip(tid.tolist(), corr.tolist())):
        if c >= 0:
            first.setdefault((t >> 24, c), i)
    for kind, (gpid, ids) in acts.items():
        assert got.rows[kind].tolist() == [first.get((g >> 24, c), -1) for g, c in zip(gpid.tolist(), ids.tolist())]
    assert got.shared == int((corr >= 0).sum()) - len(first)


def test_the_model_gives_the_task_of_each_report_and_pid():
    """One table of the model's processes ((report, pid) -> ``Model.processes``) answers both views:
    the trace's task (row) of each process, ``Model.tasks_of``, and POP's, ``Model.pop.task_of``
    (what ``collect_partial`` and the replay's messages use); -1 for a process the view lacks."""
    tasks = [Task(r, pid, None, "", "h") for r, pid in ((0, 100), (1, 102), (1, 101), (2, 100))]
    model = Model(["h"], tasks, [], {})
    assert model.tasks_of(1, [101, 102, 100, 101]).tolist() == [2, 1, -1, 2]
    assert model.tasks_of(0, [100]).tolist() == [0] and model.tasks_of(2, [100, 103]).tolist() == [3, -1]
    assert model.tasks_of(3, [100]).tolist() == [-1] and model.tasks_of(1, []).tolist() == []
    assert model.pop.task_of(1, [101, 102, 100]).tolist() == [2, 1, -1]  # (every task POP's too)
    # a process only POP has (pid 103 of report 1, on host g), one only the trace has (pid 100 of report 2)
    only_pop = Task(1, 103, None, "", "g", node=1)
    tasks[3].pop = False
    mixed = Model(["h"], tasks, [], {}, processes=[*tasks[:3], only_pop, tasks[3]])
    assert mixed.tasks_of(1, [103, 101]).tolist() == [-1, 2] and mixed.tasks_of(2, [100]).tolist() == [3]
    assert mixed.pop.task_of(1, [103, 101]).tolist() == [3, 2] and mixed.pop.task_of(2, [100]).tolist() == [-1]
    assert [t.pid for t in mixed.pop.tasks] == [100, 102, 101, 103] and mixed.pop.nodes == ["h", "g"]


def test_the_models_thread_tables_hold_every_report_apart():
    """``Model.index_threads``: one table per side over every report ((report, key) -> global thread),
    not one per report; a key is found in its report only, and a report without keys finds none."""
    model = Model(["h"], [], [], {})
    model.index_threads(
        {0: ([11, 12], [0, 1]), 2: ([11], [5])},
        {0: ([(7, 0, 13, 0), (7, 0, 13, 1)], [2, 3]), 2: ([(7, 0, 13, 0)], [6])},
        {2: ([0], [7])},
    )
    assert model.cpu_threads(0, [12, 11, 13]).tolist() == [1, 0, -1]
    assert model.cpu_threads(2, [11, 12]).tolist() == [5, -1] and model.cpu_threads(1, [11]).tolist() == [-1]
    gpid = [(7 << 24) + (1 << 48)] * 3
    assert model.gpu_threads(0, gpid, [0, 0, 0], [13, 13, 14], [1, 0, 0]).tolist() == [3, 2, -1]
    assert model.gpu_threads(2, gpid[:2], [0, 0], [13, 13]).tolist() == [6, 6]  # (lane 0 by default)
    assert model.gpu_threads(1, gpid[:1], [0], [13]).tolist() == [-1]
    assert model.metric_threads(2, [0, 1]).tolist() == [7, -1] and model.metric_threads(0, [0]).tolist() == [-1]
    assert model.cpu_threads(0, []).tolist() == [] and Model(["h"], [], [], {}).metric_threads(0, [0]).tolist() == [-1]


def test_a_slices_pop_partial_measures_the_cut_rows_and_owns_its_rows():
    """``collect_partial`` once per slice: the intervals measured are ``cut`` (running in the slice,
    cut to it), the tasks' first and last rows, the ranges and the MPI calls are the slice's own."""
    gpid = (1 << 48) + (7 << 24)
    tid = gpid + 8
    own = {
        "mpi": pd.DataFrame(
            {
                "tid": [tid],
                "start": [1_000],
                "end": [5_000],
                "name": ["MPI_Barrier"],
                "comm": [0],
                "peer": [-1],
                "source": ["tables"],
            }
        ),
        "nvtx": pd.DataFrame({"start": [900], "end": [6_000], "name": ["step"], "kind": ["pushpop"]}),
    }
    running = pd.DataFrame(
        {"tid": [tid], "start": [0], "end": [2_000], "name": ["MPI_Send"], "comm": [0], "peer": [1], "source": ["x"]}
    )
    cut = {"mpi": pd.concat([own["mpi"], running], ignore_index=True).assign(start=[1_000, 1_000], end=[3_000, 2_000])}
    model = Model(["h"], [Task(0, 7, 0, "env", "h")], [], {})  # one task, POP's too: pid 7 of report 0
    ctx = Context(0, Clock(10), model, frozenset(), {}, own)
    part = pop.collect_partial(ctx, None, False, None, cut=cut)
    task, first, last = part.spans
    assert task.tolist() == [0] and first.tolist() == [1_010] and last.tolist() == [5_010]  # own, aligned
    assert part.host[2].tolist() == [1_010] and part.host[3].tolist() == [3_010]  # the union of the cut calls
    assert part.mpi_calls is not None and part.mpi_calls["start"].tolist() == [1_010]
    assert part.mpi_calls["end"].tolist() == [5_010] and part.nvtx["name"].tolist() == ["step"]
    whole = pop.collect_partial(ctx, None, False)
    assert whole.host[3].tolist() == [5_010] and whole.spans[2].tolist() == [5_010]


def test_every_kind_declares_its_columns_and_read_kind_holds_a_table_to_them(monkeypatch):
    """Each kind declares the normalised columns stage C relies on; a table out of step with them is
    a one-line error naming the file and the column, not a KeyError in a worker."""
    from dataclasses import replace

    import pytest

    from nsys2prv import kinds as K
    from nsys2prv.core.errors import UserError
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.devices import device_map
    from nsys2prv.nsys.readers.base import Reader
    from nsys2prv.pipeline.report import read_kind

    for kind in K.KINDS:
        declared = dict(kind.columns)
        assert declared.get("start") == declared.get("end") == K.INT, kind.name
        if kind.side == K.GPU:
            assert all(declared.get(c) == K.INT for c in ("gpid", "device", "stream", "corr", "gpu")), kind.name
    assert dict(K.BY_NAME["kernels"].columns)["nccl"] == K.FLAG and dict(K.BY_NAME["mpi"].columns)["name"] == K.TEXT
    path = Path(__file__).parent / "data" / "mpi4" / "rank0.sqlite"
    report = Report(path)
    try:
        devmap = device_map(report)
        good = read_kind(report, "mpi", devmap)
        assert good is not None and K.check_columns(K.BY_NAME["mpi"], good.table) is None and len(good.table) > 0
        assert K.check_columns(K.BY_NAME["mpi"], good.table.drop(columns="tag")) == "its mpi table has no column tag"
        mpi = K.BY_NAME["mpi"]

        def floats(rep):
            res = mpi.reader.read(rep)
            res.table = res.table.assign(comm=res.table["comm"].astype(float))
            return res

        monkeypatch.setitem(K.BY_NAME, "mpi", replace(mpi, reader=Reader(mpi.reader.tables, floats)))
        with pytest.raises(UserError) as err:
            read_kind(report, "mpi", devmap)
        assert str(err.value) == (
            f"{path}: its mpi table's column comm holds float64, not integer values "
            f"(nsys2prv {__import__('nsys2prv').__version__} cannot read this export)"
        )
    finally:
        report.close()

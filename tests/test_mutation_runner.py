"""scripts/mutation_test.py: the mutants it makes (the runs themselves are the slow tier: the script)."""

from __future__ import annotations

import ast
import importlib.util
import sys

from conftest import ROOT


def _runner():
    spec = importlib.util.spec_from_file_location("mutation_test", ROOT / "scripts" / "mutation_test.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mutation_test"] = mod  # (its dataclass looks its module up)
    spec.loader.exec_module(mod)
    return mod


M = _runner()

SOURCE = '''"""doc 5"""


def keep_positive(x, out):
    """Only x >= 0."""
    keep = x >= 0
    if len(x) and out is not None:
        out.append(1)
    return x[keep]


def record(out):
    out.append(2)
    out.append(3)
'''


def _all(source: str) -> list[tuple[str, str]]:
    return [(m.operator, M.mutated_source(source, m)) for m in M.mutants_of("m.py", source)]


def test_each_operator_makes_the_expected_mutant():
    got = _all(SOURCE)
    body = lambda s: ast.unparse(ast.parse(s))  # noqa: E731
    base = body(SOURCE)
    expect = {
        ("compare", base.replace("keep = x >= 0", "keep = x > 0")),
        ("constant", base.replace("keep = x >= 0", "keep = x >= 1")),
        ("constant", base.replace("out.append(1)", "out.append(2)")),
        ("constant", base.replace("out.append(2)", "out.append(3)", 1)),
        ("constant", base.replace("out.append(3)", "out.append(4)")),
        ("compare", base.replace("out is not None", "out is None")),
        ("negate", base.replace("if len(x) and out is not None:", "if not (len(x) and out is not None):")),
        ("and-or", base.replace("if len(x) and out is not None:", "if len(x) or out is not None:")),
        ("drop-filter", base.replace("return x[keep]", "return x")),
        ("return-early", base.replace("def record(out):\n", "def record(out):\n    return\n")),
    }
    assert set(got) == expect and len(got) == len(expect)  # docstrings and strings are left alone


def test_the_audits_two_surviving_mutations_are_among_the_mutants():
    """Receiving only tags > 0 (the matcher's tag filter) and dropping the MPI reader's NULL time filter."""
    wanted = {
        ("nsys2prv/translate/mpi_messages.py", "compare"): ("(sends['tag'] > 0)", "(recvs['tag'] > 0)"),
        ("nsys2prv/nsys/readers/mpi.py", "drop-filter"): ("\n    df = df\n",),
    }
    found = set()
    for module, operator in wanted:
        source = (ROOT / module).read_text()
        for m in M.mutants_of(module, source):
            if m.operator == operator:
                mutated = M.mutated_source(source, m)
                found |= {(module, text) for text in wanted[module, operator] if text in mutated}
    assert found == {(module, text) for (module, _), texts in wanted.items() for text in texts}


def test_sampling_is_seeded_and_every_group_has_tests():
    mutants = M.mutants_of("m.py", SOURCE)
    assert M.sample(mutants, 4, 7) == M.sample(mutants, 4, 7) != M.sample(mutants, 4, 8)
    assert M.sample(mutants, 0, 7) == mutants
    for group, (globs, tests) in M.GROUPS.items():
        modules = M.modules_of(globs)
        assert modules and tests, group
        for path in [*modules, *[t.split("::")[0] for t in tests]]:
            assert (ROOT / path).is_file(), (group, path)


def test_groups_choose_modules_by_glob_so_a_split_module_stays_in_its_group(tmp_path):
    """A module split into several (pop.py -> pop.py + pop_*.py, or a pop/ package) is still the pop
    group's, each part tested by the pop tests; a module without a mutation point is left out."""
    metrics = tmp_path / "nsys2prv" / "metrics"
    (metrics / "pop").mkdir(parents=True)
    for rel in ("pop.py", "pop_tasks.py", "pop/windows.py", "replay.py", "measures.py", "advice.py"):
        (metrics / rel).write_text(SOURCE)
    (metrics / "pop" / "__init__.py").write_text('"""imports only"""\nfrom .windows import keep_positive\n')
    got = M.modules_of(M.GROUPS["pop"][0], tmp_path)
    assert got == [
        f"nsys2prv/metrics/{m}" for m in ("measures.py", "pop.py", "pop/windows.py", "pop_tasks.py", "replay.py")
    ]
    pop_tests = M.TESTS_OF["nsys2prv/metrics/pop*"]
    assert pop_tests[0] == "tests/test_pop.py"
    assert {m: M.tests_of(m, "pop") for m in got} == {
        "nsys2prv/metrics/measures.py": ["tests/test_pop.py"],
        "nsys2prv/metrics/pop.py": pop_tests,
        "nsys2prv/metrics/pop/windows.py": pop_tests,
        "nsys2prv/metrics/pop_tasks.py": pop_tests,
        "nsys2prv/metrics/replay.py": ["tests/test_replay.py"],
    }
    assert M.tests_of("nsys2prv/nsys/readers/mpi.py", "readers") == M.GROUPS["readers"][1]


def test_a_mutant_is_known_by_its_function_and_line_text_not_its_place():
    m = {(x.operator, x.what): x for x in M.mutants_of("m.py", SOURCE)}
    keep = m["compare", "x >= 0 -> >"]
    assert (keep.where, keep.text, keep.line) == ("keep_positive", "keep = x >= 0", 6)
    assert (m["return-early", "record() returns at once"].where, m["drop-filter", "x[keep] -> x"].where) == (
        "record",
        "keep_positive",
    )
    eq = M.Equivalent("*/m*.py", "keep_positive", "compare", "x >= 0 -> >", "keep = x >= 0", "(argued)")
    moved = M.mutants_of("pkg/m_split.py", "import os\n\n\n" + SOURCE)  # moved 3 lines down, another file
    assert [x.label() for x in moved if eq.matches(x)] == ["pkg/m_split.py:9 compare: x >= 0 -> >"]
    assert not eq.matches(m["constant", "0 -> 1"])


def test_the_score_leaves_the_equivalent_mutants_out_and_shows_both():
    verdicts = ["KILLED"] * 7 + ["TIMEOUT"] * 2 + ["SURVIVED"] + ["EQUIVALENT"] * 2
    assert M.score(verdicts) == {
        "sampled": 12,
        "equivalent": 2,
        "run": 10,
        "killed": 9,
        "survived": 1,
        "score": 90.0,
        "score_all": 75.0,
    }
    assert M.score([])["score"] is None


def test_every_recorded_equivalent_mutant_exists_and_gives_its_reason():
    """The list follows the code: each entry matches a mutant of a module of its group (one that no
    longer exists is an entry to delete), and says why it changes nothing."""
    every = [
        x
        for globs, _ in M.GROUPS.values()
        for module in M.modules_of(globs)
        for x in M.mutants_of(module, (ROOT / module).read_text())
    ]
    for e in M.EQUIVALENT:
        assert [x for x in every if e.matches(x)], e
        assert len(e.why) > 40, e


def test_identical_mutants_of_a_line_are_told_apart_by_their_rank():
    source = "def f(x):\n    return g(x, 1, 1)\n"
    twins = [m for m in M.mutants_of("m.py", source) if m.what == "1 -> 2"]
    assert [(m.where, m.text, m.nth) for m in twins] == [("f", "return g(x, 1, 1)", 0), ("f", "return g(x, 1, 1)", 1)]
    second = M.Equivalent("m.py", "f", "constant", "1 -> 2", "return g(x, 1, 1)", "(argued)", nth=1)
    assert [second.matches(m) for m in twins] == [False, True]
    assert M.mutated_source(source, twins[1]).endswith("return g(x, 1, 2)")


def test_a_group_run_in_parts_samples_the_same_mutants():
    whole = M.chosen("readers", 3, 1)
    parts = [M.chosen("readers", 3, 1, [g]) for g in ("*/mpi.py", "*/readers/n*.py", "*/readers/s*.py")]
    assert parts[0] and parts[1] and parts[2]
    assert {m.module for m in parts[1]} == {"nsys2prv/nsys/readers/nccl.py", "nsys2prv/nsys/readers/nvtx.py"}
    assert all(m in whole for p in parts for m in p)
    assert [m for m in whole if m.module.endswith("/mpi.py")] == parts[0]


def test_resume_takes_an_earlier_runs_kills_of_unchanged_modules():
    """Every sampled mutant killed in the earlier run (same module source): nothing is run again; a
    record of a module whose source changed since is not taken."""
    picked = M.chosen("matching", 2, 1)
    digest = M._digest((ROOT / picked[0].module).read_text())
    earlier = [{**m.__dict__, "source": digest, "verdict": "KILLED"} for m in picked]
    lines: list[str] = []
    res = M.run_group("matching", 2, 1, None, lines.append, resumed=earlier)
    assert [m["verdict"] for m in res["mutants"]] == ["KILLED", "KILLED"] and all(m["resumed"] for m in res["mutants"])
    assert lines[0] == "# matching: 2 mutants, 0 of them known equivalent, 0 to run"
    assert (res["killed"], res["run"], res["score"]) == (2, 2, 100.0)
    stale = [{**r, "source": "0" * 16} for r in earlier]
    assert M._key(stale[0]) != M._key(earlier[0])

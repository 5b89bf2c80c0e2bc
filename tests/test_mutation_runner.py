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
    for group, (modules, tests) in M.MODULES.items():
        assert modules and tests, group
        for path in [*modules, *[t.split("::")[0] for t in tests]]:
            assert (ROOT / path).is_file(), (group, path)

#!/usr/bin/env python3
"""Mutation testing of the modules that decide results: does a small wrong change make a test fail?

Each mutant is one rewrite of one module (by its syntax tree): a comparison flipped (``>=`` -> ``>``,
``<`` -> ``<=``, ``==`` -> ``!=``, ...), an integer constant off by one, a filter dropped (``x[mask]``
-> ``x``), a condition negated (``if c`` -> ``if not c``, ``and`` <-> ``or``), a procedure returning at
once.  Mutants are applied one at a time to a copy of the package in a temporary directory (never the
working tree), and only the test files that cover the mutated module run (``MODULES``), with
``pytest -x`` and a per-mutant timeout.  A mutant is killed when the tests fail (or time out),
survives when they pass.  The mutants of each module are sampled (``--per-module``, ``--seed``:
the same mutants every run).

    python3 scripts/mutation_test.py --per-module 20 --seed 1           # every module group
    python3 scripts/mutation_test.py --group matching --per-module 5    # one group
    python3 scripts/mutation_test.py --list --group pop                 # the mutants, not run

Prints one line per mutant (KILLED / SURVIVED / TIMEOUT, module:line, operator, the mutated line) and
the score (killed / run) per group; ``--fail-under PCT`` exits 1 when a group scores lower.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# group -> (modules, the tests that cover them: files or test ids, quick enough to run per mutant)
MATCHING_TESTS = [
    "tests/test_mpi_matching.py",
    "tests/test_align.py::test_generated_messages_exact",
    "tests/test_align.py::test_unmatched_messages_counted",
    "tests/test_mpi23.py::test_every_message_the_program_sent_is_matched_once",
    "tests/test_mpi23.py::test_communication_times_are_extraes",
]
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "matching": (["nsys2prv/translate/mpi_messages.py"], MATCHING_TESTS),
    "alignment": (
        [
            "nsys2prv/model/align/__init__.py",
            "nsys2prv/model/align/clock.py",
            "nsys2prv/model/align/fit.py",
            "nsys2prv/model/align/session.py",
            "nsys2prv/model/align/syncpoints.py",
        ],
        ["tests/test_align.py"],
    ),
    "pop": (
        [
            *(f"nsys2prv/metrics/pop/{m}.py" for m in ("__init__", "partial", "devices", "inputs", "trees", "windows")),
            "nsys2prv/metrics/measures.py",
            "nsys2prv/metrics/replay.py",
        ],
        ["tests/test_pop.py", "tests/test_replay.py"],
    ),
    "registry": (
        ["nsys2prv/core/registry.py", "nsys2prv/core/extrae_mpi.py"],
        ["tests/test_registry_ids.py", "tests/test_mpi4_real.py", "tests/test_cfgs.py"],
    ),
    "readers": (
        sorted(
            f"nsys2prv/nsys/readers/{p.name}"
            for p in (ROOT / "nsys2prv" / "nsys" / "readers").glob("*.py")
            if p.name != "__init__.py"
        ),
        [
            "tests/test_rows.py",
            "tests/test_columns.py",
            "tests/test_mpi_matching.py",
            "tests/test_faults.py",
            "tests/test_reader_edges.py",
            "tests/test_robustness.py::test_conservation_balances_on_cloverleaf",
            "tests/test_gpu_depth.py::test_nccl_payloads_on_nccl_kernels",
            "tests/test_cpu_side.py",
        ],
    ),
}
# a module whose own tests are enough (instead of its group's)
TESTS_OF = {
    "nsys2prv/metrics/replay.py": ["tests/test_replay.py"],
    **{
        f"nsys2prv/metrics/pop/{m}.py": ["tests/test_pop.py"]
        for m in ("partial", "devices", "inputs", "trees", "windows")
    },
    "nsys2prv/metrics/measures.py": ["tests/test_pop.py"],
}


COMPARE_FLIPS = {
    ast.GtE: ast.Gt,
    ast.Gt: ast.GtE,
    ast.LtE: ast.Lt,
    ast.Lt: ast.LtE,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
OPERATORS = ("compare", "constant", "drop-filter", "negate", "and-or", "return-early")


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # the n-th mutation point of the module (in ``points`` order)
    operator: str
    line: int
    what: str

    def label(self) -> str:
        return f"{self.module}:{self.line} {self.operator}: {self.what}"


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


MASK_NAME = re.compile(r"mask|keep|ok|sel|valid|good|dup|late|inside|drop|^is_|^nb$|^hit|^bad|^open")


def _is_mask(node: ast.AST) -> bool:
    """A subscript that looks like a boolean filter: a comparison, ``a & b``, ``a | b``, ``~a``, a
    variable named like a mask (``keep``, ``ok_s``, ``is_send``, ...) or its ``.to_numpy()``."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to_numpy":
        return _is_mask(node.func.value)
    return isinstance(node, ast.Name) and bool(MASK_NAME.search(node.id))


def _has_docstring(fn: ast.AST) -> bool:
    body = getattr(fn, "body", [])
    return bool(body) and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)


def _returns_value(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and getattr(node, "value", None) is not None:
            return True
    return False


def points(tree: ast.AST) -> list[tuple[str, ast.AST, int]]:
    """Every mutation point of a module: (operator, node, variant), in a stable order."""
    docs = _docstring_nodes(tree)
    annotations = {id(n) for a in ast.walk(tree) for n in ast.walk(a) if isinstance(a, ast.arg) and a.annotation}
    out: list[tuple[str, ast.AST, int]] = []
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Compare):
            out += [("compare", node, i) for i, op in enumerate(node.ops) if type(op) in COMPARE_FLIPS]
        elif isinstance(node, ast.Constant) and type(node.value) is int and id(node) not in docs:
            out.append(("constant", node, 0))
        elif isinstance(node, ast.Subscript) and _is_mask(node.slice) and isinstance(node.ctx, ast.Load):
            out.append(("drop-filter", node, 0))
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            out.append(("negate", node, 0))
        elif isinstance(node, ast.BoolOp):
            out.append(("and-or", node, 0))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _returns_value(node):
            body = node.body[1:] if _has_docstring(node) else node.body
            if body and not (len(body) == 1 and isinstance(body[0], (ast.Pass, ast.Raise))):
                out.append(("return-early", node, 0))
    return out


def _mutate(node: ast.AST, operator: str, variant: int) -> ast.AST | None:
    """The node's replacement (the node changed in place, or a new node to put in its place)."""
    if operator == "compare":
        node.ops[variant] = COMPARE_FLIPS[type(node.ops[variant])]()
        return node
    if operator == "constant":
        return ast.Constant(node.value + 1)
    if operator == "drop-filter":  # x[mask] -> x, x.loc[mask] -> x
        if isinstance(node.value, ast.Attribute) and node.value.attr in ("loc", "iloc"):
            return node.value.value
        return node.value
    if operator == "negate":
        node.test = ast.UnaryOp(ast.Not(), node.test)
        return node
    if operator == "and-or":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return node
    if operator == "return-early":
        at = 1 if _has_docstring(node) else 0
        node.body.insert(at, ast.Return(None))
        return node
    raise ValueError(operator)


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, new: ast.AST):
        self.target, self.new = target, new

    def visit(self, node):
        if node is self.target:
            return self.new
        return self.generic_visit(node)


def _parse(source: str) -> ast.AST:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node  # type: ignore[attr-defined]
    return tree


_OP_TEXT = {
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.Lt: "<",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _short(node: ast.AST, width: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= width else text[: width - 3] + "..."


def describe(op: str, node: ast.AST, variant: int) -> str:
    """What the mutant changes, e.g. ``recvs['tag'] >= 0 -> recvs['tag'] > 0``."""
    if op == "compare":
        left = node.left if variant == 0 else node.comparators[variant - 1]
        right = node.comparators[variant]
        old, new = type(node.ops[variant]), COMPARE_FLIPS[type(node.ops[variant])]
        return f"{_short(left, 40)} {_OP_TEXT[old]} {_short(right, 20)} -> {_OP_TEXT[new]}"
    if op == "constant":
        return f"{node.value} -> {node.value + 1}"
    if op == "drop-filter":
        return f"{_short(node)} -> {_short(node.value)}"
    if op == "negate":
        return f"if {_short(node.test)} -> if not (...)"
    if op == "and-or":
        return f"{_short(node)}: {'and -> or' if isinstance(node.op, ast.And) else 'or -> and'}"
    return f"{node.name}() returns at once"


def mutants_of(module: str, source: str) -> list[Mutant]:
    out = []
    for i, (op, node, variant) in enumerate(points(_parse(source))):
        out.append(Mutant(module, i, op, getattr(node, "lineno", 0), describe(op, node, variant)))
    return out


def mutated_source(source: str, mutant: Mutant) -> str:
    tree = _parse(source)
    op, node, variant = points(tree)[mutant.index]
    assert op == mutant.operator
    original = ast.unparse(tree)
    new = _mutate(node, op, variant)
    if new is not node:
        tree = _Replace(node, new).visit(tree)
    text = ast.unparse(ast.fix_missing_locations(tree))
    if text == original:
        raise ValueError(f"{mutant.label()}: the mutation changes nothing")
    return text


def sample(mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    if n <= 0 or n >= len(mutants):
        return list(mutants)
    return sorted(random.Random(seed).sample(mutants, n), key=lambda m: (m.module, m.index))


def _copy_tree(dst: Path) -> None:
    """The package, the tests, their data and the project's metadata, copied (not linked)."""
    for name in ("nsys2prv", "tests", "scripts", "docs", "pyproject.toml", "README.md", "CHANGELOG.md", "cfgs"):
        src = ROOT / name
        if src.is_symlink():
            os.symlink(os.readlink(src), dst / name)
        elif src.is_dir():
            shutil.copytree(src, dst / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dst / name)


def _pytest(work: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=str(work), PYTHONDONTWRITEBYTECODE="1")
    env.pop("NSYS2PRV_KERNELS", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "TIMEOUT", time.monotonic() - t0
    status = "passed" if res.returncode == 0 else ("failed" if res.returncode == 1 else f"error {res.returncode}")
    return status, time.monotonic() - t0


def run_group(group: str, per_module: int, seed: int, timeout: float | None, log) -> dict:
    modules, tests = MODULES[group]
    chosen = []
    for m in modules:
        chosen += sample(mutants_of(m, (ROOT / m).read_text()), per_module, seed)
    result: dict = {"group": group, "mutants": []}
    with tempfile.TemporaryDirectory(prefix="nsys2prv-mutants-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        limits: dict[tuple[str, ...], float] = {}
        for suite in sorted({tuple(TESTS_OF.get(m.module, tests)) for m in chosen}):
            status, base = _pytest(work, list(suite), timeout or 3600)
            if status != "passed":
                raise SystemExit(f"{group}: the tests fail without any mutant ({status}): {' '.join(suite)}")
            limits[suite] = timeout or max(60.0, 3 * base + 30)
            log(f"# {group}: {' '.join(suite)}: {base:.0f} s unmutated, timeout {limits[suite]:.0f} s")
        log(f"# {group}: {len(chosen)} mutants")
        for mut in chosen:
            suite = tuple(TESTS_OF.get(mut.module, tests))
            path = work / mut.module
            original = path.read_text()
            path.write_text(mutated_source(original, mut))
            try:
                status, took = _pytest(work, list(suite), limits[suite])
            finally:
                path.write_text(original)
            verdict = {"passed": "SURVIVED", "TIMEOUT": "TIMEOUT"}.get(status, "KILLED")
            log(f"{verdict:8} {mut.label()}  ({took:.0f} s)")
            result["mutants"].append({**mut.__dict__, "verdict": verdict, "tests": list(suite)})
    run = result["mutants"]
    killed = sum(m["verdict"] != "SURVIVED" for m in run)
    result["score"] = round(100 * killed / len(run), 1) if run else None
    log(f"# {group}: {killed}/{len(run)} killed ({result['score']} %)")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", action="append", choices=sorted(MODULES), help="module group (default: all)")
    ap.add_argument("--per-module", type=int, default=10, help="mutants sampled per module (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, help="seconds per mutant (default: 3 x the unmutated run + 30)")
    ap.add_argument("--list", action="store_true", help="print the sampled mutants, run nothing")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--fail-under", type=float, help="exit 1 when a group's score (%%) is lower")
    args = ap.parse_args(argv)
    groups = args.group or list(MODULES)
    if args.list:
        for g in groups:
            for m in MODULES[g][0]:
                for mut in sample(mutants_of(m, (ROOT / m).read_text()), args.per_module, args.seed):
                    mutated_source((ROOT / m).read_text(), mut)  # applies
                    print(f"{g:10} {mut.label()}")
        return 0

    def log(line: str) -> None:
        print(line, flush=True)

    results = [run_group(g, args.per_module, args.seed, args.timeout, log) for g in groups]
    print("\nscore per group:")
    for r in results:
        killed = sum(m["verdict"] != "SURVIVED" for m in r["mutants"])
        print(f"  {r['group']:10} {killed}/{len(r['mutants'])} killed ({r['score']} %)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.fail_under is not None and any((r["score"] or 0) < args.fail_under for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["MODULES", "OPERATORS", "TESTS_OF", "Mutant", "mutants_of", "mutated_source", "points", "sample"]

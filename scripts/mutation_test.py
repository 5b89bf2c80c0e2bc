#!/usr/bin/env python3
"""Mutation testing of the modules that decide results: does a small wrong change make a test fail?

Each mutant is one rewrite of one module (by its syntax tree): a comparison flipped (``>=`` -> ``>``,
``<`` -> ``<=``, ``==`` -> ``!=``, ...), an integer constant off by one, a filter dropped (``x[mask]``
-> ``x``), a condition negated (``if c`` -> ``if not c``, ``and`` <-> ``or``), a procedure returning at
once.  Mutants are applied one at a time to a copy of the package in a temporary directory (never the
working tree), and only the test files that cover the mutated module run (``GROUPS``), with
``pytest -x`` and a per-mutant timeout.  A mutant is killed when the tests fail (or time out),
survives when they pass.  The mutants of each module are sampled (``--per-module``, ``--seed``:
the same mutants every run).  A group names its modules by glob, so a module split in several stays in
its group.  A sampled mutant on the recorded list of equivalent ones (``EQUIVALENT``: each with the
argument why nothing observable changes) is not run but counted apart.

    python3 scripts/mutation_test.py --per-module 20 --seed 1           # every module group
    python3 scripts/mutation_test.py --group matching --per-module 5    # one group
    python3 scripts/mutation_test.py --list --group pop                 # the mutants, not run

Prints one line per mutant (KILLED / SURVIVED / TIMEOUT / EQUIVALENT, module:line, operator, the
mutation) and per group the score without the equivalent mutants (killed / (sampled - equivalent))
and over all sampled (killed / sampled); ``--fail-under PCT`` exits 1 when a group's first score is
lower.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
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

# group -> (module globs, the tests that cover them: files or test ids, quick enough to run per mutant).
# Modules are chosen by glob so that a module split into several (pop.py -> pop_*.py or a pop/ package)
# stays in its group, its mutants sampled per file.
MATCHING_TESTS = [
    "tests/test_mpi_matching.py",
    "tests/test_align.py::test_generated_messages_exact",
    "tests/test_align.py::test_unmatched_messages_counted",
    "tests/test_mpi23.py::test_every_message_the_program_sent_is_matched_once",
    "tests/test_mpi23.py::test_communication_times_are_extraes",
]
POP_TESTS = ["tests/test_pop.py", "tests/test_replay.py"]
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "matching": (["nsys2prv/translate/mpi_messages.py"], MATCHING_TESTS),
    "alignment": (["nsys2prv/model/align/*.py"], ["tests/test_align.py"]),
    "pop": (
        [
            "nsys2prv/metrics/pop*.py",
            "nsys2prv/metrics/pop/**/*.py",
            "nsys2prv/metrics/measures.py",
            "nsys2prv/metrics/replay*.py",
            "nsys2prv/metrics/replay/**/*.py",
        ],
        POP_TESTS,
    ),
    "registry": (
        ["nsys2prv/core/registry.py", "nsys2prv/core/extrae_mpi.py"],
        ["tests/test_registry_ids.py", "tests/test_mpi4_real.py", "tests/test_cfgs.py"],
    ),
    "readers": (
        ["nsys2prv/nsys/readers/*.py"],
        [
            "tests/test_reader_edges.py",
            "tests/test_rows.py",
            "tests/test_columns.py",
            "tests/test_mpi_matching.py",
            "tests/test_faults.py",
            "tests/test_robustness.py::test_conservation_balances_on_cloverleaf",
            "tests/test_gpu_depth.py::test_nccl_payloads_on_nccl_kernels",
            "tests/test_cpu_side.py",
            "tests/test_security.py::test_16_duplicates_found_alike_in_sorted_and_unsorted_tables",
            "tests/test_security.py::test_16_a_duplicated_row_is_translated_once_and_counted",
            "tests/test_lifetimes_read.py",
        ],
    ),
}


def modules_of(globs: list[str], root: Path = ROOT) -> list[str]:
    """The modules (paths relative to ``root``) the globs name, sorted, without a module that has
    no mutation point (an ``__init__`` of imports)."""
    found = {p.relative_to(root).as_posix() for g in globs for p in root.glob(g) if p.suffix == ".py"}
    return sorted(m for m in found if points(_parse((root / m).read_text())))


# a module whose own tests are enough (instead of its group's): module glob -> tests
TESTS_OF = {
    "nsys2prv/metrics/replay*": ["tests/test_replay.py"],
    "nsys2prv/metrics/pop*": [
        "tests/test_pop.py",
        "tests/test_pop_field.py::test_steady_state_is_shown_by_default_when_start_up_dominates",
        # (the ideal replay's inputs on real MPI runs, the partials of time slices joined, on-CPU time)
        "tests/test_dimemas.py::test_our_ideal_time_equals_the_recorded_dimemas_answer",
        "tests/test_slices.py::test_sliced_conversion_writes_the_whole_reports_bytes",
        "tests/test_cpu_side.py::test_pop_on_cpu_of_an_mpi_rank_sliced_or_whole",
        "tests/test_pop_packed.py",  # (each partial's rows recorded beside its bytes, whole and sliced)
    ],
    "nsys2prv/metrics/measures.py": ["tests/test_pop.py"],
}


def tests_of(module: str, group: str) -> list[str]:
    for pattern, tests in TESTS_OF.items():
        if fnmatch.fnmatch(module, pattern):
            return tests
    return GROUPS[group][1]


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
    where: str = ""  # the function (``Class.method``) the mutation is in, "" at module level
    text: str = ""  # the mutated line of the source, stripped
    nth: int = 0  # of the mutants with the same where, operator, what and text: the n-th (from 0)

    def label(self) -> str:
        return f"{self.module}:{self.line} {self.operator}: {self.what}"


@dataclass(frozen=True)
class Equivalent:
    """A mutant argued equivalent: it changes nothing observable, so no test can kill it.  It is known
    by its module (a glob, so that it survives a module's split), the function it is in, its operator,
    its description and the mutated line's text (not by line number or index, which any edit moves)."""

    module: str
    where: str
    operator: str
    what: str
    text: str
    why: str
    nth: int | None = None  # which of several identical ones (None: every one)

    def matches(self, m: Mutant) -> bool:
        same = (m.where, m.operator, m.what, m.text) == (self.where, self.operator, self.what, self.text)
        return same and fnmatch.fnmatch(m.module, self.module) and self.nth in (None, m.nth)


# The mutants argued equivalent (docs/development.md "Mutation testing" has the arguments at length).
# A sampled mutant that matches one is not run: it is counted apart, and the score is killed / (sampled -
# equivalent); the score over every sampled mutant is shown beside it.
EQUIVALENT: list[Equivalent] = [
    Equivalent(
        "nsys2prv/translate/mpi_messages.py",
        "Messages",
        "constant",
        "0 -> 1",
        "unmatched_sends: int = 0",
        "a default no Messages is made with: both places that make one (match_messages, Messages.inside) "
        "pass the count of unmatched sends",
    ),
    Equivalent(
        "nsys2prv/translate/mpi_messages.py",
        "_halves",
        "and-or",
        "post.any() and len(done): and -> or",
        "if post.any() and len(done):",
        "the test only spares the work: with no posted receive _completion changes nothing, and with no "
        "Wait/Test row it returns the receives' own ends (the merge finds nothing): the same ends",
    ),
    Equivalent(
        "nsys2prv/metrics/pop*.py",
        "gather_devices",
        "constant",
        "4 -> 5",
        "runs = np.concatenate([sp.runs for sp in spills] or [np.zeros((0, 4), np.int64)])",
        "the empty stand-in when no report has GPU intervals: with 0 rows, 4 or 5 columns give the same "
        "empty columns 0-3 (the only ones read) and no device",
    ),
    Equivalent(
        "nsys2prv/metrics/pop*.py",
        "measure_scopes",
        "constant",
        "1 -> 2",
        "if len(lo) == 1 and (not len(s) or (s.min() >= lo[0] and e.max() <= hi[0])):",
        "the test only spares the work: a GPU's intervals all inside the one window need no cut, and "
        "clip_to_windows (the else branch) returns them whole, measured the same",
    ),
    Equivalent(
        "nsys2prv/metrics/pop*.py",
        "device_tree",
        "constant",
        "4 -> 5",
        "useful_mask = useful_mask | ((_M3 & 4) != 0)",
        "useful_mask is already (_M3 & 1) != 0, so adding (_M3 & 5) != 0 (bit 0 or bit 2) gives the same "
        "union as adding (_M3 & 4) != 0 (bit 2): the same mask, bit for bit",
    ),
    Equivalent(
        "nsys2prv/metrics/pop*.py",
        "combine",
        "and-or",
        "parts and any((len(p.host[0]) for p in parts)): and -> or",
        "if parts and any(len(p.host[0]) for p in parts):",
        "the test only spares the work: with parts whose host intervals are all empty (int64 arrays of "
        "length 0, as partial._unions makes them) the concatenation gives the else branch's empty arrays",
    ),
    Equivalent(
        "nsys2prv/metrics/measures.py",
        "clip_to_windows",
        "compare",
        "np.diff(hi) < 0 -> <=",
        "if np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0):",
        "windows with equal ends then take the window-by-window branch, which gives the same pieces (in "
        "window order instead of row order); every caller sums them (mask_durations sorts them by time, "
        "np.add.at), so no result changes",
    ),
    Equivalent(
        "nsys2prv/metrics/measures.py",
        "warmup_probes",
        "constant",
        "0 -> 1",
        "return [(_sweep, (np.array([0, 1]), z, np.array([0, 1]), z, np.zeros((1, 2), np.int64), z.copy()))]",
        "a warm-up probe only fixes the argument types the kernel is loaded or compiled for (int64 arrays); "
        "[1, 1] for [0, 1] as order or times has the same types and stays in bounds",
    ),
    Equivalent(
        "nsys2prv/nsys/readers/sched.py",
        "read",
        "constant",
        "1 -> 2",
        'tid = int64(df["tid"], fill=-1)',
        "a NULL thread becomes -2 instead of -1: the next line drops every negative thread (tid < 0), and "
        "nothing else sees the value",
    ),
    Equivalent(
        "nsys2prv/nsys/readers/cuda_api.py",
        "read",
        "constant",
        "1 -> 2",
        'to_int64(df, "corr", fill=-1)',
        "a CUDA API call without a correlation id gets -2 instead of -1: every user of the calls' ids keeps "
        "only ids >= 0 (launch links) or writes max(id, 0) (the correlation event)",
    ),
    Equivalent(
        "nsys2prv/nsys/readers/*.py",  # (osrt.py's callers, moved to callchains.py)
        "callers",
        "constant",
        "1 -> 2",
        'fid, depth = int64(fr["id"], -1), int64(fr["depth"], -1)',
        "a NULL frame id or depth becomes -2 instead of -1: the line before kept only frames whose id is "
        "one of the calls' (> 0), and a frame is kept only at depth >= 0 and counted deeper only at "
        "depth >= the levels: -1 and -2 alike are neither",
    ),
    Equivalent(
        "nsys2prv/nsys/readers/mpi.py",
        "",
        "constant",
        "1 -> 2",
        '_DEFAULTS = {"peer": -1, "size": 0, "recv_size": 0, "tag": -1, "comm": 0}',
        "a NULL peer or tag becomes -2 instead of -1: every reader of peer and tag tests < 0 (no peer, a "
        "wildcard receive: Open MPI writes -1, MPICH -2 for ANY_SOURCE), none tests -1 itself",
    ),
]


def equivalent(m: Mutant) -> Equivalent | None:
    return next((e for e in EQUIVALENT if e.matches(m)), None)


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


def _where(node: ast.AST) -> str:
    """The qualified name of the function a node is in ("" at module level; a function's own
    ``return-early`` mutant is in that function)."""
    names = []
    at: ast.AST | None = node
    while at is not None:
        if isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(at.name)
        at = getattr(at, "parent", None)
    return ".".join(reversed(names))


def mutants_of(module: str, source: str) -> list[Mutant]:
    lines = source.splitlines()
    out = []
    seen: dict[tuple, int] = {}
    for i, (op, node, variant) in enumerate(points(_parse(source))):
        line = getattr(node, "lineno", 0)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        key = (_where(node), op, describe(op, node, variant), text)
        seen[key] = seen.get(key, -1) + 1
        out.append(Mutant(module, i, op, line, key[2], key[0], text, seen[key]))
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


def chosen(group: str, per_module: int, seed: int, only: list[str] | None = None) -> list[Mutant]:
    """The group's sampled mutants: ``per_module`` of each of its modules (all with 0), seeded; ``only``:
    of the modules matching these globs (a module's sample does not depend on the others: a group
    can be run in parts, in parallel, and gives the same mutants)."""
    out: list[Mutant] = []
    for m in modules_of(GROUPS[group][0]):
        if only is None or any(fnmatch.fnmatch(m, g) for g in only):
            out += sample(mutants_of(m, (ROOT / m).read_text()), per_module, seed)
    return out


def score(verdicts: list[str]) -> dict:
    """Counts and scores of a group's verdicts (KILLED / TIMEOUT / SURVIVED / EQUIVALENT): ``score`` is
    killed / (sampled - equivalent), ``score_all`` killed / sampled (an equivalent counted as a survivor)."""
    n, eq = len(verdicts), verdicts.count("EQUIVALENT")
    survived = verdicts.count("SURVIVED")
    killed = n - eq - survived
    pct = lambda a, b: round(100 * a / b, 1) if b else None  # noqa: E731
    return {
        "sampled": n,
        "equivalent": eq,
        "run": n - eq,
        "killed": killed,
        "survived": survived,
        "score": pct(killed, n - eq),
        "score_all": pct(killed, n),
    }


def score_line(name: str, c: dict) -> str:
    return (
        f"{name}: {c['killed']}/{c['run']} killed ({c['score']} %), {c['equivalent']} equivalent not run; "
        f"{c['killed']}/{c['sampled']} of all sampled ({c['score_all']} %)"
    )


def _key(m: dict) -> tuple:
    """A mutant's identity across runs: where it is and what it changes, and its module's source."""
    return tuple(m[k] for k in ("module", "where", "operator", "what", "text", "nth", "source"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_group(
    group: str,
    per_module: int,
    seed: int,
    timeout: float | None,
    log,
    resumed: list | None = None,
    save=None,
    only: list[str] | None = None,
) -> dict:
    """Run the group's sampled mutants.  ``resumed``: the records of an earlier run (``--resume``): a
    mutant it killed, in a module whose source is unchanged, is taken as killed without running again
    (tests were only added since: it is still killed); ``save(result)`` after every mutant."""
    picked = chosen(group, per_module, seed, only)
    source = {m: _digest((ROOT / m).read_text()) for m in {x.module for x in picked}}
    records = [{**m.__dict__, "source": source[m.module], "tests": tests_of(m.module, group)} for m in picked]
    before = {_key(r): r for r in resumed or [] if r["verdict"] in ("KILLED", "TIMEOUT")}
    todo = [m for m, r in zip(picked, records) if equivalent(m) is None and _key(r) not in before]
    result: dict = {"group": group, "mutants": []}
    with tempfile.TemporaryDirectory(prefix="nsys2prv-mutants-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        limits: dict[tuple[str, ...], float] = {}
        for suite in sorted({tuple(tests_of(m.module, group)) for m in todo}):
            status, base = _pytest(work, list(suite), timeout or 3600)
            if status != "passed":
                raise SystemExit(f"{group}: the tests fail without any mutant ({status}): {' '.join(suite)}")
            limits[suite] = timeout or max(60.0, 3 * base + 30)
            log(f"# {group}: {' '.join(suite)}: {base:.0f} s unmutated, timeout {limits[suite]:.0f} s")
        n_eq = sum(equivalent(m) is not None for m in picked)
        log(f"# {group}: {len(picked)} mutants, {n_eq} of them known equivalent, {len(todo)} to run")
        for mut, rec in zip(picked, records):
            if equivalent(mut) is not None:
                verdict, took = "EQUIVALENT", 0.0
            elif _key(rec) in before:
                verdict, took = before[_key(rec)]["verdict"], 0.0
                rec["resumed"] = True
            else:
                path = work / mut.module
                original = path.read_text()
                path.write_text(mutated_source(original, mut))
                try:
                    status, took = _pytest(work, rec["tests"], limits[tuple(rec["tests"])])
                finally:
                    path.write_text(original)
                verdict = {"passed": "SURVIVED", "TIMEOUT": "TIMEOUT"}.get(status, "KILLED")
            log(f"{verdict:10} {mut.label()}  ({took:.0f} s{', earlier run' if rec.get('resumed') else ''})")
            result["mutants"].append({**rec, "verdict": verdict})
            if save is not None:
                save(result)
    result |= score([m["verdict"] for m in result["mutants"]])
    log("# " + score_line(group, result))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", action="append", choices=sorted(GROUPS), help="module group (default: all)")
    ap.add_argument("--per-module", type=int, default=10, help="mutants sampled per module (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, help="seconds per mutant (default: 3 x the unmutated run + 30)")
    ap.add_argument("--module", action="append", help="only the group's modules matching this glob (a part of a group)")
    ap.add_argument("--list", action="store_true", help="print the sampled mutants, run nothing")
    ap.add_argument("--json", type=Path, help="write the results here (after every mutant)")
    ap.add_argument(
        "--resume",
        type=Path,
        action="append",
        help="an earlier run's --json (repeatable: the parts of a run): the mutants it killed (same module "
        "source) are not run again",
    )
    ap.add_argument("--fail-under", type=float, help="exit 1 when a group's score (%%, equivalents excluded) is lower")
    args = ap.parse_args(argv)
    groups = args.group or list(GROUPS)
    if args.list:
        for g in groups:
            for mut in chosen(g, args.per_module, args.seed, args.module):
                mutated_source((ROOT / mut.module).read_text(), mut)  # applies
                mark = " (equivalent)" if equivalent(mut) is not None else ""
                print(f"{g:10} {mut.label()}{mark}")
        return 0

    def log(line: str) -> None:
        print(line, flush=True)

    resumed = [m for path in args.resume or [] for r in json.loads(path.read_text()) for m in r["mutants"]]
    results: list[dict] = []

    def save(partial: dict) -> None:
        if args.json:
            args.json.write_text(json.dumps([*results, partial], indent=1) + "\n")

    for g in groups:
        results.append(run_group(g, args.per_module, args.seed, args.timeout, log, resumed, save, args.module))
    print("\nscore per group:")
    for r in results:
        print("  " + score_line(f"{r['group']:10}", r))
    if len(results) > 1:
        print("  " + score_line("all       ", score([m["verdict"] for r in results for m in r["mutants"]])))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.fail_under is not None and any((r["score"] or 0) < args.fail_under for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "EQUIVALENT",
    "GROUPS",
    "OPERATORS",
    "TESTS_OF",
    "Equivalent",
    "Mutant",
    "chosen",
    "equivalent",
    "modules_of",
    "mutants_of",
    "mutated_source",
    "points",
    "sample",
    "score",
    "tests_of",
]

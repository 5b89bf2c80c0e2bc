"""The package layout keeps one direction: core <- nsys <- model <- translate <- paraver, metrics <- kinds
<- config <- pipeline <- cli, api <- launch (the root exports api's ``open`` lazily).  Imports inside
functions count; one kept inside a function says why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nsys2prv"
# Each unit may import only units of a lower layer (or itself).
LAYERS = [
    ("",),
    ("core",),
    ("nsys",),
    ("model",),
    ("translate",),
    ("paraver", "metrics"),
    ("kinds",),
    ("config",),
    ("pipeline",),
    ("cli", "api"),
    ("launch",),
    ("__main__",),
]
LAYER_OF = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str | None:
    """``nsys2prv.nsys.readers.mpi`` -> ``nsys``; the root package (its ``__init__``) -> ``""``."""
    parts = module.split(".")
    if parts[0] != "nsys2prv":
        return None
    if len(parts) == 1 or parts[1] == "__version__":
        return ""
    return parts[1]


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        yield path, name, ast.parse(path.read_text(encoding="utf-8"))


def import_edges() -> list[tuple[str, str, str, bool]]:
    """(importing unit, imported unit, 'file:line', inside a function) for every nsys2prv import."""
    edges = []
    for path, name, tree in _modules():
        me = _unit(name)
        inner = {
            id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] if node.module != "nsys2prv" else [f"nsys2prv.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                other = _unit(t)
                if other is not None and other != me:
                    edges.append((me, other, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", id(node) in inner))
    return edges


def test_every_unit_has_a_layer():
    units = {_unit(name) for _, name, _ in _modules()}
    assert units <= set(LAYER_OF), f"units without a layer in LAYERS: {sorted(units - set(LAYER_OF))}"


# The one import against the order: the root package's lazy export of the Python API (``nsys2prv.open``,
# a module __getattr__ importing nsys2prv.api when the name is first used).
ROOT_EXPORT = ("", "api", "nsys2prv/__init__.py")


def test_imports_go_one_way():
    wrong = [
        f"{where}: {a} -> {b}"
        for a, b, where, inner in import_edges()
        if LAYER_OF[b] >= LAYER_OF[a] and not ((a, b, where.split(":")[0]) == ROOT_EXPORT and inner)
    ]
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one unit (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_no_package_level_cycle():
    graph: dict[str, set[str]] = {}
    for a, b, where, inner in import_edges():
        if not ((a, b, where.split(":")[0]) == ROOT_EXPORT and inner):
            graph.setdefault(a, set()).add(b)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _explained(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, or above its block of imports (blank lines allowed)."""
    i = lineno - 1
    while i >= 0:
        text = lines[i].strip()
        if "#" in text:
            return True
        if text and not (text.startswith(("import ", "from ")) or text.endswith((",", "(")) or text == ")"):
            return False
        i -= 1
    return False


def test_imports_inside_functions_say_why():
    missing = []
    for path, _, tree in _modules():
        lines = path.read_text(encoding="utf-8").splitlines()
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(f):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and not _explained(lines, node.lineno):
                        where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                        missing.append(f"{where}: {lines[node.lineno - 1].strip()}")
    assert not missing, "imports inside functions without a reason:\n" + "\n".join(sorted(set(missing)))


@pytest.mark.parametrize(
    "module", ["nsys2prv.core.registry", "nsys2prv.core.names", "nsys2prv.core.intervals", "nsys2prv.core.categories"]
)
def test_core_modules_import_alone(module):
    """The core is importable without the rest of the package (a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m.startswith('nsys2prv.') and not m.startswith('nsys2prv.core'))\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_help_and_version_do_not_load_pandas():
    """The command line answers --help and --version without loading pandas or numba (start-up time)."""
    import subprocess
    import sys

    for arg in ("--version", "--help"):
        res = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "nsys2prv", arg], capture_output=True, text=True
        )
        loaded = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines() if "|" in line}
        assert res.returncode == 0 and "nsys2prv" in res.stdout
        assert not loaded & {"pandas", "numba", "pyarrow"}, arg


# --- The NCCL rule exists once -----------------------------------------------------------------------------
# Whether a kernel is NCCL is decided by nsys2prv.core.classify.is_nccl only (translation, POP and the clock
# alignment all call it).  A second rule -- a regular expression, a substring test, a ``str.contains`` on
# "nccl" -- would let the trace, the POP metrics and the alignment disagree on the same kernel.
NCCL_RULE_HOME = "nsys2prv/core/classify.py"
# Tests on "nccl" that are not kernel classifiers: (file, enclosing function) -> why.
NCCL_OTHER_RULES = {
    ("nsys2prv/nsys/readers/nvtx.py", "_nccl_by_name"): "recognises the NCCL NVTX *domain* from its range names",
}
NAME_MATCHERS = {
    "compile",
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "split",
    "contains",
    "startswith",
    "endswith",
    "find",
    "rfind",
    "index",
    "rindex",
}


def _string_constants(trees) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments of every module (a rule may keep its pattern in a constant)."""
    out = {}
    for tree in trees:
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = node.value.value
    return out


def nccl_name_tests(tree: ast.AST, constants: dict[str, str]) -> list[tuple[int, str]]:
    """(line, enclosing function) of every test of a name against "nccl" in ``tree``: a matcher call
    (re.compile/search, str.contains, startswith, find, ...) given "nccl", or ``"nccl" in <call or
    lambda argument>``.  Labels (``"nccl" in ctx.categories``, ``out.count("nccl")``) are not tests."""

    def is_nccl_text(e: ast.AST) -> bool:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            text = e.value
        elif isinstance(e, (ast.Name, ast.Attribute)):
            text = constants.get(e.id if isinstance(e, ast.Name) else e.attr, "")
        else:
            return False
        return "nccl" in text.lower()

    hits = []

    def visit(node: ast.AST, func: str, lambda_args: frozenset):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        if isinstance(node, ast.Lambda):
            lambda_args = lambda_args | {a.arg for a in node.args.args}
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in NAME_MATCHERS and any(is_nccl_text(a) for a in node.args):
                hits.append((node.lineno, func))
        if isinstance(node, ast.Compare) and is_nccl_text(node.left):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and (
                    isinstance(right, ast.Call) or (isinstance(right, ast.Name) and right.id in lambda_args)
                ):
                    hits.append((node.lineno, func))
        for child in ast.iter_child_nodes(node):
            visit(child, func, lambda_args)

    visit(tree, "", frozenset())
    return hits


def test_the_nccl_rule_exists_once():
    modules = list(_modules())
    constants = _string_constants(tree for _, _, tree in modules)
    found, home = [], []
    for path, _, tree in modules:
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for line, func in nccl_name_tests(tree, constants):
            if rel == NCCL_RULE_HOME:
                home.append(line)
            elif (rel, func) not in NCCL_OTHER_RULES:
                found.append(f"{rel}:{line} ({func or 'module level'})")
    assert not found, "a second NCCL kernel rule: use nsys2prv.core.classify.is_nccl instead of " + ", ".join(found)
    assert home, f"the detector no longer sees the rule in {NCCL_RULE_HOME}: update nccl_name_tests"


# ... and is applied once: the kernels reader sets each kernel's ``nccl`` column (stage A, cached with the
# table); translation, POP and the alignment read the column.  A second call would re-derive the flag.
NCCL_RULE_USER = "nsys2prv/nsys/readers/kernels.py"


def nccl_rule_uses(tree: ast.AST) -> list[int]:
    """Lines that name ``is_nccl`` (a call, an import, a reference) outside its definition."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "is_nccl" for a in node.names):
            out.append(node.lineno)
        elif (
            isinstance(node, ast.Name)
            and node.id == "is_nccl"
            or isinstance(node, ast.Attribute)
            and node.attr == "is_nccl"
        ):
            out.append(node.lineno)
    return out


def test_the_nccl_rule_is_applied_in_one_place():
    found = {
        path.relative_to(PACKAGE.parent).as_posix(): lines
        for path, _, tree in _modules()
        if (lines := nccl_rule_uses(tree))
    }
    assert set(found) - {NCCL_RULE_HOME} == {NCCL_RULE_USER}, (
        f"is_nccl is applied only by {NCCL_RULE_USER} (the kernels' nccl column): read the column instead in "
        + ", ".join(sorted(set(found) - {NCCL_RULE_HOME, NCCL_RULE_USER}))
    )


@pytest.mark.parametrize(
    "code, uses",
    [
        ("from nsys2prv.core.classify import is_nccl\nkeep = is_nccl(df['name'])", 2),
        ("from nsys2prv.core import classify\nkeep = classify.is_nccl(df['name'])", 1),
        ("keep = df['nccl'].to_numpy(bool)", 0),
    ],
)
def test_the_nccl_rule_use_detector(code, uses):
    assert len(nccl_rule_uses(ast.parse(code))) == uses


@pytest.mark.parametrize(
    "code, hits",
    [
        ('import re\nK = re.compile("nccl", re.IGNORECASE)', 1),  # model/align had this one
        ('keep = per_name(names, lambda n: K.search(n) is not None)\nK = re.compile("NCCL")', 1),
        ('keep = df["name"].str.contains("nccl", case=False)', 1),
        ('keep = contains(names, "nccl", case=False)', 1),
        ('S = "nccl"\ndef f(names):\n    return per_name(names, lambda n: S in n.lower())', 1),
        ('keep = per_name(names, lambda n: "nccl" in n)', 1),
        ('keep = names.map(lambda s: s.lower().startswith("nccl"))', 1),
        ('if "nccl" not in ctx.categories:\n    pass', 0),  # labels, not name tests
        ('c = out.count("nccl")\nt = tables.get("nccl")\nok = method in ("nccl", "auto")', 0),
    ],
)
def test_the_nccl_rule_detector(code, hits):
    tree = ast.parse(code)
    assert len(nccl_name_tests(tree, _string_constants([tree]))) == hits


# The GPU id of a GPU activity is derived once as well: stage A gives each its ``gpu`` column
# (``pipeline.report.read_kind``), cached with the table; POP and the GPU metrics attribution read the column.
GPU_ID_HOME = "nsys2prv/nsys/devices.py"
GPU_ID_USERS = {  # (file, enclosing function) -> why it may map (process, CUDA ordinal) pairs itself
    ("nsys2prv/pipeline/report.py", "read_kind"): "stage A: each GPU activity's gpu column",
    ("nsys2prv/model/resources.py", "build_model"): "each task's GPUs, from its few stream keys",
}


def name_uses(tree: ast.AST, name: str) -> list[tuple[int, str | None]]:
    """(line, innermost enclosing function or None) of every reference to ``name`` (a bare name or an
    attribute: a call, or the function passed on)."""
    out = []

    def walk(node: ast.AST, func: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        if isinstance(node, ast.Name) and node.id == name or isinstance(node, ast.Attribute) and node.attr == name:
            out.append((node.lineno, func))
        for child in ast.iter_child_nodes(node):
            walk(child, func)

    walk(tree, None)
    return out


def test_the_gpu_id_is_derived_in_stage_a():
    found = {
        (path.relative_to(PACKAGE.parent).as_posix(), func): line
        for path, _, tree in _modules()
        for line, func in name_uses(tree, "gpu_of")
    }
    others = {k: line for k, line in found.items() if k[0] != GPU_ID_HOME}
    assert set(others) == set(GPU_ID_USERS), (
        "gpu_of is applied in stage A (the GPU activities' gpu column): read the column instead in "
        + ", ".join(f"{f}:{line} ({fn})" for (f, fn), line in sorted(others.items()) if (f, fn) not in GPU_ID_USERS)
    )


@pytest.mark.parametrize(
    "code, uses",
    [
        ("from nsys2prv.nsys.devices import gpu_of\ng = gpu_of(m, p, d)", [(2, None)]),
        ("from nsys2prv.nsys import devices\ndef f():\n    return devices.gpu_of(m, p, d)", [(3, "f")]),
        ("def f(df):\n    return df['gpu'].to_numpy()", []),
    ],
)
def test_the_gpu_id_use_detector(code, uses):
    assert name_uses(ast.parse(code), "gpu_of") == uses


# --- No reaching into another module's private names ------------------------------------------------------
# (file, "expression") -> why it may.  Third-party privates only: a private name of nsys2prv gets a public
# name in its module instead (e.g. nsys.cache.entry_hash, TableCache.replace_file, <module>.warmup_probes).
PRIVATE_REACHES = {
    ("nsys2prv/cli.py", "os._exit"): "the standard library's documented exit without clean-up",
    ("nsys2prv/core/workers.py", "os._exit"): "the standard library's documented exit without clean-up",
    ("nsys2prv/core/workers.py", "queue._writer"): "concurrent.futures has no public handle on a pool's results pipe",
    ("nsys2prv/core/jit.py", "caching._SourceFileBackedLocatorMixin"): "numba has no public cache-locator hook",
    ("nsys2prv/core/jit.py", "caching._CacheLocator"): "numba has no public cache-locator hook",
    ("nsys2prv/core/jit.py", "impl._locator_classes"): "numba has no public cache-locator hook",
    ("nsys2prv/core/jit.py", "self.compiled._cache"): "numba has no public way to ask its cache",
    ("nsys2prv/nsys/connection.py", "pa.RecordBatchReader._import_from_c"): "pyarrow's C data interface entry",
}


def private_reaches(tree: ast.AST) -> list[tuple[int, str]]:
    """``from nsys2prv.x import _name`` and ``obj._name`` on anything but ``self``/``cls``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nsys2prv"):
            out += [
                (node.lineno, f"from {node.module} import {a.name}")
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_private_reaches_across_modules():
    found = [
        f"{rel}:{line} {expr}"
        for path, _, tree in _modules()
        for rel in [path.relative_to(PACKAGE.parent).as_posix()]
        for line, expr in private_reaches(tree)
        if (rel, expr) not in PRIVATE_REACHES
    ]
    assert not found, "private names used from outside their class or module: " + ", ".join(found)


# Modules stay small enough to read whole: at most MAX_LINES lines each.
MAX_LINES = 600
LONG_MODULES: dict[str, str] = {}  # module -> why it is longer, for now (none)


def test_every_module_is_at_most_600_lines():
    long = {
        rel: n
        for path, _, _ in _modules()
        for rel in [path.relative_to(PACKAGE.parent).as_posix()]
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and rel not in LONG_MODULES
    }
    assert not long, f"modules of more than {MAX_LINES} lines: {long}"
    assert all((PACKAGE.parent / rel).is_file() for rel in LONG_MODULES), "an allowed long module is gone"
    pop = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in (PACKAGE / "metrics" / "pop").glob("*.py")}
    assert len(pop) >= 5 and max(pop.values()) <= 500, pop  # (the POP model: one concern a module)

"""Every data kind and category is declared whole in nsys2prv/kinds.py, and every lookup is built from it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from nsys2prv import kinds as K
from nsys2prv.config import ALIASES, CATEGORIES, parse_categories
from nsys2prv.core import registry as R
from nsys2prv.core.categories import CATEGORIES as CATEGORIES_DECLARED
from nsys2prv.core.categories import GROUP_ALIASES, Category
from nsys2prv.core.errors import UserError
from nsys2prv.nsys import readers
from nsys2prv.nsys.readers.base import Reader


def declaration_problems(
    kinds=K.KINDS, categories=K.CATEGORIES, links=K.LINKS, untranslated=K.UNTRANSLATED_TABLES
) -> list[str]:
    """What is half-declared: the checks this file runs on the real declarations, as a function so
    that a deliberately broken declaration can show that each check fails."""
    problems = []
    cat_names = [c.name for c in categories]
    kind_names = [k.name for k in kinds]
    for name in {n for n in kind_names if kind_names.count(n) > 1}:
        problems.append(f"kind {name} declared twice")
    for k in kinds:
        if not k.categories:
            problems.append(f"kind {k.name}: no category")
        for c in k.categories:
            if c not in cat_names:
                problems.append(f"kind {k.name}: category {c} is not declared")
        if k.side not in (K.CPU, K.GPU, K.METRIC):
            problems.append(f"kind {k.name}: side {k.side!r}")
        if not isinstance(k.reader, Reader) or not k.reader.tables or not callable(k.reader.read):
            problems.append(f"kind {k.name}: no reader with tables")
        if not k.translators or not all(callable(t.fn) for t in k.translators):
            problems.append(f"kind {k.name}: no translator")
        if not k.doc:
            problems.append(f"kind {k.name}: no description")
    for c in categories:
        if not any(c.name in k.categories for k in kinds):
            problems.append(f"category {c.name}: no kind")
    names = [a for c in categories for a in (c.name, *c.aliases)] + list(GROUP_ALIASES)
    for a in {a for a in names if names.count(a) > 1}:
        problems.append(f"-t name {a} means two things")
    claimed = (
        {t.id for k in kinds for t in k.types}
        | {t.id for link in links for t in link.types}
        | {t.id for t in K.DERIVED_TYPES}
    )
    for t in R.FIXED_TYPES:
        if t.id not in claimed:
            problems.append(f"event type {t.id} ({t.label}) is written by no declared kind or link")
    counts = [tr.count or k.name for k in kinds for tr in k.translators] + [link.name for link in links]
    for n in {n for n in counts if counts.count(n) > 1}:
        problems.append(f"summary name {n} counted by two translators")
    read = {t for k in kinds for t in k.reader.tables}
    for t in untranslated:
        if t in read:
            problems.append(f"{t} is read by a kind but declared untranslated")
        if K.is_metadata(t):
            problems.append(f"{t} is declared untranslated but is metadata (never listed)")
    for t in sorted(read):
        readers = [k.name for k in kinds if t in k.reader.tables]
        if len(readers) > 1 and not K.is_metadata(t) and t != K.NVTX_TABLE:
            problems.append(f"{t} is read by {', '.join(readers)}: the fate of its rows needs a split")
    for cls, kind in K.NVTX_CLASS_KINDS.items():
        if kind not in kind_names or K.NVTX_TABLE not in next(k for k in kinds if k.name == kind).reader.tables:
            problems.append(f"NVTX class {cls}: kind {kind} does not read {K.NVTX_TABLE}")
    return problems


def test_the_declarations_are_whole():
    assert declaration_problems() == []


def test_every_reader_module_is_declared_once():
    declared = [k.reader for k in K.KINDS]
    found = []
    for mod in pkgutil.iter_modules(readers.__path__):
        m = importlib.import_module(f"nsys2prv.nsys.readers.{mod.name}")
        found += [v for v in vars(m).values() if isinstance(v, Reader)]
    assert sorted(map(id, found)) == sorted(map(id, declared))
    assert len(set(map(id, declared))) == len(declared)


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (
            lambda ks, cs: ([*ks, K.Kind("extra", ks[0].reader, ("nope",), K.CPU, ks[0].translators, doc="x")], cs),
            "kind extra: category nope is not declared",
        ),
        (
            lambda ks, cs: ([*ks, K.Kind("half", ks[0].reader, ("mpi",), K.CPU, (), doc="x")], cs),
            "kind half: no translator",
        ),
        (
            lambda ks, cs: ([*ks, K.Kind("side", ks[0].reader, ("mpi",), "disk", ks[0].translators, doc="x")], cs),
            "kind side: side 'disk'",
        ),
        (lambda ks, cs: ([k for k in ks if k.name != "osrt"], cs), "category osrt: no kind"),
        (
            lambda ks, cs: ([k for k in ks if k.name != "osrt"], [c for c in cs if c.name != "osrt"]),
            "event type 66400000 (OS runtime call) is written by no declared kind or link",
        ),
        (
            lambda ks, cs: (ks, [*cs, Category("again", "x", ("cuda_api_trace",))]),
            "-t name cuda_api_trace means two things",
        ),
        (
            lambda ks, cs: (ks, cs, {**K.UNTRANSLATED_TABLES, "OSRT_API": "x"}),
            "OSRT_API is read by a kind but declared untranslated",
        ),
        (
            lambda ks, cs: (ks, cs, {**K.UNTRANSLATED_TABLES, "StringIds": "x"}),
            "StringIds is declared untranslated but is metadata (never listed)",
        ),
        (
            lambda ks, cs: (
                [*ks, K.Kind("again", K.BY_NAME["osrt"].reader, ("osrt",), K.CPU, ks[0].translators, doc="x")],
                cs,
            ),
            "OSRT_API is read by osrt, again: the fate of its rows needs a split",
        ),
    ],
)
def test_a_half_declared_kind_is_found(breakage, expected):
    kinds, cats, *rest = breakage(list(K.KINDS), list(K.CATEGORIES))
    assert expected in declaration_problems(kinds, cats, K.LINKS, *rest)


def test_category_names_and_aliases_come_from_the_declarations():
    assert set(CATEGORIES) == {c.name for c in CATEGORIES_DECLARED}
    assert ALIASES["cuda_api_trace"] == {"cuda_api"} and ALIASES["nvtx"] == {"nvtx_pushpop", "nvtx_startend"}
    assert parse_categories(None) == frozenset(c.name for c in K.CATEGORIES if c.default)
    assert "osrt" not in parse_categories(None)
    assert parse_categories("all") == frozenset(CATEGORIES)  # -t all: every category, osrt too
    # every category is a -t name of its own (nvtx_pushpop, gpu: listed by --help, accepted by -t)
    for c in CATEGORIES_DECLARED:
        assert c.name in parse_categories(c.name)
    with pytest.raises(UserError, match="unknown category 'scheduling'"):
        parse_categories("scheduling")
    # the CPU side is in the default (translated where a report has it); no-NAME leaves NAME out
    assert {"sched", "samples"} <= parse_categories(None) and "sched" not in parse_categories("mpi")
    assert parse_categories("no-cpu") == parse_categories(None) - {"sched", "samples"}
    assert parse_categories("mpi,cpu,no-samples") == {"gpu", "mpi", "sched"}
    assert parse_categories("no-gpu") == parse_categories(None)  # (gpu: always translated)
    with pytest.raises(UserError, match="unknown category 'no-scheduling'"):
        parse_categories("no-scheduling")


def test_kinds_of_follows_the_declaration_order():
    assert K.kinds_of(parse_categories("mpi,nvtx")) == ("kernels", "memcpy", "memset", "nvtx", "mpi")
    assert K.side_kinds(K.METRIC) == ("gpu_metrics",)
    assert set(K.side_kinds(K.CPU)) | set(K.side_kinds(K.GPU)) | set(K.side_kinds(K.METRIC)) == set(K.BY_NAME)

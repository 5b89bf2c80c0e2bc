"""Paraver views (.cfg) for the traces nsys2prv writes: the files and the command line.

Every event type, state or tag a view filters on comes from ``registry.py``: no id is written
twice.  ``views_shipped.VIEWS`` holds one entry per view shipped in the package (``nsys2prv/cfgs/``,
also reachable as ``cfgs/`` at the repository root); ``trace_views`` the views whose ids depend on
one trace (NVTX domains, GPU metrics), read from that trace's .pcf; ``cfg_model`` what a view is,
``cfg_render`` its text.  ``--cfgs`` renders every view for the trace (its values, rows).

    python -m nsys2prv.paraver.cfgs regenerate          # rewrite nsys2prv/cfgs from VIEWS
    python -m nsys2prv.paraver.cfgs check               # exit 1 if the shipped files are stale
    python -m nsys2prv.paraver.cfgs render TRACE DIR    # shipped views + this trace's views into DIR
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Collection
from importlib import resources
from pathlib import Path

from nsys2prv.paraver.cfg_model import View
from nsys2prv.paraver.cfg_render import TraceInfo, render
from nsys2prv.paraver.pcf import POP_HOST_TYPES
from nsys2prv.paraver.trace_views import (
    COLLECTIVE_SIZES,
    COLLECTIVES_TABLE,
    METRIC_FAMILIES,
    fit,
    host_views_left_out,
    needs,
    nvtx_domains,
    pcf_types,
    selected,
    trace_info,
    trace_views,
)
from nsys2prv.paraver.views_shipped import VIEWS

__all__ = [
    "COLLECTIVE_SIZES",
    "COLLECTIVES_TABLE",
    "METRIC_FAMILIES",
    "VIEWS",
    "host_views_left_out",
    "install_views",
    "needs",
    "nvtx_domains",
    "pcf_types",
    "render",
    "selected",
    "trace_views",
]


# --- Files ---------------------------------------------------------------------------------------


def shipped_dir():
    """The packaged cfgs/ folder (an importlib.resources Traversable)."""
    return resources.files("nsys2prv") / "cfgs"


def write_views(views, dest: Path, info: TraceInfo | None = None) -> list[Path]:
    out = []
    for view in views:
        p = dest / view.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(render(view, info), encoding="utf-8")
        out.append(p)
    return out


def _copy_tree(src, dest: Path, out: list[Path]) -> None:
    for item in sorted(src.iterdir(), key=lambda i: i.name):
        if item.is_dir():
            _copy_tree(item, dest / item.name, out)
        elif item.name.endswith(".cfg"):
            (dest / item.name).parent.mkdir(parents=True, exist_ok=True)
            (dest / item.name).write_bytes(item.read_bytes())
            out.append(dest / item.name)


def install_views(
    dest: Path,
    pcf: Path | None = None,
    present: set[str] | None = None,
    written: set[int] | None = None,
    left_out: Collection[str] = (),
) -> list[Path]:
    """Put the shipped views into ``dest`` (given ``present``, the trace's data: only those that show
    something, ``selected``) and, given a trace's .pcf, its own views: with a .pcf every view is
    rendered for that trace (value ranges and colours from its .pcf, sizes from its .row), else the
    shipped files are copied.  ``written``: the types the trace's records use, where known: the views of
    the trace filter on those only (the .pcf also declares the host POP views' types, ``POP_HOST_TYPES``,
    which a trace may hold no record of: wxparaver would ask about them).  ``left_out``: paths of views
    not to install (``host_views_left_out``: host POP views that cannot reproduce OUT.pop.json)."""
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    if pcf is None and present is None:
        _copy_tree(shipped_dir(), dest, out)
        return out
    chosen = set(selected(present)) - set(left_out)
    views: list[View] = [v for v in VIEWS if v.path in chosen]
    if pcf is None:
        src = shipped_dir()
        for v in views:
            (dest / v.path).parent.mkdir(parents=True, exist_ok=True)
            (dest / v.path).write_bytes(src.joinpath(*v.path.split("/")).read_bytes())
            out.append(dest / v.path)
        return out
    info = trace_info(pcf)
    text = pcf.read_text(encoding="utf-8", errors="replace")
    declared = set(pcf_types(text))
    if written is not None:
        declared -= POP_HOST_TYPES - set(written)
    fitted = [f for v in [*views, *trace_views(text)] if (f := fit(v, declared)) is not None]
    return write_views(fitted, dest, info)


def _source_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "cfgs"


def stale_files(root: Path | None = None) -> list[str]:
    """Shipped files that differ from VIEWS (missing, changed or extra)."""
    root = root or _source_dir()
    expected = {v.path: render(v) for v in VIEWS}
    have = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.cfg")}
    return sorted(k for k in expected.keys() | have.keys() if expected.get(k) != have.get(k))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["regenerate"]:
        root = _source_dir()
        if root.exists():
            shutil.rmtree(root)
        for p in write_views(VIEWS, root):
            print(p)
        return 0
    if args[:1] == ["check"]:
        stale = stale_files()
        for s in stale:
            print(f"stale: {s}")
        return 1 if stale else 0
    if args[:1] == ["render"] and len(args) == 3:
        base = Path(args[1].removesuffix(".prv").removesuffix(".pcf"))
        for p in install_views(Path(args[2]), base.with_name(base.name + ".pcf")):
            print(p)
        return 0
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""Render Paraver views in Paraver itself: every window of every .cfg of a trace's views, opened in
wxparaver under Xvfb and saved as PNG by wxparaver (its ``-i`` mode), so what lands in OUTDIR is what
an analyst sees in the GUI.

    python scripts/render_views.py OUTDIR                                  # the example traces
    python scripts/render_views.py OUTDIR --only mpi4 --only gpu8          # some of them
    python scripts/render_views.py OUTDIR --trace out/mpi4.prv --cfgs out/cfgs   # one trace of yours

The example traces (converted into OUTDIR/traces with this checkout's nsys2prv when absent, each
with ``--cfgs``, so the views are the per-trace set a user gets):

- ``mpi4``: the README's Quick start (``-t mpi,nvtx,osrt`` on tests/data/mpi4: 4 ranks, 1 host);
- ``clover``: the CloverLeaf CUDA export (``-t all``; ``--clover PATH``: someone else's export, not in
  the repository; left out with a note where not given or absent);
- ``gpu8``: a generated 8-rank, 2-host GPU run (tests/gpu_cluster.py);
- ``nccl2``: a generated 2-GPU NCCL run with MPI (scripts/make_nccl_example.py --mpi);
- ``gpu-shared``: the tests' oracle case of 8 ranks sharing a GPU per host (tests/oracle_cases.py).

Output: OUTDIR/<trace>/<cfg path, / as __>--<wK|hJ>_<window name>.png (wK: the cfg's K-th timeline,
hJ: its J-th histogram), beside it the timeline's legend (.code_legend.png, .gradient_legend.png,
.w_legend.png as wxparaver names them), and OUTDIR/render.json: per window its images, wxparaver's
exit status and anything it printed.  wxparaver 4.11.4's ``-i`` crashes (exit 139) on derived
(composed) timelines and always draws histograms zoomed (colours without numbers or labels, whatever
the cfg says); those are opened as a user opens them and grabbed from the (virtual) screen instead,
without a legend ("grabbed_from_screen").  A window with neither says NO IMAGE.

Needs wxparaver (scripts/build_wxparaver.sh; on PATH or $PARAVER_HOME/bin/wxparaver) and Xvfb.
wxparaver runs with HOME in a scratch directory (tests/wxparaver_driver.py: its default preferences
with the start-up questions off), so the user's own ~/.paraver is neither read nor changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from gpu_cluster import gpu_cluster_reports  # noqa: E402  (the tests' generated GPU cluster run)
from wxparaver_driver import (  # noqa: E402
    BUILD_HINT,
    Xvfb,
    find_wxparaver,
    load_in_gui,
    paraver_home,
    save_images,
    split_cfg,
)

QUICK_START = ["-t", "mpi,nvtx,osrt", "-m"]  # README's Quick start


def make_traces(outdir: Path, only: list[str], clover: Path | None) -> dict[str, tuple[Path, Path]]:
    """name -> (trace.prv, its views), converting what is not there yet."""
    tdir = outdir / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    plans: dict[str, list[str]] = {
        "mpi4": [*QUICK_START, *sorted(map(str, (ROOT / "tests/data/mpi4").glob("rank*.sqlite")))]
    }
    if clover is not None and clover.exists():
        plans["clover"] = ["-t", "all", str(clover)]
    elif not only or "clover" in only:
        said = "not given" if clover is None else f"{clover} absent"
        print(f"render_views: the CloverLeaf export {said}: no CloverLeaf views (give --clover PATH)", file=sys.stderr)
    if not only or "gpu8" in only:
        gen = tdir / "gpu8-reports"
        reports = sorted(gen.glob("rank*.sqlite")) or gpu_cluster_reports(gen)
        plans["gpu8"] = ["-m", *map(str, reports)]
    if not only or "nccl2" in only:
        gen = tdir / "nccl2-reports"
        if not sorted(gen.glob("rank*.sqlite")):
            subprocess.run(
                [sys.executable, str(ROOT / "scripts" / "make_nccl_example.py"), str(gen), "--mpi"], check=True
            )
        plans["nccl2"] = ["-m", *map(str, sorted(gen.glob("rank*.sqlite")))]
    if not only or "gpu-shared" in only:
        import oracle_cases  # the tests' oracle cases: 8 ranks sharing a GPU per host

        plans["gpu-shared"] = oracle_cases.CASES["gpu-shared"][2](tdir / "gpu-shared-reports")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    traces = {}
    for name, args in plans.items():
        if only and name not in only:
            continue
        prv, cfgs = tdir / f"{name}.prv", tdir / f"{name}-cfgs"
        if not prv.exists():
            cmd = [sys.executable, "-m", "nsys2prv", "-q", "--cfgs", str(cfgs), *args, str(tdir / name)]
            subprocess.run(cmd, check=True, env=env)
        traces[name] = (prv, cfgs)
    return traces


# The docs' pictures (README.md, docs/paraver-views.md): (trace, view, window) -> docs/img/NAME
DOC_PICTURES = [
    ("mpi4", "basics/states", "w1", "mpi4-states.png"),
    ("mpi4", "views/mpi_calls", "w1", "mpi4-mpi-calls.png"),
    ("gpu8", "basics/states", "w1", "gpu8-states.png"),
    ("gpu8", "basics/kernels", "w1", "gpu8-kernels.png"),
    ("gpu8", "views/mpi_calls", "w1", "gpu8-mpi-calls.png"),
    ("gpu8", "analysis/kernel_time", "h1", "gpu8-kernel-time.png"),
]


def doc_pictures(outdir: Path, imgdir: Path, max_width: int = 1100) -> None:
    """The DOC_PICTURES of a rendering in OUTDIR: a timeline beside its legend, at most MAX_WIDTH
    pixels wide, as an 8-bit palette PNG (ImageMagick's convert)."""
    imgdir.mkdir(parents=True, exist_ok=True)
    for trace, view, window, name in DOC_PICTURES:
        stem = "__".join(view.split("/")) + f"--{window}_"
        found = sorted((outdir / trace).glob(f"{stem}*"))
        main = [p for p in found if p.name.count(".") == 1]
        if len(main) != 1:
            raise SystemExit(f"render_views: no single picture of {trace} {view} {window} in {outdir}: {found}")
        legends = [p for p in found if p.name.endswith("code_legend.png")]
        cmd = ["convert", "-background", "black", "-gravity", "north", str(main[0]), *map(str, legends), "+append"]
        cmd += ["-resize", f"{max_width}x>", "-strip", "-colors", "256", f"PNG8:{imgdir / name}"]
        subprocess.run(cmd, check=True)
        print(f"{imgdir / name}: {(imgdir / name).stat().st_size // 1024} KB")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:60]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--trace", type=Path, help="one trace (.prv) instead of the examples")
    ap.add_argument("--cfgs", type=Path, help="the views for --trace (default: the shipped nsys2prv/cfgs)")
    ap.add_argument("--clover", type=Path, help="the CloverLeaf CUDA export (without it: no CloverLeaf views)")
    ap.add_argument("--docs", type=Path, help="also write the docs' pictures (DOC_PICTURES) into this directory")
    ap.add_argument(
        "--only", action="append", default=[], help="example trace(s) to render: mpi4, clover, gpu8, nccl2, gpu-shared"
    )
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends Xvfb and wxparaver on the way out
    wxparaver = find_wxparaver()
    if wxparaver is None:
        raise SystemExit(f"render_views: wxparaver not found; build it: {BUILD_HINT}")
    args.outdir.mkdir(parents=True, exist_ok=True)
    if args.trace is not None:
        traces = {args.trace.name.removesuffix(".prv"): (args.trace, args.cfgs or ROOT / "nsys2prv" / "cfgs")}
    else:
        traces = make_traces(args.outdir, args.only, args.clover)
    report: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="render-views-") as scratch, Xvfb() as x:
        env = dict(os.environ, HOME=str(paraver_home(Path(scratch), wxparaver, x.display)), DISPLAY=x.display)
        for name, (prv, cfgs) in traces.items():
            dest_dir = args.outdir / name
            dest_dir.mkdir(exist_ok=True)
            for cfg in sorted(cfgs.rglob("*.cfg")):
                rel = cfg.relative_to(cfgs).with_suffix("")
                for label, text in split_cfg(cfg.read_text()):
                    part = Path(scratch) / "part.cfg"
                    part.write_text(text)
                    dest = dest_dir / ("__".join(rel.parts) + "--" + slug(label))
                    if label.startswith("w"):
                        res = save_images(wxparaver, prv, part, dest, env)
                    else:  # wxparaver -i always draws a histogram zoomed (colours, no numbers, no labels)
                        res = {"exit": None, "images": [], "output": []}
                    images = [p.name for p in res["images"]]
                    entry = {"exit": res["exit"], "images": images, "output": res["output"]}
                    if res["exit"] != 0:
                        # a histogram, or a derived (composed) timeline, on which wxparaver -i crashes: open
                        # it as a user does and grab the window from the screen (no legend then)
                        gui = load_in_gui(wxparaver, prv, part, env, grab=(label.split("-", 1)[1], Path(f"{dest}.png")))
                        entry["grabbed_from_screen"] = gui.grabbed is not None
                        entry["gui_dialogs"] = gui.dialogs
                        images += [gui.grabbed.name] if gui.grabbed else []
                    report[f"{name}/{rel}/{label}"] = entry
                    grabbed = " (grabbed from the screen)" if entry.get("grabbed_from_screen") else ""
                    print(f"{name}/{rel}/{label}: {', '.join(images) or 'NO IMAGE'} (exit {res['exit']}){grabbed}")
    (args.outdir / "render.json").write_text(json.dumps(report, indent=1) + "\n")
    if args.docs is not None:
        doc_pictures(args.outdir, args.docs)


if __name__ == "__main__":
    main()

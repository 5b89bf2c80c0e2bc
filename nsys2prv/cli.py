"""The ``nsys2prv`` command."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import click

from nsys2prv import __version__
from nsys2prv.config import ALIASES, CATEGORIES, Config, parse_categories
from nsys2prv.errors import UserError

EPILOG = """\b
Examples:
  nsys2prv report.sqlite out/trace
  nsys2prv -t cuda_api_trace,nvtx report.nsys-rep trace
  nsys2prv -t nvtx,cuda_api_trace,gpu_metrics -m rank*.nsys-rep out
  nsys2prv -t mpi,nvtx,osrt -m rank0.sqlite rank1.sqlite -f solve out/solve

\b
Categories (-t, comma separated; default: all but osrt):
""" + "\n".join(f"  {name:<20} {desc}" for name, desc in CATEGORIES.items()) + """
\b
Aliases: """ + ", ".join(sorted(set(ALIASES) - set(CATEGORIES)))


@click.command(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-t", "--trace", "categories", metavar="CATEGORIES",
              help="What to translate, comma separated (nsys2prv 0.5.8 names accepted).")
@click.option("-m", "--multi-report", "--merge", "merge", is_flag=True,
              help="Merge several reports (one per rank) into one trace.")
@click.option("-f", "--filter-nvtx", metavar="RANGE", help="Only the time inside (the first) NVTX range RANGE.")
@click.option("-z", "--compress", is_flag=True, help="Write OUT.prv.gz.")
@click.option("-s", "--sort", is_flag=True, help="Accepted for compatibility: output is always sorted.")
@click.option("--force-sqlite", is_flag=True, help="Re-export .nsys-rep inputs even if an export exists.")
@click.option("--force", is_flag=True,
              help="Merge even when reports claim the same rank, come from different jobs or start hours apart.")
@click.option("--align", "align", default="auto", show_default=True, metavar="METHOD",
              help="Clock alignment of merged reports: auto, session, mpi, nccl, marker:NAME or none.")
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Where .nsys-rep exports are cached.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary.")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.version_option(__version__, prog_name="nsys2prv")
def main(paths, categories, merge, filter_nvtx, compress, sort, force_sqlite, force, align, cache_dir, quiet,
         debug):
    """Translate Nsight Systems reports (INPUT... = .sqlite exports or .nsys-rep) into the
    Paraver trace OUT.prv, OUT.pcf, OUT.row (OUT is the last argument)."""
    from nsys2prv.model.align import parse_method
    from nsys2prv.pipeline import convert
    from nsys2prv.report import print_summary

    t0 = time.perf_counter()
    try:
        if len(paths) < 2:
            raise UserError("give at least one INPUT and the OUT base name (e.g. nsys2prv report.sqlite out)")
        *inputs, output = paths
        output = Path(str(output).removesuffix(".prv"))
        cfg = Config(inputs=list(inputs), output=output, categories=parse_categories(categories), merge=merge,
                     filter_nvtx=filter_nvtx, compress=compress, force_sqlite=force_sqlite, force=force, align=align,
                     cache_dir=cache_dir, show_progress=not quiet and sys.stderr.isatty())
        parse_method(align)
        summary = convert(cfg)
    except UserError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"nsys2prv: error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        click.echo(f"nsys2prv: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
                   err=True)
        sys.exit(3)
    except KeyboardInterrupt:
        click.echo("nsys2prv: interrupted; no output written", err=True)
        sys.exit(130)
    if not quiet:
        print_summary(summary, time.perf_counter() - t0)

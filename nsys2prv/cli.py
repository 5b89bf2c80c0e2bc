"""The ``nsys2prv`` command."""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from nsys2prv import __version__
from nsys2prv.config import ALIASES, CATEGORIES, OPT_IN, Config, parse_categories
from nsys2prv.core import collector
from nsys2prv.core.choices import NCCL_AS, NCCL_AS_DEFAULT
from nsys2prv.core.errors import Interrupted, UserError, catch_signals
from nsys2prv.core.workers import being_traced

EPILOG = (
    """\b
Examples:
  nsys2prv report.sqlite out/trace
  nsys2prv -t cuda_api_trace,nvtx report.nsys-rep trace
  nsys2prv -t nvtx,cuda_api_trace,gpu_metrics -m rank*.nsys-rep out
  nsys2prv -t mpi,nvtx,osrt -m rank0.sqlite rank1.sqlite -f solve out/solve
  nsys2prv --cfgs out/cfgs report.sqlite out/trace

\b
Categories (-t, comma separated; default without -t: every category but the opt-in ones
("""
    + ", ".join(sorted(OPT_IN))
    + """); -t all: every category, opt-in ones included; no-NAME leaves NAME out, -t no-cpu: the
default without sched and samples):
"""
    + "\n".join(f"  {name:<20} {desc}" for name, desc in CATEGORIES.items())
    + """
\b
Aliases: """
    + ", ".join(sorted(set(ALIASES) - set(CATEGORIES)))
    + """
\b
POP metrics: every conversion also writes OUT.pop.json/.csv/.md/.tex(/.png).
Scalability over runs: nsys2prv pop RUN... --scaling strong|weak  (see nsys2prv pop --help)
Profiling an MPI job: srun "$(nsys2prv wrapper)" ./app  (see nsys2prv wrapper --help)"""
)


class _MainCommand(click.Command):
    """The conversion command; ``nsys2prv pop ...`` (first argument "pop") runs the POP subcommand."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        kwargs = {"complete_var": complete_var, "standalone_mode": standalone_mode, **extra}
        argv = list(sys.argv[1:] if args is None else args)
        if argv and argv[0] == "pop":
            return pop_main.main(argv[1:], prog_name=f"{prog_name or 'nsys2prv'} pop", **kwargs)
        if argv and argv[0] == "wrapper" and len(argv) <= 2:
            return wrapper_main.main(argv[1:], prog_name=f"{prog_name or 'nsys2prv'} wrapper", **kwargs)
        return super().main(argv, prog_name=prog_name, **kwargs)

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        with formatter.section("Commands"):
            formatter.write_dl(
                [
                    ("nsys2prv INPUT... OUT", "Convert reports into a Paraver trace and POP metrics (this help)."),
                    *((f"nsys2prv {name} ...", cmd.short_help or "") for name, cmd in SUBCOMMANDS),
                ]
            )


def _handle_errors(debug: bool, fn):
    try:
        return fn()
    except UserError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"nsys2prv: error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # the system said no (disk full, permission, read-only): not a bug
        if debug:
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"nsys2prv: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        click.echo(f"nsys2prv: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)", err=True)
        sys.exit(3)
    except KeyboardInterrupt:
        click.echo("nsys2prv: interrupted; no output written", err=True)
        sys.exit(130)


@click.command(
    cls=_MainCommand, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110}
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="INPUT... OUT")
@click.option(
    "-t",
    "--trace",
    "categories",
    metavar="CATEGORIES",
    help="What to translate, comma separated (nsys2prv 0.5.8 names accepted; no-NAME leaves NAME out, "
    "e.g. -t no-cpu: the default without the scheduler's states and CPU samples).",
)
@click.option(
    "-m",
    "--multi-report",
    "--merge",
    "merge",
    is_flag=True,
    help="Merge several reports (one per rank) into one trace.",
)
@click.option("-f", "--filter-nvtx", metavar="RANGE", help="Only the time inside (the first) NVTX range RANGE.")
@click.option("-z", "--compress", is_flag=True, help="Write OUT.prv.gz.")
@click.option("-s", "--sort", is_flag=True, help="Accepted for compatibility: output is always sorted.")
@click.option("--force-sqlite", is_flag=True, help="Re-export .nsys-rep inputs even if an export exists.")
@click.option(
    "--force",
    is_flag=True,
    help="Merge even when reports claim the same rank, come from different jobs or start hours apart.",
)
@click.option(
    "--align",
    "align",
    default="auto",
    show_default=True,
    metavar="METHOD",
    help="Clock alignment of merged reports: auto, session, mpi, nccl, marker:NAME or none.",
)
@click.option(
    "--time-origin",
    type=click.Choice(["run", "session"]),
    default="run",
    show_default=True,
    help="Paraver time 0: the run's start (the trace then spans exactly the POP elapsed time T, as "
    "BasicAnalysis measures it), or the earliest session start (times as Nsight Systems shows them).",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Where .nsys-rep exports and normalised tables are cached (default: $XDG_CACHE_HOME/nsys2prv).",
)
@click.option(
    "--cfgs",
    "cfgs",
    metavar="DIR",
    type=click.Path(path_type=Path),
    help="Also write the Paraver views (.cfg) into DIR: the shipped ones plus views generated for "
    "this trace's NVTX domains and GPU metrics (e.g. --cfgs out/ next to out/trace).",
)
@click.option(
    "--nccl-as",
    type=click.Choice(NCCL_AS),
    default=NCCL_AS_DEFAULT,
    show_default=True,
    help="POP metrics: NCCL kernels as data movement (BasicAnalysis) or useful (TALP).",
)
@click.option(
    "--region",
    metavar="NAME",
    multiple=True,
    help="POP metrics also over the union of the NVTX range NAME's occurrences (one column per --region; "
    "MPI_Init..MPI_Finalize: the steady state, shown by default when start-up and shutdown exceed 10% of T).",
)
@click.option("--iterations", metavar="NAME", help="POP metrics per iteration (NVTX range NAME) and steady state.")
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Exclude the first N iterations (with --iterations).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Local worker processes for the per-report stages, and parts of the final merge "
    "(0 = one per core).  [default: 0]",
)
@click.option(
    "--dask",
    metavar="ADDRESS",
    help="Run the per-report stages on a Dask cluster: scheduler address or "
    "scheduler file (needs Dask: pip install 'dask[distributed]').",
)
@click.option("--no-cache", is_flag=True, help="Do not keep the normalised tables (Parquet) in CACHE_DIR/tables.")
@click.option(
    "--cache-max",
    metavar="SIZE",
    help="The cache's size cap (e.g. 500M, 20G; default: NSYS2PRV_CACHE_MAX, else 20G): past it, the least "
    "recently used reports' entries are removed after the conversion, and said.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit with code 4 (after writing the outputs) when data could not be read: a table lacking a "
    "column, an export without its string table.",
)
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@click.version_option(__version__, prog_name="nsys2prv")
def main(
    paths,
    categories,
    merge,
    filter_nvtx,
    compress,
    sort,
    force_sqlite,
    force,
    align,
    time_origin,
    cache_dir,
    cfgs,
    nccl_as,
    region,
    iterations,
    warmup,
    jobs,
    dask,
    no_cache,
    cache_max,
    quiet,
    strict,
    debug,
):
    """Translate Nsight Systems reports (INPUT... = .sqlite exports or .nsys-rep) into the
    Paraver trace OUT.prv, OUT.pcf, OUT.row (OUT is the last argument)."""
    # here, not at the top: --help and --version answer without loading pandas and numba
    from nsys2prv.nsys.cache_names import tables_root
    from nsys2prv.pipeline import early
    from nsys2prv.pipeline.warmup import start_early, stop_early

    if dask is None and len(paths) >= 2:
        start_early(list(paths[:-1]))  # (first: it compiles while the rest is imported)
        try:
            chosen = parse_categories(categories)  # (its tables stage A reads anyway: left to it)
        except UserError:  # (said by the conversion)
            chosen = None
        early.start(list(paths[:-1]), None if no_cache else tables_root(cache_dir), chosen)  # (the lifetimes, likewise)
    # the rest, once the early processes run
    from nsys2prv.metrics.pop import region_names
    from nsys2prv.model.align import parse_method
    from nsys2prv.nsys.cache_size import parse_size
    from nsys2prv.nsys.identity import check_distinct_inputs
    from nsys2prv.pipeline import convert
    from nsys2prv.pipeline.summary import print_summary

    collector.release()  # (the imports are done: launch held the garbage collector off for them)
    t0 = time.perf_counter()

    def run():
        if len(paths) < 2:
            raise UserError("give at least one INPUT and the OUT base name (e.g. nsys2prv report.sqlite out)")
        *inputs, output = paths
        check_distinct_inputs(inputs)
        output = Path(str(output).removesuffix(".prv"))
        cfg = Config(
            inputs=list(inputs),
            output=output,
            categories=parse_categories(categories),
            merge=merge,
            filter_nvtx=filter_nvtx,
            compress=compress,
            force_sqlite=force_sqlite,
            force=force,
            cache_dir=cache_dir,
            show_progress=not quiet and sys.stderr.isatty(),
            nccl_as=nccl_as,
            region=region_names(region),
            iterations=iterations,
            warmup=warmup,
            cfgs=cfgs,
            align=align,
            jobs=jobs or None,
            time_origin=time_origin,
            dask=dask,
            table_cache=not no_cache,
            cache_max=None if cache_max is None else parse_size(cache_max),
            own_process=True,
        )
        parse_method(align)
        return convert(cfg)

    try:
        summary = _handle_errors(debug, run)
    finally:
        stop_early()  # (a conversion stops the compiler it took; this one where it never started)
        early.stop()  # (stage A ends it; this one where the conversion stopped before)
    if not quiet:
        try:
            print_summary(summary, time.perf_counter() - t0)
            click.echo(summary.pop_text)
            sys.stdout.flush()
        except OSError as exc:  # (a full device, a closed pipe): the outputs are written all the same
            click.echo(
                f"nsys2prv: error: cannot write the summary to the standard output ({exc.strerror or exc}); "
                "the outputs are written",
                err=True,
            )
            sys.exit(2)
    if strict and summary.warnings:
        click.echo(
            f"nsys2prv: error: --strict: {len(summary.warnings)} warning(s): {summary.warnings[0]}"
            + (" ..." if len(summary.warnings) > 1 else ""),
            err=True,
        )
        sys.exit(4)


POP_EPILOG = """\b
Examples:
  nsys2prv pop run2/out.pop.json run4/out.pop.json --scaling strong
  nsys2prv pop 'run2/rank*.sqlite' 'run4/rank*.sqlite' --scaling weak --labels 2GPU,4GPU -o weak
\b
Each RUN is an earlier conversion's OUT.pop.json or a quoted glob of one run's reports
(merged as with -m; metrics only, no trace).  The first RUN is the reference.  Writes
OUT.pop.json, .csv, .md, .tex and (with matplotlib) .png.
"""


@click.command(
    short_help="POP metrics and scalability tables over runs (nsys2prv pop --help).",
    epilog=POP_EPILOG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option(
    "--scaling",
    type=click.Choice(["strong", "weak"]),
    help="Scaling mode (required with several runs: stated, never detected).",
)
@click.option("--labels", metavar="A,B,...", help="Column labels, one per RUN (comma separated).")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("scaling"),
    show_default=True,
    help="Base name of the outputs (OUT.pop.json ...).",
)
@click.option(
    "--nccl-as",
    type=click.Choice(NCCL_AS),
    default=NCCL_AS_DEFAULT,
    show_default=True,
    help="NCCL rule for RUNs given as reports.",
)
@click.option("--region", metavar="NAME", help="Scale the NVTX region NAME instead of the whole trace.")
@click.option("--iterations", metavar="NAME", help="Scale the steady-state iterations of NAME.")
@click.option(
    "--warmup", type=click.IntRange(min=0), default=0, metavar="N", help="Iterations excluded (RUNs given as reports)."
)
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Where .nsys-rep exports are cached.")
@click.option("--force", is_flag=True, help="Merge even when reports claim the same rank.")
@click.option(
    "--align",
    "align",
    default="auto",
    show_default=True,
    metavar="METHOD",
    help="Clock alignment for RUNs given as reports (as in the conversion).",
)
@click.option("-q", "--quiet", is_flag=True, help="Do not print the table.")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def pop_main(runs, scaling, labels, output, nccl_as, region, iterations, warmup, cache_dir, force, align, quiet, debug):
    """POP metrics and scalability over several runs (RUN... ; the first is the reference)."""

    def run():
        # here, not at the top: --help answers without loading pandas and numba
        from nsys2prv.metrics import tables
        from nsys2prv.metrics.scaling import default_labels, select_scope
        from nsys2prv.metrics.scaling import scaling as compute_scaling
        from nsys2prv.pipeline.runs import load_run

        collector.release()  # (the imports are done, as in ``main``)
        if len(runs) > 1 and not scaling:
            raise UserError("give --scaling strong or --scaling weak with several runs (state it in papers)")
        names = [l.strip() for l in labels.split(",")] if labels else None
        if names is not None and len(names) != len(runs):
            raise UserError(f"--labels has {len(names)} label(s) for {len(runs)} run(s)")
        from nsys2prv.model.align import parse_method  # checked before any report is read

        parse_method(align)
        loaded = [load_run(r, nccl_as, region, iterations, warmup, cache_dir, force, align) for r in runs]
        names = names or default_labels([select_scope(r, region, iterations) for r in loaded])
        res = compute_scaling(loaded, names, scaling or "strong", region, iterations)
        cols = [tables.column(r, r["label"]) for r in res["runs"]]
        title = (
            f"POP metrics ({names[0]}, one run, NCCL as {res['nccl_as']})"
            if res["scaling"] is None
            else f"POP scalability ({res['scaling']} scaling, reference {names[0]}, NCCL as {res['nccl_as']})"
        )
        cap = tables.caption({"nccl_as": res["nccl_as"]}, res["scaling"], names[0] if res["scaling"] else None)
        output.parent.mkdir(parents=True, exist_ok=True)
        paths, notes = tables.write_all(res, cols, output, title, cap)
        if not quiet:
            click.echo(tables.text_table(cols, title))
            for r in res["runs"]:
                for why in tables.na_reasons(r):
                    click.echo(f"  n/a ({r['label']}): {why}")
            for n in notes:
                click.echo(f"  note: {n}")
            click.echo("  wrote: " + ", ".join(paths))

    _handle_errors(debug, run)


WRAPPER = Path(__file__).resolve().parent / "data" / "nsys-rank.sh"


@click.command(
    short_help="Print the path of the per-rank profiling wrapper (nsys2prv wrapper --help).",
    context_settings={"help_option_names": ["-h", "--help"]},
)
def wrapper_main():
    """Print the path of nsys-rank.sh, the per-rank profiling wrapper shipped with nsys2prv.

    \b
      srun   "$(nsys2prv wrapper)" ./app args...
      mpirun -np 8 "$(nsys2prv wrapper)" ./app args...
      mpirun -np 8 "$(nsys2prv wrapper)" -t cuda,nvtx,mpi -- ./app args...

    \b
    It gives each rank a private TMPDIR (nsys agents sharing one can hang), lets a few nsys start at once
    on a node, retries a rank whose nsys failed before the application started, ends the processes it
    started, imports a .qdstrm with QdstrmImporter and writes rank<N>.nsys-rep into NSYS2PRV_OUTDIR
    (default: the current directory); docs/profiling.md.  Options before "--" replace its nsys profile defaults
    (-t cuda,nvtx,mpi,osrt --mpi-impl=openmpi|mpich -s none --cpuctxsw=none).
    Then: nsys2prv -m rank*.nsys-rep out/trace"""
    click.echo(str(WRAPPER))


SUBCOMMANDS = (("pop", pop_main), ("wrapper", wrapper_main))


def entry() -> None:
    """The console script (and ``python -m nsys2prv``): ``main``, then leave without the
    interpreter's teardown (freeing pandas', numba's and the worker pool's objects one by one is
    slow); every output file is closed by then, so only the standard streams need a flush.
    (``main`` itself stays an ordinary click command for in-process callers;
    under a profiler or tracer -- ``python -m cProfile -m nsys2prv`` -- the exit is the normal one.)"""
    code = 0
    catch_signals()  # again: ``entry`` may be called without the launcher
    try:
        main()
    except Interrupted as exc:
        name = signal.Signals(exc.signum).name
        print(f"nsys2prv: stopped by {name}; nothing written (earlier outputs are kept)", file=sys.stderr)
        code = 128 + exc.signum
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # not reached through click (it exits); keep it visible
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                code = code or 1
    if being_traced():
        sys.exit(code)  # a profiler or coverage tool writes its results at exit
    os._exit(code)

"""The command's options and its answers to bad input (one line naming the file, exit 2, no output)."""

from __future__ import annotations

import gzip
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import convert, convert_valid
from test_schema_versions import build_rank
from trace_tools import begins, intervals

from nsys2prv.core import registry as R


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def test_filter_nvtx_keeps_only_the_range_window(ranks, tmp_path):
    # "compute" spans 150-400 us in rank 0 and 1150-1400 us (aligned) in rank 1: window = 150 us .. 1400 us.
    trace, summary = convert_valid(
        ["-t", "cuda_api,nvtx,mpi", "--align", "session", "-m", *ranks, "-f", "compute"], tmp_path / "f"
    )
    assert trace.header.end_time == 1_400_000 - 150_000
    k = intervals(trace, R.CUDA_KERNEL.id)
    # rank 0's kernels (180-260, 190-370 us) start 30/40 us into the window; rank 1's (1180.., 1190..) too
    assert sorted(k["start"].tolist()) == [30_000, 40_000, 1_030_000, 1_040_000]
    pp = intervals(trace, R.NVTX_BASE)  # default domain push/pop: step is clipped to the window
    step = pp[pp["label"] == "step"].sort_values("start")
    assert step[["start", "end"]].values.tolist() == [[0, 750_000], [950_000, 1_250_000]]
    # rank 0 loses MPI_Init; rank 1 (1 ms later) keeps only MPI_Init (its Allreduce starts at the window end)
    assert summary["categories"]["mpi"]["dropped"]["outside the -f/--filter-nvtx window"] == 1 + 5


def test_filter_nvtx_unknown_range_is_an_error(ranks, tmp_path):
    code, out = convert(["-m", *ranks, "-f", "no-such-range", tmp_path / "x"], expect_ok=False)
    assert code == 2 and "NVTX range 'no-such-range'" in out
    assert not list(tmp_path.iterdir())


def test_compress_writes_gzip_identical_to_plain(ranks, tmp_path):
    convert(["-m", *ranks, tmp_path / "plain"])
    convert(["-z", "-m", *ranks, tmp_path / "gz"])
    assert not (tmp_path / "gz.prv").exists()
    with gzip.open(tmp_path / "gz.prv.gz", "rb") as fh:
        assert fh.read() == (tmp_path / "plain.prv").read_bytes()
    assert (tmp_path / "gz.pcf").read_text() == (tmp_path / "plain.pcf").read_text()


def test_categories_select_what_is_translated(ranks, tmp_path):
    trace, summary = convert_valid(["-t", "cuda_api_trace", "-m", *ranks], tmp_path / "api")
    assert set(summary["categories"]) == {"cuda_api", "kernels", "memcpy", "memset", "launch_links"}
    assert begins(trace, R.CUDA_API.id).sum() == 2 * 6
    # default (no -t): everything but osrt
    _, summary = convert_valid(["-m", *ranks], tmp_path / "all")
    assert "osrt" not in summary["categories"] and "mpi" in summary["categories"]
    # nvtx_startend_trace alone: push/pop rows are counted as not requested
    _, summary = convert_valid(["-t", "nvtx_startend_trace", "-m", *ranks], tmp_path / "se")
    assert summary["categories"]["nvtx"]["dropped"] == {"NVTX kind not requested with -t": 2 * 5}


def test_output_directory_is_created_and_sort_flag_accepted(ranks, tmp_path):
    convert_valid(["-s", "-m", *ranks], tmp_path / "new" / "dir" / "t")


@pytest.mark.parametrize(
    "make, args, message",
    [
        (None, ["-t", "bogus"], "unknown category 'bogus' in -t (valid:"),
        (None, [], "pass -m/--merge"),
        ("missing", [], "file not found"),
        ("text", [], "not an SQLite file"),
        ("foreign", [], "not an Nsight Systems export"),
    ],
)
def test_bad_input_one_line_error(ranks, tmp_path, make, args, message):
    inputs = list(ranks)
    if make:
        bad = tmp_path / f"{make}.sqlite"
        if make == "text":
            bad.write_text("hello")
        elif make == "foreign":
            with sqlite3.connect(bad) as con:
                con.execute("CREATE TABLE t (x)")
        inputs = [bad]
    code, out = convert([*args, *inputs, tmp_path / "o" / "t"], expect_ok=False)
    assert code == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nsys2prv: error: ") and message in lines[0]
    if make:
        assert str(inputs[0]) in lines[0]
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_inputs_are_opened_read_only(ranks, tmp_path):
    before = [Path(r).read_bytes() for r in ranks]
    convert(["-m", *ranks, tmp_path / "t"])
    assert [Path(r).read_bytes() for r in ranks] == before


def test_installed_command_help_shows_examples():
    out = subprocess.run([sys.executable, "-m", "nsys2prv", "--help"], capture_output=True, text=True, check=True)
    assert "Examples:" in out.stdout and "cuda_api_trace" in out.stdout and "--filter-nvtx" in out.stdout
    # the subcommands, one entry each, before the options
    lines = out.stdout.splitlines()
    at = lines.index("Commands:")
    block = lines[at + 1 : lines.index("", at)]
    assert [line.strip().split("  ")[0] for line in block if not line.startswith("    ")] == [
        "nsys2prv INPUT... OUT",
        "nsys2prv pop ...",
        "nsys2prv wrapper ...",
    ]
    assert (
        " ".join(block).split()
        == (
            "nsys2prv INPUT... OUT Convert reports into a Paraver trace and POP metrics (this help). "
            "nsys2prv pop ... POP metrics and scalability tables over runs (nsys2prv pop --help). "
            "nsys2prv wrapper ... Print the path of the per-rank profiling wrapper (nsys2prv wrapper --help)."
        ).split()
    )
    assert at < lines.index("Options:")


def test_command_leaves_fast_with_complete_output(ranks, tmp_path):
    """``python -m nsys2prv`` ends with os._exit (no interpreter teardown): the exit code, the summary
    on a pipe and every output file must still be complete."""
    from paraver_validator import validate_trace

    run = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "-m", *map(str, ranks), str(tmp_path / "t")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "wrote:" in run.stdout and run.stdout.rstrip().splitlines()[-1].startswith("  ")
    trace = validate_trace(tmp_path / "t")
    assert len(trace.events) > 0
    bad = subprocess.run(
        [sys.executable, "-m", "nsys2prv", str(tmp_path / "none.sqlite"), str(tmp_path / "u")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [f"nsys2prv: error: {tmp_path / 'none.sqlite'}: file not found"]


def test_worker_failure_ends_the_command_without_leftover_workers(ranks, tmp_path):
    """A job failing in a forked worker: exit 3 with the one-line message, and no worker left
    behind (a leftover worker would hold the pipes open and ``run`` would time out)."""
    code = (
        "import sys, nsys2prv.pipeline.slices as S\n"
        "def boom(*a, **k): raise RuntimeError('boom in a worker')\n"
        "S.translate_slice = boom\n"
        "from nsys2prv.cli import entry\n"
        f"sys.argv = ['nsys2prv', '-j', '2', '-m', {str(ranks[0])!r}, {str(ranks[1])!r}, {str(tmp_path / 'x')!r}]\n"
        "entry()\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 3
    assert run.stderr.strip().splitlines()[-1].startswith("nsys2prv: internal error: RuntimeError: boom in a worker")
    assert not list(tmp_path.glob("x*"))


def test_progress_bars_on_the_stages(ranks, tmp_path, capsys):
    from nsys2prv.config import Config
    from nsys2prv.pipeline import convert as run

    run(Config(inputs=list(ranks), output=tmp_path / "p", merge=True, show_progress=True, jobs=1))
    err = capsys.readouterr().err
    assert "read" in err and "translate" in err and "write" in err and "report" in err
    run(Config(inputs=list(ranks), output=tmp_path / "q", merge=True, show_progress=False, jobs=1))
    assert capsys.readouterr().err == ""

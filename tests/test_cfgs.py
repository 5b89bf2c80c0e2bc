"""Issue #5: Paraver views (.cfg) shipped in the package and generated per trace by --cfgs.

Every view is read with the strict parser (tests/cfg_parser.py); every event type, value, state and
tag it selects is checked against the registry, and, on a generated trace that contains every kind
of record nsys2prv writes, against what the writer actually produced.  No Paraver binary is
available here: the views are validated against the grammar, not loaded in Paraver.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest
from cfg_parser import CfgError, parse_cfg
from conftest import CLOVERLEAF, MPI4, ROOT, convert, convert_valid, need
from nsysgen import NsysBuilder
from paraver_validator import validate_trace

from nsys2prv.core import registry as R
from nsys2prv.paraver import cfgs as C
from nsys2prv.paraver.cfg_render import render
from nsys2prv.paraver.pcf import POP_HOST_TYPES
from nsys2prv.paraver.trace_views import fit, trace_info

PID = 7000
SM, ISSUE, TENSOR = "SMs Active [Throughput %]", "SM Issue [Throughput %]", "Tensor Active [Throughput %]"
DRAM_R, DRAM_W, PCIE = (
    "DRAM Read Bandwidth [Throughput %]",
    "DRAM Write Bandwidth [Throughput %]",
    "PCIe Read Throughput [Throughput %]",
)
METRICS = [SM, ISSUE, TENSOR, DRAM_R, DRAM_W, PCIE]  # the metrics of the trace ``build`` makes
DOMAIN_ID, NCCL_DOMAIN_ID = 5, 6


def shipped() -> dict[str, str]:
    """Relative path -> text of every .cfg the installed package carries (importlib.resources)."""
    out = {}

    def walk(node, prefix=""):
        for item in node.iterdir():
            if item.is_dir():
                walk(item, f"{prefix}{item.name}/")
            elif item.name.endswith(".cfg"):
                out[prefix + item.name] = item.read_text(encoding="utf-8")

    walk(resources.files("nsys2prv") / "cfgs")
    return out


SHIPPED = shipped()


# --- registry cross-check -------------------------------------------------------------------------


def nvtx_type(tid: int) -> tuple[int, str] | None:
    """(domain index, kind) of an NVTX type id, else None."""
    k, off = divmod(tid - R.NVTX_BASE, R.NVTX_DOMAIN_STRIDE)
    kinds = {v: key for key, v in R.NVTX_OFFSETS.items()}
    return (k, kinds[off]) if k >= 0 and off in kinds and tid < R.extrae_mpi.MPITYPE_PTOP else None


# The trace's GPU metric types, as docs/trace-content.md states them: 9400 + the metric's index among the
# trace's metric names in sorted order, labelled "GPU metric: <name>" (not read from the registry).
def gpu_metric_labels(names) -> dict[int, str]:
    return {9400 + i: f"GPU metric: {n}" for i, n in enumerate(sorted(set(names)))}


def check_against_registry(cfg, where: str, pcf: dict[int, str] | None = None, metrics=()) -> None:
    """Each selected type exists in the registry (fixed) or is an NVTX / GPU metric id of the
    registry's per-trace blocks; labels are the registry's; values are the type's fixed values;
    tags are the registry's; state parameters are registry states.  With ``pcf`` (a trace's
    types), every type must also be defined in that trace with that label; a GPU metric type must be
    one of the trace's ``metrics`` (names) with its label (``gpu_metric_labels``)."""
    for w in cfg.windows:
        labels = w.type_labels or [None] * len(w.types)
        for t, lab in zip(w.types, labels):
            if t in R.BY_ID:
                expected = R.BY_ID[t].label
            elif (nv := nvtx_type(t)) is not None:
                k, kind = nv
                expected = None if lab is None else lab
                if lab is not None:
                    prefix, suffix = R.NVTX_LABELS[kind].split("{}")
                    assert lab.startswith(prefix) and lab.endswith(suffix), f"{where}: {t} label {lab!r}"
                    domain = lab[len(prefix) : len(lab) - len(suffix) if suffix else None]
                    assert R.nvtx_types(k, domain)[kind].label == lab
            elif R.GPU_METRIC_BASE <= t < R.GPU_METRIC_BASE + R.GPU_METRIC_MAX:
                assert pcf is not None, f"{where}: GPU metric type {t} in a shipped view (ids are per trace)"
                expected = gpu_metric_labels(metrics).get(t)
                assert expected is not None, f"{where}: GPU metric type {t} is none of the trace's {sorted(metrics)}"
            else:
                raise AssertionError(f"{where}: event type {t} is not in the registry")
            if lab is not None:
                assert lab == expected, f"{where}: label {lab!r} for {t}, registry says {expected!r}"
            if pcf is not None:
                assert t in pcf, f"{where}: type {t} is not in the trace's .pcf"
                if lab is not None:
                    assert pcf[t] == lab, f"{where}: label {lab!r} for {t}, the .pcf says {pcf[t]!r}"
        for v in w.values:
            fixed = {v2 for t in w.types if t in R.BY_ID for v2 in R.BY_ID[t].values}
            assert v in fixed, f"{where}: value {v} is not a fixed value of types {w.types}"
        for tag in w.tags:
            assert tag in R.COMM_TAGS, f"{where}: tag {tag} is not a registry tag"
        for lvl, (fn, params) in w.semantic.items():
            if fn in ("Given State", "In State", "Not In State", "State Record Dur."):
                assert all(int(x) in R.STATES for p in params for x in p), f"{where}: state not in registry"


@pytest.mark.parametrize("path", sorted(SHIPPED))
def test_shipped_view_is_well_formed_and_uses_registry_ids(path):
    cfg = parse_cfg(SHIPPED[path], path)
    check_against_registry(cfg, path)
    assert path.split("/")[0] in ("basics", "views", "analysis"), "group views in folders"


def test_shipped_views_are_the_rendered_descriptions():
    """The committed files are exactly what VIEWS renders (python -m nsys2prv.paraver.cfgs regenerate)."""
    assert C.stale_files() == []
    assert set(SHIPPED) == {v.path for v in C.VIEWS}
    for v in C.VIEWS:
        assert SHIPPED[v.path] == C.render(v)
        assert v.summary, f"{v.path}: no README line"


def test_repository_cfgs_folder_is_the_package_folder():
    root = ROOT / "cfgs"
    assert root.is_dir()
    files = {p.relative_to(root).as_posix() for p in root.rglob("*.cfg")}
    assert files == set(SHIPPED)


def test_required_views_are_shipped():
    want = {
        "basics/states.cfg",
        "basics/cuda_api_calls.cfg",
        "basics/kernels.cfg",
        "basics/kernel_duration.cfg",
        "basics/memory_operations.cfg",
        "views/nccl_kernels.cfg",
        "views/nccl_payload.cfg",
        "views/nvtx_default_domain.cfg",
        "views/nvtx_domain_1.cfg",
        "views/nvtx_on_gpu.cfg",
        "views/mpi_calls.cfg",
        "views/mpi_collective_sizes.cfg",
        "views/launch_links.cfg",
        "analysis/device_useful.cfg",
        "analysis/device_transfer_nonoverlapped.cfg",
        "analysis/device_idle.cfg",
        "analysis/host_useful.cfg",
        "analysis/host_mpi.cfg",
        "analysis/host_cuda_api.cfg",
    }
    assert want <= set(SHIPPED)


def test_the_views_page_lists_every_view():
    page = (ROOT / "docs" / "paraver-views.md").read_text(encoding="utf-8")
    for v in C.VIEWS:
        assert f"`{v.path}`" in page, f"docs/paraver-views.md does not list {v.path}"
    for key in C.METRIC_FAMILIES:
        assert f"hwcounters/gpu_{key}.cfg" in page


# --- the parser is strict --------------------------------------------------------------------------


def _kernel_time() -> str:
    return SHIPPED["analysis/kernel_time.cfg"]


@pytest.mark.parametrize(
    "mutate, why",
    [
        (lambda s: s.replace("ConfigFile.NumWindows: 1", "ConfigFile.NumWindows: 2"), "NumWindows"),
        (lambda s: s.replace("evt_type 1 63000006", "evt_type 2 63000006"), "count"),
        (lambda s: s.replace("Analyzer2D.ControlWindow: 1", "Analyzer2D.ControlWindow: 2"), "ControlWindow"),
        (lambda s: s.replace("{thread, Last Evt Val}", "{thread, Last Event Value}"), "unknown function"),
        (
            lambda s: s.replace("Analyzer2D.Statistic: Time", "Analyzer2D.Statistic: Average Semantic Value"),
            "statistic",
        ),
        (lambda s: s.replace("window_id 1", "window_id 3"), "window_id"),
        (lambda s: s.replace("{evt_type, =}", "{evt_type, All}"), "evt_type"),
        (lambda s: s.replace("window_level thread\n", ""), "expected window_level"),
        (lambda s: s.replace('"CUDA kernel"', "CUDA kernel"), "quoted"),
        (lambda s: s.replace("#ParaverCFG\n", ""), "header"),
        (lambda s: s.replace("ConfigFile.EndDescription", "window_name x\nConfigFile.EndDescription"), "description"),
    ],
)
def test_parser_rejects_broken_files(mutate, why):
    text = mutate(_kernel_time())
    assert text != _kernel_time()
    with pytest.raises(CfgError, match=re.escape(why) if why[0].isalpha() and " " not in why else None):
        parse_cfg(text)


def test_parser_rejects_unknown_type_against_registry():
    cfg = parse_cfg(_kernel_time().replace("63000006", "63000099").replace('"CUDA kernel"', '"x"'))
    with pytest.raises(AssertionError, match="not in the registry"):
        check_against_registry(cfg, "x")


def test_derived_windows_refer_to_earlier_windows_only():
    text = SHIPPED["basics/kernel_duration.cfg"]
    assert parse_cfg(text).windows[2].parents == (1, 2)
    with pytest.raises(CfgError, match="not an earlier window"):
        parse_cfg(text.replace("window_identifiers 1 2", "window_identifiers 1 3"))


# --- a trace with every kind of record, and --cfgs ----------------------------------------------------


def build(path: Path) -> Path:
    b = NsysBuilder(path, schema="3.22", host="node1", env={"PMI_RANK": "0"})
    main = PID
    b.gpu_id_of_device.update({0: 0})
    b.process(PID, "./app")
    b.mpi_rank(PID, main, 0, ts=100)
    b.nvtx_domain(PID, main, DOMAIN_ID, "solver lib", ts=200)
    b.nvtx_domain(PID, main, NCCL_DOMAIN_ID, "NCCL", ts=300)
    b.nvtx_push(PID, main, 1_000, 900_000, text="step")
    b.nvtx_push(PID, main, 2_000, 400_000, text="inner")
    b.nvtx_startend(PID, main, 3_000, 5_000, "phase")
    b.nvtx_push(PID, main, 6_000, 300_000, text="lib region", domain_id=DOMAIN_ID)
    b.nvtx_startend(PID, main, 7_000, 8_000, "lib phase", domain_id=DOMAIN_ID)
    b.cuda_api(PID, main, "cudaLaunchKernel_v7000", 10_000, 20_000, 1)
    b.kernel(PID, 0, 7, 30_000, 90_000, 1, "stencil")
    b.cuda_api(PID, main, "cudaMemcpyAsync_v3020", 100_000, 110_000, 2)
    b.memcpy(PID, 0, 7, 115_000, 140_000, 2, 4096, copy_kind=1)
    b.cuda_api(PID, main, "cudaMemsetAsync_v3020", 150_000, 155_000, 3)
    b.memset(PID, 0, 7, 160_000, 170_000, 3, 1024)
    b.nvtx_push(
        PID,
        main,
        200_000,
        260_000,
        registered="ncclAllReduce",
        domain_id=NCCL_DOMAIN_ID,
        json_payload={
            "NCCL communicator ID": 77,
            "Message size [bytes]": 8192,
            "Reduction operation": "Sum",
            "Data type": "ncclFloat32",
        },
    )
    b.cuda_api(PID, main, "cudaLaunchKernel_v7000", 210_000, 220_000, 4)
    b.kernel(PID, 0, 9, 230_000, 280_000, 4, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    b.cuda_api(PID, main, "cudaStreamSynchronize_v3020", 285_000, 295_000, 5)
    b.mpi(PID, main, "MPI_Allreduce", 500_000, 550_000, kind="coll", size=64, recv_size=64)
    b.mpi(PID, main, "MPI_Send", 560_000, 570_000, kind="p2p", peer=1, size=32, tag=3)
    b.mpi(PID, main, "MPI_Comm_rank", 580_000, 581_000)
    b.osrt(PID, main, "pthread_mutex_lock", 600_000, 610_000)
    b.cpu_sample(PID, main, 615_000, [("solve", "/path/to/app"), ("main", "/path/to/app")])
    b.gpu_id_of_device.update({1: 1})
    b.cuda_api(PID, main, "cudaLaunchKernel_v7000", 620_000, 625_000, 6)
    b.kernel(PID, 1, 13, 630_000, 650_000, 6, "stencil")  # a second GPU: the trace gets GPU rows
    for t, v in ((0, 10), (100_000, 80), (300_000, 0)):
        b.gpu_metric_sample(
            0, t + 20_000, {SM: v, ISSUE: v // 2, TENSOR: v // 4, DRAM_R: v // 3, DRAM_W: v // 5, PCIE: 1}
        )
    return b.save()


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cfgs")
    src = build(tmp / "rank0.sqlite")
    out, views = tmp / "out" / "trace", tmp / "views"
    convert(["-t", "all,osrt", "--cfgs", views, src, out])
    trace = validate_trace(str(out))
    pcf = C.pcf_types(Path(f"{out}.pcf").read_text())
    return out, views, trace, pcf


def generated(views: Path) -> dict[str, str]:
    return {
        p.relative_to(views).as_posix(): p.read_text()
        for p in views.rglob("*.cfg")
        if p.relative_to(views).as_posix() not in SHIPPED
    }


def test_cfgs_option_copies_shipped_views_and_generates_this_traces_views(full):
    """--cfgs writes every shipped view rendered for this trace (its .pcf's values, its .row's rows,
    filters narrowed to the types its .pcf declares and its records use -- the .pcf also declares the
    host POP views' types, pcf.POP_HOST_TYPES, records or not: the shipped file's windows and filters
    otherwise) and the trace's own views."""
    out, views, trace, pcf = full
    records = set(pcf) - (POP_HOST_TYPES - set(trace.events["type"].unique().tolist()))
    info = trace_info(Path(f"{out}.pcf"))
    assert info.rows == {"cpu": 6, "node": 1, "appl": 1, "task": 1, "thread": 6}
    written = 0
    for view in C.VIEWS:
        fitted = fit(view, records)
        assert (views / view.path).exists() == (fitted is not None), view.path
        if fitted is None:
            continue
        written += 1
        assert (views / view.path).read_text() == render(fitted, info)
        mine, shipped = parse_cfg(render(fitted, info)).windows, parse_cfg(SHIPPED[view.path]).windows
        assert [w.name for w in mine] == [w.name for w in shipped], view.path
        assert all(
            set(a.types) <= set(b.types) and set(a.types) & records == set(a.types) for a, b in zip(mine, shipped)
        )
    assert (written, len(C.VIEWS)) == (41, 41)  # the trace has every kind of record
    gen = generated(views)
    assert set(gen) == {
        "nvtx/nvtx_0_default_domain.cfg",
        "nvtx/nvtx_1_solver_lib.cfg",
        "hwcounters/gpu_sm_active.cfg",
        "hwcounters/gpu_sm_issue.cfg",
        "hwcounters/gpu_tensor_active.cfg",
        "hwcounters/gpu_dram_bandwidth.cfg",
    }
    dram = parse_cfg(gen["hwcounters/gpu_dram_bandwidth.cfg"])
    assert [pcf[t] for w in dram.windows for t in w.types] == [
        R.GPU_METRIC_LABEL.format(DRAM_R),
        R.GPU_METRIC_LABEL.format(DRAM_W),
    ]
    lib = parse_cfg(gen["nvtx/nvtx_1_solver_lib.cfg"])
    assert lib.windows[0].types == [R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE]
    assert lib.windows[0].type_labels == ["NVTX push/pop ranges: solver lib"]
    assert lib.windows[0].compose["compose_thread"] == "Stacked Val"


def test_generated_views_are_well_formed_and_use_only_this_traces_types(full):
    _, views, _, pcf = full
    for rel, text in generated(views).items():
        cfg = parse_cfg(text, rel)
        check_against_registry(cfg, rel, pcf, METRICS)


def test_gpu_metric_view_labels_are_checked_against_the_metric_names(full):
    """A GPU metric view naming another metric's type, or a label the trace does not define, fails."""
    _, views, _, pcf = full
    text = generated(views)["hwcounters/gpu_sm_active.cfg"]
    cfg = parse_cfg(text)
    assert [(t, lab) for w in cfg.windows for t, lab in zip(w.types, w.type_labels)] == [
        (9404, "GPU metric: SMs Active [Throughput %]")
    ]
    for wrong in (text.replace("9404", "9403"), text.replace("SMs Active", "SM Issue")):
        with pytest.raises(AssertionError, match="label"):
            check_against_registry(parse_cfg(wrong), "x", pcf, METRICS)
    with pytest.raises(AssertionError, match="none of the trace's"):
        check_against_registry(cfg, "x", pcf, METRICS[:2])


def _event_types(trace) -> set[int]:
    return set(int(t) for t in trace.events["type"].unique())


def test_every_view_selects_records_the_writer_produced(full):
    """On a trace with every kind of record: each window's event types are defined in the .pcf and
    at least one of them has events in the .prv; each tag has communications.  (A view whose
    types are absent opens empty in Paraver, silently.)"""
    out, views, trace, pcf = full
    present = _event_types(trace)
    tags = set(int(t) for t in trace.comms["tag"].unique())
    for rel in sorted(SHIPPED) + sorted(generated(views)):
        cfg = parse_cfg((views / rel).read_text(), rel)
        for w in cfg.windows:
            if w.types:
                assert set(w.types) <= set(pcf), f"{rel}: {set(w.types) - set(pcf)} not in the .pcf"
                assert set(w.types) & present, f"{rel} window {w.name!r}: none of {w.types} has events"
            for tag in w.tags:
                assert tag in tags, f"{rel}: no communication with tag {tag}"


def test_per_trace_views_of_the_real_mpi_reports(tmp_path):
    """The real 4-rank reports: NVTX default domain and 'app'; no GPU metrics, so no hwcounters/."""
    need(MPI4)
    views = tmp_path / "views"
    convert(["-t", "mpi,nvtx,osrt", "-m", "--cfgs", views, *sorted(MPI4.glob("rank*.sqlite")), tmp_path / "mpi4"])
    gen = generated(views)
    assert set(gen) == {"nvtx/nvtx_0_default_domain.cfg", "nvtx/nvtx_1_app.cfg"}
    pcf = C.pcf_types((tmp_path / "mpi4.pcf").read_text())
    for rel, text in gen.items():
        check_against_registry(parse_cfg(text, rel), rel, pcf)


def test_render_for_an_existing_trace(full, tmp_path):
    out, views, _, _ = full
    res = subprocess.run(
        [sys.executable, "-m", "nsys2prv.paraver.cfgs", "render", f"{out}.prv", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.cfg")} == {
        p.relative_to(views).as_posix() for p in views.rglob("*.cfg")
    }


def test_cfgs_directory_that_cannot_be_written_is_a_user_error(full, tmp_path):
    out, *_ = full
    blocker = tmp_path / "file"
    blocker.write_text("")
    src = out.parent.parent / "rank0.sqlite"
    code, text = convert(["--cfgs", blocker / "sub", src, tmp_path / "t"], expect_ok=False)
    assert code == 2 and f"{blocker / 'sub'}: cannot write the output there (Not a directory)" in text
    assert not (tmp_path / "t.prv").exists()  # refused before any work


# --- packaging ---------------------------------------------------------------------------------------


def test_package_build_ships_the_views(tmp_path):
    """A wheel built from the sources carries every shipped .cfg as package data: `pip wheel .`
    without build isolation (offline); where the `wheel` package is missing, setuptools' build_py
    (the step that lays out the wheel's package files from the same pyproject configuration)."""
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    shutil.copytree(
        ROOT,
        src,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__", "tests", "scripts"),
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    if res.returncode == 0:
        wheel = next((tmp_path / "dist").glob("nsys2prv-*.whl"))
        names = {
            n.removeprefix("nsys2prv/cfgs/")
            for n in zipfile.ZipFile(wheel).namelist()
            if n.startswith("nsys2prv/cfgs/")
        }
    else:
        lib = tmp_path / "lib"
        res = subprocess.run(
            [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py", "-d", str(lib)],
            capture_output=True,
            text=True,
            cwd=src,
        )
        assert res.returncode == 0, res.stderr[-500:]
        names = {
            p.relative_to(lib / "nsys2prv" / "cfgs").as_posix()
            for p in (lib / "nsys2prv" / "cfgs").rglob("*")
            if p.is_file()
        }
    assert names == set(SHIPPED)


# ---------------------------------------------------------------------------------------------------
# The POP views run by Paraver's own paramedir reproduce OUT.pop.json to the ns (scripts/check_views.py)
def test_pop_views_in_paramedir_equal_pop_json(tmp_path):
    if shutil.which("paramedir") is None:
        pytest.skip("paramedir (Paraver, built from bsc-performance-tools/paraver-kernel) is not on PATH")
    out = tmp_path / "clover"
    convert_valid([need(CLOVERLEAF)], out)
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_views.py"), str(out)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("1 compared, largest difference 0 ns") == 9, res.stdout

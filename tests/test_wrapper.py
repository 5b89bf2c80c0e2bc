"""nsys-rank.sh, the per-rank profiling wrapper (``nsys2prv wrapper`` prints its path), driven with a
stand-in ``nsys`` that records how it was called."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FAKE_NSYS = """#!/bin/sh
case "$1" in status|--version) exit 0 ;; esac
{ echo "TMPDIR=$TMPDIR"; for a in "$@"; do echo "ARG=$a"; done; } > "$NSYS_LOG"
[ -d "$TMPDIR" ] && echo "TMPDIR_EXISTS" >> "$NSYS_LOG"
while [ "$1" != "-o" ]; do shift; done
echo REPORT > "$2.nsys-rep"
exit 0
"""


def wrapper_path() -> str:
    res = subprocess.run([sys.executable, "-m", "nsys2prv", "wrapper"], capture_output=True, text=True, check=True)
    return res.stdout.strip()


@pytest.fixture
def fake(tmp_path, tools):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(FAKE_NSYS)
    (bin_dir / "nsys").chmod(0o755)
    return bin_dir


TOOLS = (
    "bash",
    "sh",
    "mktemp",
    "awk",
    "sleep",
    "mkdir",
    "rm",
    "env",
    "grep",
    "date",
    "dirname",
    "readlink",
    "tail",
    "cat",
    "cp",
    "tr",
    "flock",
    "nproc",
    "id",
)


@pytest.fixture
def tools(tmp_path):
    """A PATH directory with just the tools the wrapper needs: no real nsys from the system."""
    d = tmp_path / "tools"
    d.mkdir()
    for name in TOOLS:
        (d / name).symlink_to(shutil.which(name))
    return d


def run(tmp_path, bin_dir, args, **env):
    base = {
        "PATH": f"{bin_dir}:{tmp_path / 'tools'}",
        "NSYS_LOG": str(tmp_path / "log"),
        "TMPDIR": str(tmp_path),
        "NSYS2PRV_SHM_DIR": str(tmp_path / "shm"),
        "NSYS2PRV_OUTDIR": str(tmp_path / "reports"),
        "NSYS2PRV_STAGGER": "0",
        **env,
    }
    return subprocess.run([wrapper_path(), *args], env=base, capture_output=True, text=True, timeout=30)


def logged(tmp_path) -> tuple[list[str], str, bool]:
    lines = (tmp_path / "log").read_text().splitlines()
    return (
        [x[4:] for x in lines if x.startswith("ARG=")],
        next(x[7:] for x in lines if x.startswith("TMPDIR=")),
        "TMPDIR_EXISTS" in lines,
    )


def test_wrapper_is_shipped_executable():
    path = wrapper_path()
    assert path.endswith("nsys-rank.sh") and os.access(path, os.X_OK)


def test_open_mpi_rank_gets_defaults_its_own_tmpdir_and_report_name(tmp_path, fake):
    res = run(tmp_path, fake, ["./app", "-n", "3"], OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_LOCAL_RANK="1")
    assert res.returncode == 0, res.stderr
    args, tmpdir, existed = logged(tmp_path)
    assert args == [
        "profile",
        "-t",
        "cuda,nvtx,mpi,osrt",
        "--mpi-impl=openmpi",
        "-s",
        "none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        "-o",
        f"{tmp_path}/reports/rank3",
        "./app",
        "-n",
        "3",
    ]
    assert existed and tmpdir.startswith(f"{tmp_path}/nsys-rank3.") and not os.path.exists(tmpdir)  # removed after
    assert (tmp_path / "reports").is_dir()


def test_slurm_rank_with_user_options_before_the_separator(tmp_path, fake):
    res = run(tmp_path, fake, ["-t", "cuda,nvtx", "--", "./app"], SLURM_PROCID="12", SLURM_LOCALID="0", PMI_RANK="12")
    assert res.returncode == 0, res.stderr
    args, _, _ = logged(tmp_path)
    assert args == ["profile", "-t", "cuda,nvtx", "--force-overwrite=true", "-o", f"{tmp_path}/reports/rank12", "./app"]


def test_mpich_is_guessed_from_its_environment(tmp_path, fake):
    assert run(tmp_path, fake, ["./app"], PMI_RANK="2", MPI_LOCALRANKID="0").returncode == 0
    args, _, _ = logged(tmp_path)
    assert "--mpi-impl=mpich" in args and f"{tmp_path}/reports/rank2" in args


def test_missing_nsys_is_one_clear_line(tmp_path, tools):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run(tmp_path, empty, ["./app"], OMPI_COMM_WORLD_RANK="0")
    assert res.returncode == 127
    assert res.stderr.strip() == (
        "nsys-rank.sh: rank 0: nsys not found: put Nsight Systems' bin directory on PATH or set NSYS_HOME"
    )


def test_nsys_home_is_used_when_nsys_is_not_on_path(tmp_path, fake):
    home = tmp_path / "nsys_home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "nsys").write_text(FAKE_NSYS)
    (home / "bin" / "nsys").chmod(0o755)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(tmp_path, empty, ["./app"], NSYS_HOME=str(home)).returncode == 0
    assert logged(tmp_path)[0][-1] == "./app"


# A stand-in for `nsys profile` that behaves as the real one does, one word of $FAKE_PLAN per attempt:
#   ok       nsys-launcher starts the application (its child), the report is written as a .qdstrm (nsys
#            could not find its importer), an agent daemon is left running (as nsys's often are)
#   rep      the same, but nsys imported the report itself (.nsys-rep)
#   agent    the agent failed: an agent daemon is left behind, exit 1, no application, no report
#   hang     the agent hangs: nsys never starts the application
#   lost     "Connection to the Agent lost", exit code 0, no application, no report (nsys 2022.4 does this)
PLAYER = r"""#!/bin/bash
case "$1" in status|--version) exit 0 ;; esac  # the version and environment checks: no CPU sampling
n=$(( $(cat "$FAKE_STATE" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$FAKE_STATE"
IFS=, read -ra plan <<< "$FAKE_PLAN"; mode=${plan[$((n - 1))]}
while [ "$1" != "-o" ]; do shift; done; out=$2; shift 2
agent() { (exec -a nsys-agent sleep 300) > /dev/null 2>&1 & }
case $mode in
    agent) agent; echo "Connection to the Agent lost" >&2; exit 1 ;;
    hang) agent; sleep 300 ;;
    lost) echo "Connection to the Agent lost." >&2; exit 0 ;;
esac
agent
[ -z "${FAKE_NOISE:-}" ] || { echo "Collecting data..."; echo "Importer error status: Importer binary not found" >&2; }
"$(dirname "$(readlink -f "$0")")/nsys-launcher" "$@"; rc=$?
[ -z "${FAKE_NOISE:-}" ] || printf "Generating '/tmp/nsys-report-1.qdstrm'\nGenerated:\n    %s.qdstrm\n" "$out"
if [ "$mode" = rep ]; then echo REPORT > "$out.nsys-rep"; else echo QDSTRM > "$out.qdstrm"; fi
exit $rc
"""
LAUNCHER = """#!/bin/bash
"$@"; rc=$?
exit $rc
"""
APP = """#!/bin/bash
echo "attempt=$NSYS2PRV_ATTEMPT delay=$NSYS2PRV_DELAY_S" >> "$APP_LOG"
[ -z "${FAKE_NOISE:-}" ] || { echo "app: step 1 done"; echo "WARNING: the app's own warning" >&2; }
sleep 0.5
exit ${APP_RC:-0}
"""
IMPORTER = """#!/bin/bash
[ "$1 $3 $5" = "-i -o -f" ] || exit 9
{ echo IMPORTED; cat "$2"; } > "$4"
"""


def script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def player(tmp_path, tools):
    """Debian's layout: bin/nsys -> lib/nsight-systems/bin/nsys -> ../target-linux-x64/nsys, which
    is a link into lib/x86_64-linux-gnu/...; the importer in lib/nsight-systems/host-linux-x64."""
    root = tmp_path / "usr"
    target = root / "lib/x86_64-linux-gnu/nsight-systems/target-linux-x64"
    script(target / "nsys", PLAYER)
    script(target / "nsys-launcher", LAUNCHER)
    (root / "lib/nsight-systems/bin").mkdir(parents=True)
    (root / "lib/nsight-systems/target-linux-x64").symlink_to("../x86_64-linux-gnu/nsight-systems/target-linux-x64")
    (root / "lib/nsight-systems/bin/nsys").symlink_to("../target-linux-x64/nsys")
    script(root / "lib/nsight-systems/host-linux-x64/QdstrmImporter", IMPORTER)
    (root / "bin").mkdir()
    (root / "bin/nsys").symlink_to("../lib/nsight-systems/bin/nsys")
    script(tmp_path / "app", APP)
    return root / "bin"


def ours_left(tmp_path) -> list[str]:
    """Processes still running with a private TMPDIR of this test's wrapper in their environment."""
    marker = f"TMPDIR={tmp_path}/nsys-rank".encode()
    left = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if any(v.startswith(marker) for v in env.read_bytes().split(b"\0")):
                left.append((env.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return left


def play(tmp_path, bin_dir, plan, **env):
    res = run(
        tmp_path,
        bin_dir,
        [str(tmp_path / "app")],
        FAKE_PLAN=plan,
        FAKE_STATE=str(tmp_path / "state"),
        APP_LOG=str(tmp_path / "app.log"),
        OMPI_COMM_WORLD_RANK="1",
        **env,
    )
    runs = (tmp_path / "app.log").read_text().splitlines() if (tmp_path / "app.log").exists() else []
    return res, [r.split()[0] for r in runs]


def test_the_qdstrm_is_imported_with_the_importer_of_the_installation_and_nothing_is_left(tmp_path, player):
    res, runs = play(tmp_path, player, "ok")
    assert res.returncode == 0, res.stderr
    importer = tmp_path / "usr/lib/nsight-systems/bin/../host-linux-x64/QdstrmImporter"
    assert re.fullmatch(
        rf"nsys-rank\.sh: rank 1: wrote {tmp_path}/reports/rank1\.nsys-rep \(imported from its \.qdstrm with "
        rf"{re.escape(str(importer))}\); waited 0\.\d{{3}} s for its turn; not retried",
        res.stdout.strip(),
    )
    assert (tmp_path / "reports/rank1.nsys-rep").read_text() == "IMPORTED\nQDSTRM\n"
    assert sorted(os.listdir(tmp_path / "reports")) == ["rank1.nsys-rep"]  # the .qdstrm removed
    assert runs == ["attempt=1"] and ours_left(tmp_path) == []  # the agent ended
    assert not list(tmp_path.glob("nsys-rank1.*"))


def test_nsys_s_own_messages_go_to_a_log_beside_the_reports(tmp_path, player):
    # the job's output keeps the application's lines and the wrapper's one line per rank; nsys's own
    # ("Importer error status ...", printed for every rank although the wrapper then imports) are logged
    res, runs = play(tmp_path, player, "ok", FAKE_NOISE="1")
    assert res.returncode == 0 and runs == ["attempt=1"]
    out, err = res.stdout.splitlines(), res.stderr.splitlines()
    assert out[0] == "app: step 1 done" and len(out) == 2
    assert out[1].startswith(f"nsys-rank.sh: rank 1: wrote {tmp_path}/reports/rank1.nsys-rep (imported")
    assert out[1].endswith(f"not retried; nsys's messages: {tmp_path}/reports/rank1.nsys.log")
    assert err == ["WARNING: the app's own warning"]
    log = (tmp_path / "reports/rank1.nsys.log").read_text().splitlines()
    assert sorted(log) == sorted(
        [
            "Collecting data...",
            "Importer error status: Importer binary not found",
            "Generating '/tmp/nsys-report-1.qdstrm'",
            "Generated:",
            f"    {tmp_path}/reports/rank1.qdstrm",
        ]
    )
    assert sorted(os.listdir(tmp_path / "reports")) == ["rank1.nsys-rep", "rank1.nsys.log"]
    assert ours_left(tmp_path) == []


def test_keep_qdstrm_and_a_report_nsys_imported_itself(tmp_path, player):
    res, _ = play(tmp_path, player, "ok", NSYS2PRV_KEEP_QDSTRM="1")
    assert res.returncode == 0 and sorted(os.listdir(tmp_path / "reports")) == ["rank1.nsys-rep", "rank1.qdstrm"]
    (tmp_path / "state").unlink()
    res, _ = play(tmp_path, player, "rep")
    assert res.returncode == 0 and (tmp_path / "reports/rank1.nsys-rep").read_text() == "REPORT\n"
    assert re.fullmatch(
        rf"nsys-rank\.sh: rank 1: wrote {tmp_path}/reports/rank1\.nsys-rep; waited 0\.\d{{3}} s for its turn; "
        "not retried",
        res.stdout.strip(),
    )
    assert sorted(os.listdir(tmp_path / "reports")) == ["rank1.nsys-rep"]  # the old .qdstrm went too


@pytest.mark.faults  # the slow tier (retries wait 1-3 s each): python3 -m pytest -m faults
def test_a_rank_whose_agent_failed_is_retried_and_the_agents_are_ended(tmp_path, player):
    res, runs = play(tmp_path, player, "agent,agent,ok")
    assert res.returncode == 0, res.stderr
    assert [x for x in res.stderr.splitlines() if x.startswith("nsys-rank.sh")] == [
        "nsys-rank.sh: rank 1: nsys profile failed before the application started (exit code 1); retrying (2/5)",
        "nsys-rank.sh: rank 1: nsys profile failed before the application started (exit code 1); retrying (3/5)",
    ]
    assert runs == ["attempt=3"]  # the application ran once, told its attempt
    log = tmp_path / "reports/rank1.nsys.log"
    assert res.stdout.strip().endswith(f"s for its turn; retried: attempt 3 of 5; nsys's messages: {log}")
    assert log.read_text().splitlines() == ["Connection to the Agent lost"] * 2  # (not in the job's output)
    assert "Connection to the Agent lost" not in res.stderr
    assert (tmp_path / "reports/rank1.nsys-rep").is_file() and ours_left(tmp_path) == []


@pytest.mark.faults  # the slow tier (retries wait 1-3 s each): python3 -m pytest -m faults
def test_an_nsys_that_exits_0_without_starting_the_application_is_retried(tmp_path, player):
    res, runs = play(tmp_path, player, "lost,ok")
    assert res.returncode == 0 and runs == ["attempt=2"]
    assert (
        "nsys-rank.sh: rank 1: nsys profile failed before the application started (exit code 0); retrying (2/5)"
        in res.stderr
    )


@pytest.mark.faults  # the slow tier (retries wait 1-3 s each): python3 -m pytest -m faults
def test_attempts_run_out_with_one_line(tmp_path, player):
    res, runs = play(tmp_path, player, "agent,agent", NSYS2PRV_ATTEMPTS="2")
    assert res.returncode == 1 and runs == []
    assert res.stderr.strip().splitlines()[-1] == (
        "nsys-rank.sh: rank 1: nsys profile failed 2 times before the application started"
    )
    assert ours_left(tmp_path) == [] and not (tmp_path / "reports/rank1.nsys-rep").exists()


@pytest.mark.faults  # the slow tier (retries wait 1-3 s each): python3 -m pytest -m faults
def test_a_hung_agent_is_ended_and_the_rank_retried(tmp_path, player):
    res, runs = play(tmp_path, player, "hang,ok", NSYS2PRV_START_TIMEOUT="1")
    assert res.returncode == 0, res.stderr
    assert "nsys-rank.sh: rank 1: the application did not start within 1 s (attempt 1/5)" in res.stderr
    assert runs == ["attempt=2"] and ours_left(tmp_path) == []


def test_an_application_that_ran_is_never_run_again(tmp_path, player):
    res, runs = play(tmp_path, player, "ok,ok", APP_RC="3")
    assert res.returncode == 3 and runs == ["attempt=1"]
    assert "nsys-rank.sh: rank 1: nsys profile or the application exited with code 3" in res.stderr
    assert (tmp_path / "reports/rank1.nsys-rep").read_text() == "IMPORTED\nQDSTRM\n"  # its report is kept


def test_a_missing_importer_names_the_command_that_imports(tmp_path, player):
    res, _ = play(tmp_path, player, "ok", NSYS2PRV_IMPORTER=str(tmp_path / "none"))
    rep = tmp_path / "reports" / "rank1"
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == (
        f"nsys-rank.sh: rank 1: {rep}.qdstrm not imported: QdstrmImporter not found (set NSYS2PRV_IMPORTER); "
        f"import it with: <nsight-systems>/host-linux-x64/QdstrmImporter -i {rep}.qdstrm -o {rep}.nsys-rep"
    )
    assert (tmp_path / "reports/rank1.qdstrm").is_file() and ours_left(tmp_path) == []


@pytest.mark.parametrize("layout", ["nvidia", "nsys_home"])
def test_the_importer_of_nvidia_layouts(tmp_path, tools, layout):
    home = tmp_path / "opt/nvidia/nsight-systems/2023.4.1"
    script(home / "bin/nsys", PLAYER)
    script(home / "bin/nsys-launcher", LAUNCHER)
    script(home / "host-linux-x64/QdstrmImporter", IMPORTER)
    script(tmp_path / "app", APP)
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = {"NSYS_HOME": str(home)} if layout == "nsys_home" else {}
    res, _ = play(tmp_path, empty if extra else home / "bin", "ok", **extra)
    assert res.returncode == 0, res.stderr
    assert "/host-linux-x64/QdstrmImporter); waited " in res.stdout
    assert (tmp_path / "reports/rank1.nsys-rep").read_text() == "IMPORTED\nQDSTRM\n"


def test_the_stagger_is_off_by_default_and_recorded_when_asked(tmp_path, player):
    res, _ = play(tmp_path, player, "ok", OMPI_COMM_WORLD_LOCAL_RANK="2")
    assert res.returncode == 0
    assert (tmp_path / "app.log").read_text().split()[1] < "delay=0.5"  # no wait before the first attempt
    (tmp_path / "state").unlink()
    (tmp_path / "app.log").unlink()
    res, _ = play(tmp_path, player, "ok", OMPI_COMM_WORLD_LOCAL_RANK="2", NSYS2PRV_STAGGER="0.3")
    delay = float((tmp_path / "app.log").read_text().split()[1].split("=")[1])
    assert res.returncode == 0 and delay >= 0.6


def test_nsys_processes_of_earlier_runs_are_ended_and_live_runs_left_alone(tmp_path, player):
    """An agent whose wrapper is gone (its private TMPDIR deleted, or the wrapper that owns it dead) makes
    every later nsys of the node fail: it is ended; the processes of a wrapper still running are not."""
    sleeper = script(tmp_path / "orphan" / "nsys", '#!/bin/bash\nexec {fd}<> <(:)\nread -u "$fd"\n')
    owner = subprocess.Popen(["bash", "-c", 'exec {fd}<> <(:); read -u "$fd"', "nsys-rank.sh"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    dirs = {
        "deleted": tmp_path / "nsys-rank7.XyZ789",
        "dead owner": tmp_path / "nsys-rank6.QwE456",
        "live": tmp_path / "nsys-rank5.AbC123",
    }
    for name, pid in (("dead owner", gone.pid), ("live", owner.pid)):
        (dirs[name] / "1").mkdir(parents=True)
        (dirs[name] / "owner").write_text(f"{pid}\n")
    procs = {
        name: subprocess.Popen(
            [str(sleeper)], env={"TMPDIR": str(d / "1"), "PATH": "/usr/bin:/bin"}, start_new_session=True
        )
        for name, d in dirs.items()
    }
    try:
        res, runs = play(tmp_path, player, "ok")
        assert res.returncode == 0 and runs == ["attempt=1"]
        assert "nsys-rank.sh: rank 1: ending 2 nsys processes of earlier runs" in res.stderr
        assert procs["deleted"].wait(timeout=5) == -15 and procs["dead owner"].wait(timeout=5) == -15
        assert procs["live"].poll() is None
    finally:
        for proc in (*procs.values(), owner):
            proc.kill()
            proc.wait()


def _comm(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def test_a_registry_left_by_a_killed_nsys_is_removed_when_no_nsys_runs(tmp_path, player):
    """nsys's session registry in /dev/shm, left locked by a killed nsys, hangs every later nsys: removed
    before starting when no nsys runs on the node, kept while one does (it is in use)."""
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "NSys-2022.4.2.1").write_bytes(b"registry")
    (shm / "other").write_bytes(b"not nsys's")
    sleeper = script(tmp_path / "other" / "nsys", '#!/bin/bash\nexec {fd}<> <(:)\nread -u "$fd"\n')
    other_nsys = subprocess.Popen([str(sleeper)])
    try:
        res, _ = play(tmp_path, player, "ok")
        assert res.returncode == 0 and sorted(os.listdir(shm)) == ["NSys-2022.4.2.1", "other"]
    finally:
        other_nsys.kill()
        other_nsys.wait()
    if any(_comm(p) in ("nsys", "nsys-launcher", "nsys-tee") for p in Path("/proc").glob("[0-9]*/comm")):
        pytest.skip("an nsys runs on this machine: the registry is in use")
    (tmp_path / "state").unlink()
    res, _ = play(tmp_path, player, "ok")
    assert res.returncode == 0 and sorted(os.listdir(shm)) == ["other"]


def test_defaults_gain_sampling_and_scheduling_where_nsys_can_take_them(tmp_path, fake):
    """An nsys of 2023 or later whose environment check passes gets CPU samples with frame-pointer
    stacks and scheduling; 2022 (its sampling hung after the application ended) does not."""
    status = (
        '[ "$1" = --version ] && { echo "NVIDIA Nsight Systems version 2023.4.4.54-234433681190v0"; exit 0; }\n'
        '[ "$1" = status ] && { echo "CPU Profiling Environment (process-tree): OK"; exit 0; }\n'
    )
    (fake / "nsys").write_text(FAKE_NSYS.replace("#!/bin/sh\n", "#!/bin/sh\n" + status, 1))
    assert "process-tree): OK" in (fake / "nsys").read_text()
    res = run(tmp_path, fake, ["./app"], OMPI_COMM_WORLD_RANK="0")
    assert res.returncode == 0, res.stderr
    args, _, _ = logged(tmp_path)
    i = args.index("--mpi-impl=openmpi")
    assert args[i + 1 : i + 5] == ["-s", "process-tree", "--cpuctxsw=process-tree", "--backtrace=fp"]
    (fake / "nsys").write_text((fake / "nsys").read_text().replace("version 2023.4", "version 2022.4"))
    assert run(tmp_path, fake, ["./app"], OMPI_COMM_WORLD_RANK="0").returncode == 0
    args, _, _ = logged(tmp_path)
    i = args.index("--mpi-impl=openmpi")
    assert args[i + 1 : i + 4] == ["-s", "none", "--cpuctxsw=none"]

"""Tests of the strict Paraver validator itself (tests/paraver_validator.py)."""

import gzip
import importlib
import os
import sys

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paraver_validator import load_trace, validate_trace  # noqa: E402

HEADER = "#Paraver (21/11/2026 at 22:42):1000_ns:2(2,2):1:2(2:1,2:2)"

# 2 nodes x 2 CPUs (cpus 1,2 on node 1; 3,4 on node 2); 1 app, task 1 on node 1 and
# task 2 on node 2, 2 threads each.
PRV = """\
{header}
1:1:1:1:1:0:100:1
1:3:1:2:1:0:200:1
2:1:1:1:1:0:63000001:5:63000002:7
2:0:1:1:2:10:63000002:12345678901
1:2:1:1:2:50:300:0
2:2:1:1:2:50:63000001:0
3:1:1:1:1:100:110:3:1:2:1:120:130:64:7
# a comment line
2:3:1:2:1:200:63000001:5
1:4:1:2:2:250:1000:1
3:4:1:2:2:250:260:0:1:1:2:240:270:8:1
2:4:1:2:2:1000:63000001:0
""".replace("{header}", HEADER)

PCF = """\
DEFAULT_OPTIONS

LEVEL               THREAD
UNITS               NANOSEC
LOOK_BACK           100
SPEED               1
FLAG_ICONS          ENABLED
NUM_OF_STATE_COLORS 1000
YMAX_SCALE          37


DEFAULT_SEMANTIC

THREAD_FUNC          State As Is


STATES
0    Idle
1    Running


STATES_COLOR
0    {117,195,255}
1    {0,0,255}


GRADIENT_COLOR
0    {0,255,2}
1    {0,244,13}


GRADIENT_NAMES
0    Gradient 0
1    Grad. 1/MPI Events


EVENT_TYPE
0    63000001    CUDA kernel
VALUES
0      End
5      my_kernel<float, 3>


EVENT_TYPE
0    63000002    Bytes transferred

"""

ROW = """\
LEVEL CPU SIZE 4
CPU 1.1
CPU 1.2
CPU 2.1
CPU 2.2

LEVEL NODE SIZE 2
node1
node2

LEVEL THREAD SIZE 4
THREAD 1.1.1
THREAD 1.1.2
THREAD 1.2.1
THREAD 1.2.2
"""


def write_trace(tmp_path, prv=PRV, pcf=PCF, row=ROW, gz=False, name="trace"):
    base = tmp_path / name
    if gz:
        with gzip.open(str(base) + ".prv.gz", "wt") as f:
            f.write(prv)
    else:
        (tmp_path / f"{name}.prv").write_text(prv)
    (tmp_path / f"{name}.pcf").write_text(pcf)
    (tmp_path / f"{name}.row").write_text(row)
    return base


def sub(text, old, new, count=1):
    assert old in text, old
    return text.replace(old, new, count)


# --------------------------------------------------------------------------- valid traces
def test_correct_trace_passes(tmp_path):
    trace = validate_trace(write_trace(tmp_path))
    assert trace.problems == []


def test_gz_trace_passes(tmp_path):
    base = write_trace(tmp_path, gz=True)
    assert not os.path.exists(str(base) + ".prv")
    trace = validate_trace(base)
    assert trace.prv_path.endswith(".prv.gz")
    assert len(trace.events) == 6


def test_path_with_prv_extension_accepted(tmp_path):
    base = write_trace(tmp_path)
    validate_trace(str(base) + ".prv")


def test_no_trailing_newline_passes(tmp_path):
    validate_trace(write_trace(tmp_path, prv=PRV.rstrip("\n")))


def test_resources_zero_passes(tmp_path):
    prv = "#Paraver (x):100_ns:0:1:1(1:0)\n1:0:1:1:1:0:100:1\n2:0:1:1:1:5:63000001:5\n"
    row = "LEVEL THREAD SIZE 1\nTHREAD 1.1.1\n"
    validate_trace(write_trace(tmp_path, prv=prv, row=row))


def test_resources_without_cpu_list_and_ncomm(tmp_path):
    # "2" = 2 nodes with one CPU each; ",1" = one communicator line follows
    prv = "#Paraver (x):100_ns:2:1:2(1:1,1:2),1\nc:1:1:2:1:2\n1:1:1:1:1:0:100:1\n1:2:1:2:1:0:100:1\n"
    row = "LEVEL NODE SIZE 2\na\nb\n\nLEVEL THREAD SIZE 2\nt1\nt2\n"
    trace = validate_trace(write_trace(tmp_path, prv=prv, row=row))
    assert trace.header.nodes == [1, 1]
    assert trace.header.ncomm == 1
    assert trace.rec_line.tolist() == [3, 4]


def test_importable_as_package_module():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    try:
        mod = importlib.import_module("tests.paraver_validator")
    finally:
        sys.path.remove(root)
    assert callable(mod.validate_trace) and callable(mod.load_trace)


# --------------------------------------------------------------------------- load_trace
def test_load_trace_exact_contents(tmp_path):
    t = load_trace(write_trace(tmp_path))
    assert t.problems == []
    h = t.header
    assert h.date == "21/11/2026 at 22:42"
    assert h.end_time == 1000 and h.unit == "_ns"
    assert h.nodes == [2, 2]
    assert h.apps == [[(2, 1), (2, 2)]]
    assert (h.n_nodes, h.total_cpus, h.n_apps, h.n_tasks, h.n_threads) == (2, 4, 1, 2, 4)
    assert h.ncomm is None

    exp_states = pd.DataFrame(
        [[1, 1, 1, 1, 0, 100, 1], [3, 1, 2, 1, 0, 200, 1], [2, 1, 1, 2, 50, 300, 0], [4, 1, 2, 2, 250, 1000, 1]],
        columns=["cpu", "appl", "task", "thread", "begin", "end", "state"],
        dtype=np.int64,
    )
    pd.testing.assert_frame_equal(t.states, exp_states)

    exp_events = pd.DataFrame(
        [
            [1, 1, 1, 1, 0, 63000001, 5, 2],
            [1, 1, 1, 1, 0, 63000002, 7, 2],
            [0, 1, 1, 2, 10, 63000002, 12345678901, 3],
            [2, 1, 1, 2, 50, 63000001, 0, 5],
            [3, 1, 2, 1, 200, 63000001, 5, 7],
            [4, 1, 2, 2, 1000, 63000001, 0, 10],
        ],
        columns=["cpu", "appl", "task", "thread", "time", "type", "value", "rec"],
        dtype=np.int64,
    )
    pd.testing.assert_frame_equal(t.events, exp_events)

    exp_comms = pd.DataFrame(
        [[1, 1, 1, 1, 100, 110, 3, 1, 2, 1, 120, 130, 64, 7], [4, 1, 2, 2, 250, 260, 0, 1, 1, 2, 240, 270, 8, 1]],
        columns=[
            "cpu",
            "appl",
            "task",
            "thread",
            "log_send",
            "phys_send",
            "rcpu",
            "rappl",
            "rtask",
            "rthread",
            "log_recv",
            "phys_recv",
            "size",
            "tag",
        ],
        dtype=np.int64,
    )
    pd.testing.assert_frame_equal(t.comms, exp_comms)

    # rec -> .prv line number (header is line 1, the comment line 9 is not a record)
    assert t.rec_line.tolist() == [2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13]

    assert t.pcf.states == {0: "Idle", 1: "Running"}
    assert t.pcf.types == {
        63000001: {"label": "CUDA kernel", "gradient": 0, "values": {0: "End", 5: "my_kernel<float, 3>"}},
        63000002: {"label": "Bytes transferred", "gradient": 0, "values": None},
    }
    assert t.pcf.states_color == {0: (117, 195, 255), 1: (0, 0, 255)}
    assert t.pcf.gradient_names[1] == "Grad. 1/MPI Events"
    assert t.row == {
        "CPU": ["CPU 1.1", "CPU 1.2", "CPU 2.1", "CPU 2.2"],
        "NODE": ["node1", "node2"],
        "THREAD": ["THREAD 1.1.1", "THREAD 1.1.2", "THREAD 1.2.1", "THREAD 1.2.2"],
    }


def test_load_trace_does_not_raise_on_problems(tmp_path):
    t = load_trace(write_trace(tmp_path, prv=sub(PRV, "1000_ns", "1000")))
    assert len(t.problems) == 1 and "_ns" in t.problems[0]
    assert len(t.states) == 4


def test_shared_values_list_and_big_event_value(tmp_path):
    pcf = sub(
        PCF, "0    63000001    CUDA kernel\n", "0    63000001    CUDA kernel\n0    63000003    CUDA kernel (other)\n"
    )
    prv = sub(PRV, "2:3:1:2:1:200:63000001:5", "2:3:1:2:1:200:63000003:5:63000002:" + str(2**63 - 1))
    t = validate_trace(write_trace(tmp_path, prv=prv, pcf=pcf))
    assert t.pcf.types[63000003]["values"] == {0: "End", 5: "my_kernel<float, 3>"}
    assert t.events["value"].max() == 2**63 - 1


# --------------------------------------------------------------------------- single defects
_NEXT_BLOCK = "\n\nEVENT_TYPE\n0    63000002"

DEFECTS = {
    # header
    "missing_ns": (dict(prv=("1000_ns", "1000")), "'_ns' unit"),
    "wrong_unit": (dict(prv=("1000_ns", "1000_us")), "'_ns' unit"),
    "stray_colon_in_app": (dict(prv=(":1:2(2:1,2:2)", ":1:2:(2:1,2:2)")), "stray ':'"),
    "task_on_node_above_n": (dict(prv=("2(2:1,2:2)", "2(2:1,2:3)")), "mapped to node 3"),
    "napps_mismatch": (dict(prv=(":1:2(2:1,2:2)", ":2:2(2:1,2:2)")), "NAPPS is 2"),
    "task_count_mismatch": (dict(prv=(":1:2(2:1,2:2)", ":1:3(2:1,2:2)")), "declares 3 tasks"),
    "bad_resources": (dict(prv=("2(2,2)", "2(2,2,1)")), "declares 2 nodes"),
    "missing_comm_lines": (dict(prv=("2:2)\n", "2:2),2\n")), "communicator lines"),
    # records: syntax
    "negative_time": (dict(prv=("1:4:1:2:2:250:1000:1", "1:4:1:2:2:-250:1000:1")), "negative"),
    "empty_field": (dict(prv=("1:1:1:1:1:0:100:1", "1:1:1:1:1::100:1")), "empty field"),
    "trailing_colon": (dict(prv=("2:4:1:2:2:1000:63000001:0", "2:4:1:2:2:1000:63000001:0:")), "empty field"),
    "space_in_record": (dict(prv=("1:1:1:1:1:0:100:1", "1:1:1:1:1: 0:100:1")), "invalid character"),
    "crlf": (dict(prv=("1:1:1:1:1:0:100:1\n", "1:1:1:1:1:0:100:1\r\n")), "invalid character"),
    "blank_line": (dict(prv=("# a comment line\n", "\n")), "blank line"),
    "record_type_4": (dict(prv=("# a comment line", "4:1:1:1:1:100")), "neither a record"),
    "state_field_count": (dict(prv=("1:1:1:1:1:0:100:1", "1:1:1:1:1:0:100:1:1")), "state record must have 8 fields"),
    "event_without_pair": (
        dict(prv=("2:2:1:1:2:50:63000001:0", "2:2:1:1:2:50:63000001")),
        "event record must have 6 + 2k fields",
    ),
    "comm_field_count": (
        dict(prv=("3:1:1:1:1:100:110:3:1:2:1:120:130:64:7", "3:1:1:1:1:100:110:3:1:2:1:120:130:64")),
        "communication record must have 15 fields",
    ),
    "value_over_int64": (
        dict(prv=("63000002:12345678901", "63000002:9223372036854775808")),
        "does not fit in a signed 64-bit",
    ),
    # records: objects
    "appl_out_of_range": (dict(prv=("1:1:1:1:1:0:100:1", "1:1:2:1:1:0:100:1")), "appl out of range"),
    "task_out_of_range": (dict(prv=("1:1:1:1:1:0:100:1", "1:1:1:3:1:0:100:1")), "task out of range"),
    "thread_out_of_range": (dict(prv=("1:4:1:2:2:250:1000:1", "1:4:1:2:3:250:1000:1")), "thread out of range"),
    "thread_zero": (dict(prv=("1:4:1:2:2:250:1000:1", "1:4:1:2:0:250:1000:1")), "thread out of range"),
    "cpu_out_of_range": (dict(prv=("1:1:1:1:1:0:100:1", "1:5:1:1:1:0:100:1")), "cpu out of range 0..4"),
    "cpu_on_wrong_node": (dict(prv=("1:3:1:2:1:0:200:1", "1:1:1:2:1:0:200:1")), "wrong node"),
    "receiver_thread_out_of_range": (
        dict(prv=("3:1:1:1:1:100:110:3:1:2:1:", "3:1:1:1:1:100:110:3:1:2:5:")),
        "communication receiver: rthread out of range",
    ),
    "receiver_cpu_on_wrong_node": (
        dict(prv=("3:1:1:1:1:100:110:3:1:2:1:", "3:1:1:1:1:100:110:1:1:2:1:")),
        "communication receiver: rcpu on the wrong node",
    ),
    # records: times and order
    "time_after_end": (
        dict(prv=("2:4:1:2:2:1000:63000001:0", "2:4:1:2:2:1001:63000001:0")),
        "after the header END time",
    ),
    "state_begin_after_end": (dict(prv=("1:4:1:2:2:250:1000:1", "1:4:1:2:2:250:240:1")), "begin time after its end"),
    "phys_recv_before_send": (dict(prv=(":240:270:8:1", ":240:259:8:1")), "physical receive time before physical send"),
    "unsorted_records": (
        dict(prv=("2:3:1:2:1:200:63000001:5", "2:3:1:2:1:90:63000001:5")),
        "non-decreasing time order",
    ),
    "event_before_state_at_equal_time": (
        dict(prv=("1:2:1:1:2:50:300:0\n2:2:1:1:2:50:63000001:0", "2:2:1:1:2:50:63000001:0\n1:2:1:1:2:50:300:0")),
        "event before state",
    ),
    "comm_before_state_at_equal_time": (
        dict(
            prv=(
                "1:4:1:2:2:250:1000:1\n3:4:1:2:2:250:260:0:1:1:2:240:270:8:1",
                "3:4:1:2:2:250:260:0:1:1:2:240:270:8:1\n1:4:1:2:2:250:1000:1",
            )
        ),
        "communication before state",
    ),
    # pcf vs prv
    "unlabelled_type": (
        dict(pcf=("0    63000002    Bytes", "0    63000003    Bytes")),
        "not defined in any .pcf EVENT_TYPE",
    ),
    "unlabelled_value": (dict(prv=("2:3:1:2:1:200:63000001:5", "2:3:1:2:1:200:63000001:6")), "without a label"),
    "unlabelled_value_zero": (dict(pcf=("0      End\n", "")), "without a label"),
    "state_not_in_states": (dict(prv=("1:4:1:2:2:250:1000:1", "1:4:1:2:2:250:1000:7")), "not listed in .pcf STATES"),
    # pcf
    "type_defined_twice": (
        dict(pcf=(_NEXT_BLOCK, "\n\nEVENT_TYPE\n0    63000001    Again" + _NEXT_BLOCK)),
        "defined twice",
    ),
    "type_defined_twice_same_block": (
        dict(pcf=("0    63000001    CUDA kernel\n", "0    63000001    CUDA kernel\n0    63000001    CUDA kernel\n")),
        "defined twice",
    ),
    "value_over_int32_labelled": (
        dict(pcf=("5      my_kernel", "2147483648 huge\n5      my_kernel")),
        "exceeds 2^31-1",
    ),
    "type_over_int32_defined": (
        dict(pcf=(_NEXT_BLOCK, "\n\nEVENT_TYPE\n0    2147483648    Huge" + _NEXT_BLOCK)),
        "exceeds 2^31-1",
    ),
    "label_split_over_lines": (dict(pcf=("my_kernel<float, 3>", "my_kernel<float,\nint>")), "does not parse"),
    "type_label_split_over_lines": (dict(pcf=("Bytes transferred", "Bytes\ntransferred")), "does not parse"),
    "label_with_control_char": (dict(pcf=("my_kernel<float, 3>", "my_kernel<float,\x0b3>")), "control characters"),
    "empty_type_label": (dict(pcf=("0    63000002    Bytes transferred", "0    63000002    ")), "empty label"),
    "value_labelled_twice": (dict(pcf=("5      my_kernel", "5 dup\n5      my_kernel")), "labelled twice"),
    "line_outside_section": (dict(pcf=("STATES_COLOR\n", "stray text\n\nSTATES_COLOR\n")), "outside any section"),
    "bad_state_line": (dict(pcf=("1    Running", "Running")), "STATES line does not parse"),
    "pcf_crlf": (dict(pcf=("\n", "\r\n", -1)), "carriage returns"),
    # row
    "row_thread_count_mismatch": (
        dict(row=("THREAD SIZE 4", "THREAD SIZE 3"), row2=("THREAD 1.2.2\n", "")),
        "LEVEL THREAD has 3 names",
    ),
    "row_node_count_mismatch": (
        dict(row=("NODE SIZE 2\nnode1\nnode2\n", "NODE SIZE 3\nnode1\nnode2\nnode3\n")),
        "LEVEL NODE has 3 names",
    ),
    "row_cpu_count_mismatch": (dict(row=("CPU SIZE 4", "CPU SIZE 3"), row2=("CPU 2.2\n", "")), "LEVEL CPU has 3 names"),
    "row_size_vs_names": (dict(row=("THREAD 1.2.2\n", "")), "only 3 names follow"),
    "row_more_names_than_size": (dict(row=("node2\n", "node2\nnode3\n")), "more names than"),
    "row_empty_name": (dict(row=("node1\n", "  \n")), "empty name"),
    "row_missing_thread_level": (
        dict(row=("\nLEVEL THREAD SIZE 4\nTHREAD 1.1.1\nTHREAD 1.1.2\nTHREAD 1.2.1\nTHREAD 1.2.2\n", "")),
        "missing 'LEVEL THREAD",
    ),
    "row_unknown_level": (dict(row=("LEVEL CPU", "LEVEL CORE")), "unknown level"),
}


# defects whose follow-up problems are legitimate (the header's object model changes)
CASCADING = {"bad_resources", "bad_state_line", "row_size_vs_names"}


def apply_defect(spec):
    texts = {"prv": PRV, "pcf": PCF, "row": ROW}
    for key, repl in spec.items():
        target = key.rstrip("2")
        old, new = repl[0], repl[1]
        count = repl[2] if len(repl) > 2 else 1
        texts[target] = sub(texts[target], old, new, count)
    return texts


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_single_defect_is_caught(tmp_path, name):
    spec, expected = DEFECTS[name]
    base = write_trace(tmp_path, **apply_defect(spec))
    with pytest.raises(AssertionError) as exc:
        validate_trace(base)
    msg = str(exc.value)
    assert expected.lower() in msg.lower(), msg
    # a single defect is reported once, not drowned in follow-up errors
    problems = load_trace(base).problems
    if name not in CASCADING:
        assert len(problems) == 1, "\n".join(problems)


def test_wrong_node_resources_zero(tmp_path):
    prv = "#Paraver (x):100_ns:0:1:1(1:0)\n1:1:1:1:1:0:100:1\n"
    row = "LEVEL THREAD SIZE 1\nTHREAD 1.1.1\n"
    with pytest.raises(AssertionError, match="cpu must be 0 when RESOURCES is 0"):
        validate_trace(write_trace(tmp_path, prv=prv, row=row))


def test_node_nonzero_with_resources_zero(tmp_path):
    prv = "#Paraver (x):100_ns:0:1:1(1:1)\n1:0:1:1:1:0:100:1\n"
    row = "LEVEL THREAD SIZE 1\nTHREAD 1.1.1\n"
    with pytest.raises(AssertionError, match="RESOURCES is 0"):
        validate_trace(write_trace(tmp_path, prv=prv, row=row))


def test_all_problems_listed(tmp_path):
    texts = apply_defect(
        {
            "prv": ("1000_ns", "1000"),
            "prv2": ("1:4:1:2:2:250:1000:1", "1:4:1:2:3:250:1000:7"),
            "pcf": ("0      End\n", ""),
            "row": ("NODE SIZE 2\nnode1\nnode2\n", "NODE SIZE 1\nnode1\n"),
        }
    )
    with pytest.raises(AssertionError) as exc:
        validate_trace(write_trace(tmp_path, **texts))
    msg = str(exc.value)
    for expected in (
        "'_ns' unit",
        "thread out of range",
        "not listed in .pcf STATES",
        "without a label",
        "LEVEL NODE has 1 names",
    ):
        assert expected in msg, msg


def test_problem_list_is_capped(tmp_path):
    pcf = PCF.replace("5      my_kernel<float, 3>\n", "".join(f"{i} \n" for i in range(100, 160)))
    with pytest.raises(AssertionError) as exc:
        validate_trace(write_trace(tmp_path, pcf=pcf))
    msg = str(exc.value)
    assert "has 61 problem(s)" in msg
    assert "  50. " in msg and "  51. " not in msg and "... and 11 more" in msg


def test_record_check_reports_count_and_examples(tmp_path):
    prv = PRV.replace(":63000001:5", ":63000001:6")
    t = load_trace(write_trace(tmp_path, prv=prv))
    assert len(t.problems) == 1
    assert "(63000001, 6)" in t.problems[0] and "line 4" in t.problems[0]


def test_missing_files(tmp_path):
    with pytest.raises(AssertionError, match="no .*prv"):
        validate_trace(tmp_path / "nothing")
    base = write_trace(tmp_path)
    os.remove(str(base) + ".row")
    with pytest.raises(AssertionError, match=r"missing file .*\.row"):
        validate_trace(base)

"""The one place that defines Paraver ids: event types, fixed value lists, states, tags.

The writer, the .pcf, the cfg checks and the tests import this module; no id is
written anywhere else.  Types whose values are names (kernels, API calls, NVTX
ranges) are *dynamic*: the writer numbers their names 1..n in sorted order per
trace and labels them in the .pcf; value 0 is always "End".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from nsys2prv.core import extrae_mpi

END_VALUE = 0
END_LABEL = "End"


@dataclass(frozen=True)
class EventType:
    id: int
    label: str
    kind: str = "numeric"  # "numeric" (no VALUES), "static" (values below), "dynamic" (names)
    values: Mapping[int, str] = field(default_factory=dict)
    gradient: int = 0
    group: str = ""  # .pcf block: types of one group share a VALUES list


# --- Paraver states (customary ids, docs/trace-content.md) --------------------------
IDLE, RUNNING, NOT_CREATED, WAITING_MESSAGE, BLOCKING_SEND, SYNCHRONIZATION = 0, 1, 2, 3, 4, 5
TEST_PROBE, SCHED_FORK_JOIN, WAIT, BLOCKED, IMMEDIATE_SEND, IMMEDIATE_RECV = 6, 7, 8, 9, 10, 11
IO, GROUP_COMM, TRACING_DISABLED, OTHERS, SEND_RECEIVE, MEMORY_TRANSFER = 12, 13, 14, 15, 16, 17
STATES: dict[int, str] = dict(extrae_mpi.EXTRAE_STATES)
STATE_COLORS: dict[int, tuple[int, int, int]] = dict(extrae_mpi.EXTRAE_STATE_COLORS)
assert STATES[MEMORY_TRANSFER] == "Memory transfer" and STATES[SYNCHRONIZATION] == "Synchronization"

# Priority when state intervals overlap on one thread (higher wins; ties: innermost).
STATE_PRIORITY = {RUNNING: 0, SYNCHRONIZATION: 1, MEMORY_TRANSFER: 1, GROUP_COMM: 1}
# GPU streams: compute kernels are Running; NCCL kernels are communication, so they get Paraver's
# customary "Group Communication" (13), the state MPI collectives use on CPU threads: POP metrics
# and views then count them as communication, not as useful computation.
NCCL_KERNEL_STATE = GROUP_COMM
MPI_STATE_PRIORITY = 2

# --- Event types --------------------------------------------------------------------------------
# Ids follow BSC nsys2prv 0.5.8 where it has one (so views written for its traces keep
# working): CUDA 630000xx, launch parameters 91xx, correlation 9200, NCCL 95xx, NVTX 96xx+.
CUDA_API = EventType(63000000, "CUDA library call", "dynamic")
MEMOP_SIZE = EventType(63000002, "Memory operation size (bytes)")
CUDA_KERNEL_FULL = EventType(63000005, "CUDA kernel (demangled name)", "dynamic")
CUDA_KERNEL = EventType(63000006, "CUDA kernel", "dynamic")  # compute kernels only
NCCL_KERNEL = EventType(63000007, "NCCL kernel", "dynamic")  # kernels named *nccl* (any case): metrics.classify
CORRELATION = EventType(9200, "CUDA correlation id")
KERNEL_PARAMS = {  # normalised kernel column -> type
    "grid_x": EventType(9101, "Kernel grid size x"),
    "grid_y": EventType(9102, "Kernel grid size y"),
    "grid_z": EventType(9103, "Kernel grid size z"),
    "block_x": EventType(9104, "Kernel block size x"),
    "block_y": EventType(9105, "Kernel block size y"),
    "block_z": EventType(9106, "Kernel block size z"),
    "static_smem": EventType(9107, "Kernel static shared memory (bytes)"),
    "dynamic_smem": EventType(9108, "Kernel dynamic shared memory (bytes)"),
    "local_mem": EventType(9109, "Kernel local memory per thread (bytes)"),
    "registers": EventType(9110, "Kernel registers per thread"),
}
GRAPH_NODE = EventType(63000102, "CUDA graph node id")
# CUDA graphs (BSC nsys2prv ids): whole-graph executions on streams (CUPTI_ACTIVITY_KIND_GRAPH_TRACE),
# graph-level API events (CUDA_GRAPH_EVENTS, newer shape) and node creation (CUDA_GRAPH_NODE_EVENTS,
# or CUDA_GRAPH_EVENTS with graphNodeId in <= 3.0.0) on CPU threads.
GRAPH_EXEC = EventType(63000008, "CUDA graph execution", "dynamic")  # "graph <id>" on the stream
GRAPH_ID = EventType(63000100, "CUDA graph id")
GRAPH_EXEC_ID = EventType(63000101, "CUDA graph exec id")
GRAPH_API = EventType(63000103, "CUDA graph API event", "dynamic")  # cudaGraphLaunch, cudaGraphAdd*Node...
# Memory operations (type 63000001): the values of BSC's nsys2prv and BasicAnalysis for the four
# kinds BasicAnalysis counts as device data movement (3 DtoD, 4 DtoH, 5 HtoD, 6 memset), the other
# CUPTI copy kinds (ENUM_CUDA_MEMCPY_OPER) on values of their own.  The type's label contains
# "CUDA memcpy kernel", which BasicAnalysis looks for to recognise an nsys2prv trace.
MEMCPY_DTOD, MEMCPY_DTOH, MEMCPY_HTOD, MEMSET_VALUE = 3, 4, 5, 6
MEMCPY_VALUES = {  # CUPTI copyKind -> (value, label)
    1: (MEMCPY_HTOD, "CUDA memcpy Host-to-Device"),
    2: (MEMCPY_DTOH, "CUDA memcpy Device-to-Host"),
    8: (MEMCPY_DTOD, "CUDA memcpy Device-to-Device"),
    9: (1, "CUDA memcpy Host-to-Host"),
    10: (2, "CUDA memcpy Peer-to-Peer"),
    3: (7, "CUDA memcpy Host-to-Array"),
    4: (8, "CUDA memcpy Array-to-Host"),
    5: (9, "CUDA memcpy Array-to-Array"),
    6: (10, "CUDA memcpy Array-to-Device"),
    7: (11, "CUDA memcpy Device-to-Array"),
    11: (12, "CUDA Unified Memory Host-to-Device migration"),
    12: (13, "CUDA Unified Memory Device-to-Host migration"),
    13: (14, "CUDA Unified Memory Device-to-Device"),
}
MEMCPY_UNKNOWN = 15
MEMOP = EventType(
    63000001,
    "CUDA memcpy kernel (memory copies and memsets)",
    "static",
    {
        END_VALUE: END_LABEL,
        **{v: label for v, label in MEMCPY_VALUES.values()},
        MEMCPY_UNKNOWN: "CUDA memcpy (unknown kind)",
        MEMSET_VALUE: "CUDA memset",
    },
)

# GPU activity: on one row per GPU (``Metrics GPU<id>``, written when processes and GPUs are not one to
# one: a GPU shared by processes or a process using several GPUs), POP's device classification of the
# union of every stream of every process on that GPU over the run (OUT.pop.json's per-GPU numbers);
# 0 outside the run.  NCCL kernels are data movement, or useful with --nccl-as useful.
GPU_USEFUL, GPU_DATA_MOVEMENT, GPU_IDLE = 1, 2, 3
GPU_ACTIVITY = EventType(
    63000090,
    "GPU activity (every stream of every process on the GPU; Useful: a compute kernel runs; Data movement:"
    " memory operations or NCCL kernels, no compute kernel; Idle: neither)",
    "static",
    {  # short: they are the columns of analysis/gpu_activity.cfg (the meaning is in the type's label)
        END_VALUE: "Outside the run",
        GPU_USEFUL: "Useful",
        GPU_DATA_MOVEMENT: "Data movement",
        GPU_IDLE: "Idle",
    },
)
# NVTX: every domain its own block of ids, allocated per trace: 9600 + 100 * domain index
# (domain indices in sorted name order, '' = default domain first) + one of these offsets.
NVTX_BASE, NVTX_DOMAIN_STRIDE = 9600, 100
NVTX_OFFSETS = {"pushpop": 0, "startend": 1, "mark": 2, "depth": 3, "category": 4, "gpu": 5}
NVTX_DEFAULT_DOMAIN_NAME = "default domain"
NVTX_LABELS = {
    "pushpop": "NVTX push/pop ranges: {}",
    "startend": "NVTX start/end ranges: {}",
    "mark": "NVTX marks: {}",
    "depth": "NVTX push/pop nesting level: {}",
    "category": "NVTX category: {}",
    "gpu": "NVTX on GPU: {}",
}
NCCL_RANGE = EventType(9500, "NCCL regions", "dynamic")

# NCCL payloads, written on the NCCL kernel a range launched (9501+, as BSC's "NCCL <field>").
# Zero-based quantities (ranks, roots, enums, devices) are written as value + 1, so that 0 keeps
# its Paraver meaning "end"; enumerations have labelled values.
NCCL_DATATYPES = (
    "ncclInt8",
    "ncclUint8",
    "ncclInt32",
    "ncclUint32",
    "ncclInt64",
    "ncclUint64",
    "ncclFloat16",
    "ncclFloat32",
    "ncclFloat64",
    "ncclBfloat16",
)
NCCL_REDOPS = ("ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg")


def _plus_one(names) -> dict[int, str]:
    return {i + 1: n for i, n in enumerate(names)}


NCCL_OPERATION = EventType(9501, "NCCL operation", "dynamic")  # the NCCL range's name
NCCL_FIELDS: dict[str, EventType] = {  # normalised payload column -> type
    "bytes": EventType(9502, "NCCL message size (bytes)"),
    "datatype": EventType(9503, "NCCL data type", "static", _plus_one(NCCL_DATATYPES)),
    "redop": EventType(9504, "NCCL reduction operation", "static", _plus_one(NCCL_REDOPS)),
    "root": EventType(9505, "NCCL root (rank + 1)"),
    "comm": EventType(9506, "NCCL communicator id", "dynamic"),  # hex of the 64-bit hash
    "rank": EventType(9507, "NCCL rank (rank + 1)"),
    "nranks": EventType(9508, "NCCL number of ranks"),
    "peer": EventType(9509, "NCCL peer rank (rank + 1)"),
    "cuda_device": EventType(9510, "NCCL CUDA device (ordinal + 1)"),
}
NCCL_PLUS_ONE = ("datatype", "redop", "root", "rank", "peer", "cuda_device")

# GPU metrics: one type per metric name, 9400 + index in the trace's sorted metric-name list.
GPU_METRIC_BASE, GPU_METRIC_MAX = 9400, 100
GPU_METRIC_LABEL = "GPU metric: {}"

# OpenACC (BSC ids): the event kind per table, region names, function names, data size.
OPENACC_TABLE_TYPES = {
    "other": EventType(66000000, "OpenACC other event", "dynamic"),
    "data": EventType(66000001, "OpenACC data event", "dynamic"),
    "launch": EventType(66000002, "OpenACC launch event", "dynamic"),
}
OPENACC_EVENT_KINDS = {
    1: "Device init",
    2: "Device shutdown",
    3: "Runtime shutdown",
    4: "Enqueue launch",
    5: "Enqueue upload",
    6: "Enqueue download",
    7: "Wait",
    8: "Implicit wait",
    9: "Compute construct",
    10: "Update",
    11: "Enter data",
    12: "Exit data",
    13: "Create",
    14: "Delete",
    15: "Alloc",
    16: "Free",
}  # ENUM_OPENACC_EVENT_KIND (built-in for 2.x)
OPENACC_REGION = EventType(66100000, "OpenACC region (event kind)", "static", OPENACC_EVENT_KINDS)
OPENACC_FUNCTION = EventType(66200000, "OpenACC function (name@file:line)", "dynamic")
OPENACC_DATA_SIZE = EventType(66300001, "OpenACC data size (bytes)")

OSRT = EventType(66400000, "OS runtime call", "dynamic")

# --- The CPU side as it ran (SCHED_EVENTS, COMPOSITE_EVENTS + SAMPLING_CALLCHAINS, OSRT_CALLCHAINS) ----
# Thread states from the scheduler (-t sched): a CPU thread is Running only while it is on a CPU;
# descheduled inside a call that has a state (MPI, CUDA synchronisation) it keeps that call's state,
# elsewhere (an OS runtime call included) it is Blocked.  The off-CPU intervals have Running's
# priority: a later-starting interval wins a tie (core.intervals.paint_states), so they show inside the
# Running span and under every call state.
OFF_CPU_STATE = BLOCKED
OFF_CPU_PRIORITY = STATE_PRIORITY[RUNNING]
# The CPU a thread runs on: Extrae's GETCPU_EV (src/common/events.h, 40000033; label GETCPU_LBL
# "Executing CPU" in src/merger/paraver/labels.h; the merger's GetCPU_Event writes the CPU number + 1),
# from a sched-in on; 0 from its sched-out (off every CPU; Extrae, sampling getcpu(), has no such value).
EXECUTING_CPU = EventType(40000033, "Executing CPU (CPU number + 1; 0 = off CPU)")
# CPU samples (-t samples): Extrae's SAMPLING_EV (src/common/events.h, 30000000: "Sampled functions")
# for the sampled function (the innermost user-mode frame) and SAMPLING_EV + k for its caller at depth
# k (Extrae's merger, addr2info.c Address2Info_Write_Sample_Labels: "Sampled functions (depth k)"); one
# VALUES list ("function [module]"; an unresolved frame "module @ address", where Extrae folds every
# unresolved address into its value 1, "Unresolved": addr2info.c UNRESOLVED_ID).  Extrae's sampled
# lines (SAMPLING_LINE_EV, 30000100 + k) are not written: the export's frames have no file or line.
SAMPLED_LEVELS = 10  # levels 0..9; deeper frames are counted, not written
SAMPLED = {
    k: EventType(
        30000000 + k, "Sampled functions" if k == 0 else f"Sampled functions (depth {k})", "dynamic", group="sampled"
    )
    for k in range(SAMPLED_LEVELS)
}
# Kernel-mode frames apart, the innermost one on a type of ours, outside Extrae's sampling ranges
# (30000000..30000099 functions, 30000100..30000199 lines: events.h MAX_CALLERS = 100).
SAMPLED_KERNEL = EventType(66500000, "Sampled kernel-mode function (innermost kernel frame)", "dynamic")
# Call stacks of OS runtime calls (-t osrt, OSRT_CALLCHAINS) and CUDA API calls (-t cuda_api,
# CUDA_CALLCHAINS): Extrae's CALLER_EV + k (src/common/events.h, 70000000; label CALLER_LVL_LBL
# "Caller at level k", src/merger/paraver/labels.h), the family Extrae writes for the callers of every
# call it traces (MPI, I/O, memory: src/tracer/calltrace.h CALLER_EVENT_TYPE), on the call's entry;
# level 1 the innermost frame of the call stack (the library function called).
CALLER_LEVELS = 10
CALLER = {
    k: EventType(70000000 + k, f"Caller at level {k}", "dynamic", group="caller") for k in range(1, CALLER_LEVELS + 1)
}

# MPI: Extrae's types and value codes (standard MPI views work on our traces).  The five
# call types share one VALUES list, as every MPI function has a value of its own.
MPI_VALUE_LABELS = {extrae_mpi.MPI_VALUE_OUTSIDE: extrae_mpi.MPI_VALUE_OUTSIDE_LABEL, **extrae_mpi.MPI_VALUE_LABELS}
MPI_TYPES: dict[int, EventType] = {
    tid: EventType(tid, label, "static", MPI_VALUE_LABELS, gradient=extrae_mpi.MPI_TYPE_PCF_FLAG, group="mpi")
    for tid, label in extrae_mpi.MPI_EVENT_TYPES.items()
}
MPI_OTHER_TYPE = extrae_mpi.MPITYPE_OTHER  # MPI functions Extrae does not know go here, as names
MPI_SEND_SIZE, MPI_RECV_SIZE, MPI_ROOT, MPI_COMM = (
    EventType(i, extrae_mpi.MPI_EXTRA_EVENT_TYPES[i], gradient=extrae_mpi.MPI_GLOBAL_OP_PCF_FLAG)
    for i in (
        extrae_mpi.MPI_GLOBAL_OP_SENDSIZE,
        extrae_mpi.MPI_GLOBAL_OP_RECVSIZE,
        extrae_mpi.MPI_GLOBAL_OP_ROOT,
        extrae_mpi.MPI_GLOBAL_OP_COMM,
    )
)
# The process's life (start 1, end 0) on its first CPU thread, as Extrae writes APPL_EV (traces with MPI)
APPLICATION = EventType(
    extrae_mpi.APPL_EV, extrae_mpi.APPL_EV_LABEL, "static", extrae_mpi.APPL_EV_VALUES, extrae_mpi.APPL_EV_PCF_FLAG
)

# --- Communication tags (record type 3), as nsys2prv ---------------------------------------------
TAG_KERNEL_LAUNCH = 55001
TAG_MEMORY_OP = 55002
COMM_TAGS = {
    TAG_KERNEL_LAUNCH: "CUDA launch call -> kernel",
    TAG_MEMORY_OP: "CUDA memcpy/memset call -> memory operation",
}

FIXED_TYPES: tuple[EventType, ...] = (
    CUDA_API,
    MEMOP,
    MEMOP_SIZE,
    CUDA_KERNEL_FULL,
    CUDA_KERNEL,
    NCCL_KERNEL,
    CORRELATION,
    *KERNEL_PARAMS.values(),
    GPU_ACTIVITY,
    GRAPH_NODE,
    GRAPH_EXEC,
    GRAPH_ID,
    GRAPH_EXEC_ID,
    GRAPH_API,
    NCCL_RANGE,
    NCCL_OPERATION,
    *NCCL_FIELDS.values(),
    *OPENACC_TABLE_TYPES.values(),
    OPENACC_REGION,
    OPENACC_FUNCTION,
    OPENACC_DATA_SIZE,
    OSRT,
    *MPI_TYPES.values(),
    MPI_SEND_SIZE,
    MPI_RECV_SIZE,
    MPI_ROOT,
    MPI_COMM,
    APPLICATION,
)
# Listed in a .pcf only when a report of the trace has their table (kinds.table_types): the trace of a
# report without scheduling, samples or OS runtime call stacks is what it was before they existed.
CPU_SIDE_TYPES: tuple[EventType, ...] = (EXECUTING_CPU, *SAMPLED.values(), SAMPLED_KERNEL, *CALLER.values())
ALWAYS_LISTED: dict[int, EventType] = {t.id: t for t in FIXED_TYPES}  # known to every trace; its .pcf
# declares those its records use (paraver/pcf.py declared_types), and MEMOP whenever it has GPU work:
GPU_WORK_TYPES = frozenset(
    {CUDA_KERNEL.id, CUDA_KERNEL_FULL.id, NCCL_KERNEL.id, MEMOP.id, MEMOP_SIZE.id, GRAPH_EXEC.id}
)
BY_ID: dict[int, EventType] = {t.id: t for t in (*FIXED_TYPES, *CPU_SIDE_TYPES)}
assert len(BY_ID) == len(FIXED_TYPES) + len(CPU_SIDE_TYPES), "event type id defined twice"
assert all(t.id < NVTX_BASE or t.id >= NVTX_BASE + NVTX_DOMAIN_STRIDE * 10000 for t in FIXED_TYPES)


def nvtx_types(domain_index: int, domain: str) -> dict[str, EventType]:
    """The event types of one NVTX domain: push/pop, start/end, marks, nesting level, category, on GPU."""
    name = domain or NVTX_DEFAULT_DOMAIN_NAME
    base = NVTX_BASE + NVTX_DOMAIN_STRIDE * domain_index
    kinds = {
        "pushpop": "dynamic",
        "startend": "dynamic",
        "mark": "dynamic",
        "depth": "numeric",
        "category": "dynamic",
        "gpu": "dynamic",
    }
    return {k: EventType(base + NVTX_OFFSETS[k], NVTX_LABELS[k].format(name), kind) for k, kind in kinds.items()}


def gpu_metric_types(names: list[str]) -> dict[str, EventType]:
    """One numeric type per GPU metric name (sorted globally, so ids are stable per trace)."""
    names = sorted(set(names))
    if len(names) > GPU_METRIC_MAX:
        raise ValueError(f"{len(names)} GPU metrics: at most {GPU_METRIC_MAX} fit in {GPU_METRIC_BASE}..")
    return {n: EventType(GPU_METRIC_BASE + i, GPU_METRIC_LABEL.format(n)) for i, n in enumerate(names)}


def mpi_code(name: str) -> tuple[int, int, int] | None:
    """(event type, value, state) of an MPI function Extrae knows, else None."""
    c = extrae_mpi.MPI_CALL_BY_NAME.get(extrae_mpi.MPI_ALIASES.get(name, name))
    return (c.event_type, c.value, c.state) if c else None

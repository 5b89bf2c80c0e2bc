"""The views shipped in the package (``nsys2prv/cfgs/``): one declarative entry per view.

Add a view by adding an entry (a ``View`` of windows and histograms, cfg_model.py); ``python -m
nsys2prv.paraver.cfgs regenerate`` renders them and tests/test_cfgs.py checks the committed files.
"""

from __future__ import annotations

from nsys2prv.core import registry as R
from nsys2prv.paraver.cfg_model import (
    API,
    COLLECTIVE,
    DEFAULT_DOMAIN_LABEL,
    DOMAIN_NOTE,
    KERNEL,
    KERNEL_FULL,
    LAUNCH_TAGS,
    MEMOP,
    MEMOP_SIZE,
    MPI_CALLS,
    NCCL,
    NCCL_KERNEL,
    NODE_NOTE,
    NS,
    NVTX_DEFAULT,
    NVTX_INDEX1,
    Histogram,
    View,
    Window,
    events,
    inside,
    nvtx_windows,
    time_per_value,
    transfer_windows,
)

# The rows of a states view: CPU threads and GPU streams (a GPU's metric row carries no state: Paraver
# would draw it Idle over the whole run).
STATE_ROWS = ("cpu", "stream")

VIEWS: tuple[View, ...] = (
    # basics/ ----------------------------------------------------------------------------------
    View(
        "basics/states.cfg",
        """
Thread state: CPU threads Running / Synchronization (CUDA *Synchronize) / MPI states (Extrae's);
GPU streams Running (compute kernel) / Group Communication (NCCL kernel) / Memory transfer / Idle.
Rendered for a trace (nsys2prv --cfgs), it leaves out the 'Metrics GPU<n>' rows, which carry no state.""",
        (Window("States", rows=STATE_ROWS),),
        summary="State of every CPU thread and GPU stream; look for streams mostly Idle and CPU threads "
        "stuck in Synchronization or MPI.",
    ),
    View(
        "basics/cuda_api_calls.cfg",
        f"""
CUDA runtime and driver API call (type {API}) on CPU threads.""",
        (events("CUDA API calls", API),),
        summary="Which CUDA call each CPU thread is in; long cudaMemcpy/cudaStreamSynchronize bars are the "
        "host waiting for the GPU.",
    ),
    View(
        "basics/kernels.cfg",
        f"""
Compute kernel running on each GPU stream (type {KERNEL}, short name; NCCL kernels are apart).""",
        (events("CUDA kernels", KERNEL),),
        summary="Which compute kernel runs on each stream; gaps between kernels are device idle.",
    ),
    View(
        "basics/kernel_names_demangled.cfg",
        f"""
Any kernel (compute or NCCL) by its demangled name (type {KERNEL_FULL}).""",
        (events("CUDA kernels (demangled)", KERNEL_FULL),),
        summary="Same as kernels.cfg with full demangled names (template arguments tell instances apart).",
    ),
    View(
        "basics/kernel_duration.cfg",
        f"""
Duration in microseconds of each compute kernel (type {KERNEL}), drawn over the kernel; nothing between kernels.
Window 3 = window 1 (time from a kernel event to the next one) x window 2 (1 inside a kernel).""",
        (
            Window("Time to next kernel event", "Int. Between Evt", (KERNEL,), open=False, maximum_y=1e6),
            inside("Inside a compute kernel", KERNEL),
            Window("Kernel duration (us)", operation="product", parents=(1, 2), gradient=True, maximum_y=1e6),
        ),
        summary="Kernel durations as a gradient: spot the few long kernels and irregular instances of one kernel.",
    ),
    View(
        "basics/memory_operations.cfg",
        f"""
Memory operations on GPU streams: kind (type {MEMOP}: HtoD, DtoH, DtoD, PtoP, Memset, ...) and size in
bytes (type {MEMOP_SIZE}).""",
        (
            events("Memory operation kind", MEMOP),
            events("Memory operation size (bytes)", MEMOP_SIZE, gradient=True, maximum_y=1e9),
        ),
        summary="Copies and memsets on each stream, and how large they are; many small copies cost latency.",
    ),
    # views/ -----------------------------------------------------------------------------------
    View(
        "views/launch_links.cfg",
        f"""
States with the launch communications: each kernel or graph launch call to the kernel it started
(tag {R.TAG_KERNEL_LAUNCH}) and each memcpy/memset call to its memory operation (tag {R.TAG_MEMORY_OP},
size = bytes).""",
        (Window("Launches (comm lines)", tags=LAUNCH_TAGS, comm_lines=True),),
        summary="Lines from the CPU call to the GPU work it launched; long slanted lines are launch "
        "latency or queued work.",
    ),
    View(
        "views/nccl_kernels.cfg",
        f"""
NCCL kernels on GPU streams (type {NCCL_KERNEL}; state Group Communication).""",
        (events("NCCL kernels", NCCL_KERNEL),),
        summary="Where NCCL collectives run on each stream and how they overlap compute kernels.",
    ),
    View(
        "views/nccl_payload.cfg",
        f"""
NCCL regions on CPU threads (type {R.NCCL_RANGE.id}) and, on the NCCL kernel each one launched, the
operation (type {R.NCCL_OPERATION.id}), message size in bytes ({NCCL['bytes'].id}), data type
({NCCL['datatype'].id}) and reduction operation ({NCCL['redop'].id}).""",
        (
            events("NCCL regions", R.NCCL_RANGE.id),
            events("NCCL operation", R.NCCL_OPERATION.id),
            events("NCCL message size (bytes)", NCCL["bytes"].id, gradient=True, maximum_y=1e9),
            events("NCCL data type", NCCL["datatype"].id),
            events("NCCL reduction operation", NCCL["redop"].id),
        ),
        summary="Which collective each NCCL kernel performs and on how many bytes; compare sizes with "
        "kernel durations for bandwidth.",
    ),
    View(
        "views/nvtx_default_domain.cfg",
        f"""
NVTX of the default domain (domain index 0 when the trace has it): push/pop ranges (innermost, Stacked Val),
start/end ranges, nesting level, and the range projected on the GPU work it launched.
{DOMAIN_NOTE}
The type labels name the default domain, so Paraver picks the right ids by label; if the trace has no
default domain, the ids fall back to domain index 0, the first named domain.""",
        nvtx_windows(NVTX_DEFAULT, DEFAULT_DOMAIN_LABEL, labelled=True),
        summary="The program's phases (NVTX ranges) on CPU threads and on the GPU work they launched.",
    ),
    View(
        "views/nvtx_domain_1.cfg",
        f"""
NVTX of domain index 1 (types {NVTX_INDEX1['pushpop'].id}..{NVTX_INDEX1['gpu'].id}): push/pop (Stacked Val),
start/end, nesting level, on GPU.
{DOMAIN_NOTE}
nsys2prv --cfgs DIR writes one such view per domain of the trace, named after it.""",
        nvtx_windows(NVTX_INDEX1, "domain index 1", labelled=False),
        summary="Second NVTX domain in sorted order (e.g. a library's annotations); prefer the per-trace nvtx/ views.",
    ),
    View(
        "views/nvtx_on_gpu.cfg",
        f"""
Innermost push/pop range of the default domain (domain index 0) that enclosed the launch call of each
kernel, copy, memset or graph (type {NVTX_DEFAULT['gpu'].id}), drawn on GPU streams.
{DOMAIN_NOTE}""",
        (events("NVTX on GPU (default domain)", NVTX_DEFAULT["gpu"].id, labels=(NVTX_DEFAULT["gpu"].label,)),),
        summary="Which program phase each piece of GPU work belongs to.",
    ),
    View(
        "views/mpi_calls.cfg",
        f"""
MPI call on each thread (Extrae's types {', '.join(map(str, MPI_CALLS))}: point-to-point, collective,
other, one-sided, I/O; value 0 = Outside MPI).""",
        (events("MPI call", *MPI_CALLS),),
        summary="MPI calls per rank, as Extrae's MPI call view; look for long waits and imbalance.",
    ),
    View(
        "views/mpi_messages.cfg",
        f"""
MPI calls (Extrae's types) with the MPI point-to-point messages drawn as communication lines: logical
send = send call start, physical receive = end of the receive (or of the Wait completing an Irecv);
tag = the MPI tag, size = bytes.  Messages exist where the export identifies peers (the MPI_* tables of
newer Nsight Systems); launch links (tags {', '.join(map(str, LAUNCH_TAGS))}) go to GPU streams.""",
        (events("MPI calls and messages", *MPI_CALLS, comm_lines=True),),
        summary="Who sends to whom and when; a receive that waits long for its line is a late sender.",
    ),
    View(
        "views/mpi_collective_sizes.cfg",
        f"""
Bytes sent and received by each MPI collective (types {R.MPI_SEND_SIZE.id}, {R.MPI_RECV_SIZE.id}), drawn while the
collective runs: windows 4 and 5 = windows 1 and 2 (the sizes of the last collective, which Extrae's records
do not close) x window 3 (1 inside a collective, type {COLLECTIVE}).""",
        (
            events("Last collective: bytes sent", R.MPI_SEND_SIZE.id, open=False, maximum_y=1e9),
            events("Last collective: bytes received", R.MPI_RECV_SIZE.id, open=False, maximum_y=1e9),
            inside("Inside an MPI collective", COLLECTIVE),
            Window("MPI collective bytes sent", operation="product", parents=(1, 3), gradient=True, maximum_y=1e9),
            Window("MPI collective bytes received", operation="product", parents=(2, 3), gradient=True, maximum_y=1e9),
        ),
        summary="Message sizes of MPI collectives while they run (exports with MPI_* tables).",
    ),
    View(
        "views/os_runtime_calls.cfg",
        f"""
OS runtime library call on each CPU thread (type {R.OSRT.id}; translated with -t osrt).""",
        (events("OS runtime calls", R.OSRT.id),),
        summary="pthread, I/O and sleep calls; host time that is neither CUDA nor MPI.",
    ),
    View(
        "views/sampled_functions.cfg",
        f"""
Sampled function of each CPU thread (type {R.SAMPLED[0].id}, Extrae's; reports with CPU samples):
the innermost user-mode frame of the last CPU sample, "function [module]" ("module @ address" when
unresolved). Histogram thread x function: number of samples.""",
        (events("Sampled functions", R.SAMPLED[0].id, open=False),),
        (time_per_value("Samples per function", statistic="# Bursts"),),
        summary="Where the CPU time goes, by function: the sample counts per thread.",
    ),
    View(
        "views/sampled_caller_level_1.cfg",
        f"""
Caller at level 1 of the sampled function (type {R.SAMPLED[1].id}; level N is type
{R.SAMPLED[0].id} + N, up to {R.SAMPLED_LEVELS - 1}: change the window's type for another level).
Histogram thread x caller: number of samples.""",
        (events(R.SAMPLED[1].label, R.SAMPLED[1].id, open=False),),
        (time_per_value("Samples per caller", statistic="# Bursts"),),
        summary="Which callers the sampled functions are reached from.",
    ),
    View(
        "analysis/host_during_gpu_idle.cfg",
        f"""
Host activity during GPU idle: histogram task x sampled function (type {R.SAMPLED[0].id}, reports with CPU samples)
while no compute kernel, memory operation or NCCL kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on
any stream of the process: window 3 = window 1 (the process's sampled function: the largest value over
its threads, i.e. the function of its one sampled thread) x window 2 (1 while its GPU work is idle).
Histogram: time per function while the GPU is idle, each sample's function held until the next sample
(about 1 ms a sample at nsys's default rate; values: the .pcf's Sampled functions).""",
        (
            Window(
                "Sampled function of the process",
                "Last Evt Val",
                (R.SAMPLED[0].id,),
                level="task",
                task="Maximum",
                open=False,
            ),
            inside("GPU idle", KERNEL, MEMOP, NCCL_KERNEL, level="task", top="1-Sign"),
            Window("Sampled function while the GPU is idle", operation="product", parents=(1, 2), level="task"),
        ),
        (time_per_value("Host time per function while the GPU is idle", window=3),),
        summary="What the host was doing while its GPU sat idle: time per sampled function.",
    ),
    # analysis/ --------------------------------------------------------------------------------
    View(
        "analysis/kernel_time.cfg",
        f"""
Histogram thread x compute kernel (type {KERNEL}): total time in microseconds.""",
        (events("CUDA kernels", KERNEL, open=False),),
        (time_per_value("Kernel time"),),
        summary="Time per kernel per stream: the kernels worth optimising first.",
    ),
    View(
        "analysis/kernel_count.cfg",
        f"""
Histogram thread x compute kernel (type {KERNEL}): number of executions.""",
        (events("CUDA kernels", KERNEL, open=False),),
        (time_per_value("Kernel count", statistic="# Bursts"),),
        summary="Executions per kernel per stream: many tiny kernels suggest fusing or graphs.",
    ),
    View(
        "analysis/kernel_avg_duration.cfg",
        f"""
Histogram thread x compute kernel (type {KERNEL}): average duration in microseconds.""",
        (events("CUDA kernels", KERNEL, open=False),),
        (time_per_value("Kernel average duration", statistic="Average Burst Time"),),
        summary="Mean duration per kernel and stream; differences between ranks show device imbalance.",
    ),
    View(
        "analysis/memop_time.cfg",
        f"""
Histogram thread x memory operation kind (type {MEMOP}): total time in microseconds.""",
        (events("Memory operation kind", MEMOP, open=False),),
        (time_per_value("Memory operation time"),),
        summary="Time per copy direction and memset per stream.",
    ),
    View(
        "analysis/nccl_time.cfg",
        f"""
Histogram thread x NCCL kernel (type {NCCL_KERNEL}): total time in microseconds.""",
        (events("NCCL kernels", NCCL_KERNEL, open=False),),
        (time_per_value("NCCL kernel time"),),
        summary="Time in each NCCL kernel per stream: the cost of GPU collectives.",
    ),
    View(
        "analysis/cuda_api_time.cfg",
        f"""
Histogram thread x CUDA API call (type {API}): total time in microseconds.""",
        (events("CUDA API calls", API, open=False),),
        (time_per_value("CUDA API time"),),
        summary="Host time per CUDA call: synchronisation and copies dominate when the host waits.",
    ),
    View(
        "analysis/mpi_time.cfg",
        f"""
Histogram thread x MPI call (types {', '.join(map(str, MPI_CALLS))}): total time in microseconds.""",
        (events("MPI call", *MPI_CALLS, open=False),),
        (time_per_value("MPI time"),),
        summary="Time per MPI call per rank (column Outside MPI = the rest).",
    ),
    View(
        "analysis/nvtx_time.cfg",
        f"""
Histogram thread x innermost NVTX push/pop range of the default domain (type {NVTX_DEFAULT['pushpop'].id}):
total time in microseconds. {DOMAIN_NOTE}""",
        (
            events(
                "NVTX push/pop (default domain)",
                NVTX_DEFAULT["pushpop"].id,
                stacked=True,
                open=False,
                labels=(NVTX_DEFAULT["pushpop"].label,),
            ),
        ),
        (time_per_value("NVTX range time"),),
        summary="Time per program phase (exclusive of nested ranges) per thread.",
    ),
    View(
        "analysis/launch_matrix.cfg",
        f"""
Communication matrix thread x thread: number of launch links (tags {', '.join(map(str, LAUNCH_TAGS))}),
from the CPU thread that made the call to the stream that ran the work. Rendered for a trace (nsys2prv
--cfgs), its rows are the CPU threads and its columns the streams (no cell for the receiving side).""",
        (Window("Launches", tags=LAUNCH_TAGS, open=False, rows=("cpu",)),),
        (Histogram("Launches per thread and stream", 1, 1, "#Sends", hide_cols=True),),
        summary="Which CPU thread feeds which stream, and how many launches each.",
    ),
    View(
        "analysis/message_matrix.cfg",
        f"""
Communication matrix thread x thread: bytes sent by MPI point-to-point messages (every communication
but the launch links to GPU streams, tags {', '.join(map(str, LAUNCH_TAGS))}); empty columns hidden.""",
        (Window("MPI messages", tags=LAUNCH_TAGS, tag_function="!=", open=False, comm_lines=True),),
        (time_per_value("Bytes sent per thread pair", statistic="Bytes sent"),),
        summary="Who sends how much to whom: the MPI communication pattern and its volume.",
    ),
    # POP device quantities (docs/pop-metrics.md): per process = per device with one GPU per rank.
    View(
        "analysis/device_useful.cfg",
        f"""
POP useful device time U: histogram task x (1 = any compute kernel (type {KERNEL}) running on a stream
of the process, 0 = none). Column 1 is the union over the process's streams (concurrent kernels count
once). Per process, which is per device when each rank uses one GPU.""",
        (inside("Compute kernel on any stream", KERNEL, level="task"),),
        (time_per_value("Useful device time (column 1)"),),
        summary="POP useful device time per process (column 1); its max and mean give Device LB.",
        units=NS,
    ),
    View(
        "analysis/device_transfer_nonoverlapped.cfg",
        f"""
POP non-overlapped transfer time X: histogram task x (window 1 - window 2), window 1 = 1 while a memory
operation (type {MEMOP}) or NCCL kernel (type {NCCL_KERNEL}) runs on any stream of the process,
window 2 = 1 while a compute kernel (type {KERNEL}) does. Column 1 = transfer not hidden by kernels;
column -1 = kernels without transfers; column 0 = both or neither.""",
        transfer_windows("task", ""),
        (time_per_value("Non-overlapped transfer time (column 1)", window=3),),
        summary="POP device communication: transfer and NCCL time not hidden behind kernels (column 1).",
        units=NS,
    ),
    View(
        "analysis/device_active.cfg",
        f"""
POP device active time A (useful + non-overlapped transfer): histogram task x (1 = a compute kernel,
memory operation or NCCL kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on some stream of the
process). Column 1 = A of the process; Device OrchE = max A / T.""",
        (inside("Any GPU activity", KERNEL, MEMOP, NCCL_KERNEL, level="task"),),
        (time_per_value("Device active time (column 1)"),),
        summary="POP device active time per process (column 1); Device OrchE = max active / T.",
        units=NS,
    ),
    View(
        "analysis/device_idle.cfg",
        f"""
POP device idle time T - A: histogram task x (1 = no compute kernel, memory operation or NCCL kernel
(types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on any stream of the process). Column 1 = idle time
(Paraver leaves value 0 out of a histogram, so idle is 1 here: 1-Sign of the activity).""",
        (inside("No GPU activity", KERNEL, MEMOP, NCCL_KERNEL, level="task", top="1-Sign"),),
        (time_per_value("Device idle time (column 1)"),),
        summary="POP device idle time per process (column 1).",
        units=NS,
    ),
    # The same per node: the union over every stream of every process of the host, which is per GPU
    # when a host has one GPU (several ranks sharing it: OUT.pop.json's per-GPU numbers).
    View(
        "analysis/node_device_useful.cfg",
        f"""
POP useful device time U per node: histogram node x (1 = a compute kernel (type {KERNEL}) runs on some
stream of the node). Column 1 = U.{NODE_NOTE}""",
        (inside("Compute kernel on any stream of the node", KERNEL, level="node"),),
        (time_per_value("Useful device time per node (column 1)"),),
        summary="POP useful device time per node = per GPU when each host has one (column 1).",
        units=NS,
    ),
    View(
        "analysis/node_device_transfer_nonoverlapped.cfg",
        f"""
POP non-overlapped transfer time X per node: histogram node x (window 1 - window 2), window 1 = 1 while
a memory operation (type {MEMOP}) or NCCL kernel (type {NCCL_KERNEL}) runs on some stream of the node,
window 2 = 1 while a compute kernel (type {KERNEL}) does. Column 1 = X.{NODE_NOTE}""",
        transfer_windows("node", " of the node"),
        (time_per_value("Non-overlapped transfer time per node (column 1)", window=3),),
        summary="POP device data movement per node = per GPU when each host has one (column 1).",
        units=NS,
    ),
    View(
        "analysis/node_device_active.cfg",
        f"""
POP device active time A per node: histogram node x (1 = a compute kernel, memory operation or NCCL
kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on some stream of the node). Column 1 = A.{NODE_NOTE}""",
        (inside("Any GPU activity on the node", KERNEL, MEMOP, NCCL_KERNEL, level="node"),),
        (time_per_value("Device active time per node (column 1)"),),
        summary="POP device active time per node = per GPU when each host has one (column 1).",
        units=NS,
    ),
    View(
        "analysis/node_device_idle.cfg",
        f"""
POP device idle time T - A per node: histogram node x (1 = no compute kernel, memory operation or NCCL
kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on any stream of the node). Column 1 = idle time.{NODE_NOTE}""",
        (inside("No GPU activity on the node", KERNEL, MEMOP, NCCL_KERNEL, level="node", top="1-Sign"),),
        (time_per_value("Device idle time per node (column 1)"),),
        summary="POP device idle time per node = per GPU when each host has one (column 1).",
        units=NS,
    ),
    View(
        "analysis/gpu_activity.cfg",
        f"""
POP time per GPU: histogram thread x GPU activity (type {R.GPU_ACTIVITY.id}) on the 'Metrics GPU<id>' rows,
over every stream of every process on the GPU: column {R.GPU_USEFUL} = useful U (a compute kernel runs),
{R.GPU_DATA_MOVEMENT} = data movement X (only memory operations or NCCL kernels), {R.GPU_IDLE} = idle; active A = U + X.
The rows exist when processes and GPUs are not one to one (a GPU shared by ranks, or a rank using several
GPUs); otherwise device_*.cfg (per process = per GPU) give these numbers.""",
        (events("GPU activity (all streams and processes)", R.GPU_ACTIVITY.id, open=False, maximum_y=3.0),),
        (time_per_value("Time per GPU activity (1 useful, 2 data movement, 3 idle)"),),
        summary="POP per-GPU useful (1), data movement (2) and idle (3) time, whoever shares the GPU.",
        units=NS,
    ),
    View(
        "analysis/host_useful.cfg",
        f"""
POP useful host time: histogram thread x (window 1 - window 2), window 1 = 1 in state Running
(state {R.RUNNING}), window 2 = 1 inside a CUDA API call (type {API}). Column 1 = Running outside CUDA calls
(useful, an upper bound as in BasicAnalysis); MPI calls are not Running. Read the CPU thread rows.""",
        (
            Window("Running", "Useful", open=False, maximum_y=1.0),
            inside("In a CUDA API call", API),
            Window("Useful host time", operation="substract", parents=(1, 2), maximum_y=1.0),
        ),
        (time_per_value("Useful host time (column 1)", window=3),),
        summary="POP useful host time per CPU thread (column 1).",
        units=NS,
    ),
    View(
        "analysis/host_cuda_api.cfg",
        f"""
POP device offload on the host: histogram thread x (1 = inside a CUDA API call, type {API}).""",
        (inside("In a CUDA API call", API),),
        (time_per_value("CUDA API time (column 1)"),),
        summary="Host time in the CUDA runtime/driver per thread (column 1): offload cost.",
        units=NS,
    ),
    View(
        "analysis/host_mpi.cfg",
        f"""
POP MPI time: histogram thread x (1 = inside an MPI call, types {', '.join(map(str, MPI_CALLS))}).""",
        (inside("In an MPI call", *MPI_CALLS),),
        (time_per_value("MPI time (column 1)"),),
        summary="Time in MPI per thread (column 1); T minus it is OutsideMPI for MPI PE and LB.",
        units=NS,
    ),
)

# The host POP views: their numbers equal OUT.pop.json's host tree whatever the trace holds (paraver/pcf.py
# declares their filters' types in every .pcf).
POP_HOST_VIEWS = ("analysis/host_useful.cfg", "analysis/host_cuda_api.cfg", "analysis/host_mpi.cfg")

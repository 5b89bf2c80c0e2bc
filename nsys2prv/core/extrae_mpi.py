"""Extrae-compatible MPI encoding for Paraver traces (pure data).

Everything here mirrors what BSC Extrae's merger (mpi2prv) writes, so that the
standard Paraver MPI configurations (mpi_call / MPI_call, mpi_stats,
communication views, ...) work unchanged on traces we produce.

Sources (stored copies of public repositories):
  [EV]  bsc-performance-tools/extrae  src/merger/paraver/MPI_EventEncoding.h
        (commit 044e8b20460f1ab6bb2b321aa49ab554288227e5): type ids, type labels,
        value enum 0..172, value labels.
  [TBL] bsc-performance-tools/extrae  src/merger/paraver/mpi_prv_events.c
        (commit 044e8b20...): event_mpit2prv[] = which Paraver type each value
        is written under; .pcf writer (flag column, "0 Outside MPI", RMA extra
        types, global-op types, soft counters).
  [SEM] bsc-performance-tools/extrae  src/merger/paraver/mpi_prv_semantics.c
        (commit 044e8b20...): Get_State() and PRV_MPI_Event_Handlers[] = the
        Paraver state set while inside each MPI call.
  [EVH] bsc-performance-tools/extrae  src/common/events.h (latest stored
        version): state numbers, MPI_GLOBAL_OP_* = MPI_INIT_EV(50000001)+1000xx,
        MPI_IO_SIZE_EV, soft counter ids.
  [LBL] bsc-performance-tools/extrae  src/merger/paraver/labels.h
        (commit 215c0a861898bf9cc3f5bb2c3e6fba07dc254558) and labels.c
        (commit 02099d27...): STATES / STATES_COLOR / GRADIENT_* tables,
        DEFAULT_OPTIONS / DEFAULT_SEMANTIC writer, global-op labels.
  [NSP] nsys2prv 0.5.8 (PyPI wheel), nsys2prv/semantics/mpi_event_encoding.py:
        a Python port of a newer Extrae MPI_EventEncoding.h (Extrae 4.x) with
        values 173..219.  Used only for values > 172.
  [DIM] bsc-performance-tools/dimemas  common_utilities/EventEncoding.c:
        MPI_Table (Paraver type per value) confirming types of values 173..193.

Confidence markers:
  * Values 0..172, their types and labels: verbatim from [EV]+[TBL] (high).
  * Values 173..219: from [NSP] (Extrae 4.x port); types for 173..193 agree
    with [DIM]; types for 194..219 follow Extrae's classification rules
    (medium).
  * States: verbatim from [SEM] for every call Extrae's merger handles; calls
    that Extrae 3.x's merger does not handle (values above 172, and the
    topology, group, datatype and attribute helpers it only labels) got the
    state Extrae uses for the analogous call (medium/low).
"""

from dataclasses import dataclass
from typing import Dict, Tuple

# --------------------------------------------------------------------------
# Paraver event types for MPI calls  [EV] MPI_EventEncoding.h
# --------------------------------------------------------------------------
MPITYPE_PTOP = 50000001
MPITYPE_COLLECTIVE = 50000002
MPITYPE_OTHER = 50000003  # also COMM, GROUP, TOPOLOGIES, TYPE
MPITYPE_RMA = 50000004
MPITYPE_IO = 50000005

MPI_EVENT_TYPES: Dict[int, str] = {
    MPITYPE_PTOP: "MPI Point-to-point",
    MPITYPE_COLLECTIVE: "MPI Collective Comm",
    MPITYPE_OTHER: "MPI Other",
    MPITYPE_RMA: "MPI One-sided",
    MPITYPE_IO: "MPI I/O",
}

# Value 0 of every MPI type: Extrae's .pcf writer emits "0   Outside MPI"
# ([TBL] MPITEvent_WriteEnabled_MPI_Operations).  MPIEND_LABEL "End" exists in
# [EV] but is not what the .pcf shows.
MPI_VALUE_OUTSIDE = 0
MPI_VALUE_OUTSIDE_LABEL = "Outside MPI"

# Flag (first) column of the EVENT_TYPE line for the MPI call types.
# Value seen in Extrae-generated .pcf files ("9   50000001    MPI Point-to-point");
# the macro MPITYPE_FLAG_COLOR itself was not read (medium confidence).
MPI_TYPE_PCF_FLAG = 9

# --------------------------------------------------------------------------
# Extra MPI-related event types
# --------------------------------------------------------------------------
# [EVH]: MPI_GLOBAL_OP_* = MPI_INIT_EV(50000001) + 100000..100003
#        written by trace_enter_global_op() at the BEGIN of every collective:
#        send size, recv size, communicator id, and root (=1, only when root).
# [LBL]: labels; [TBL]: written with flag MPI_GRADIENT (=1) in one EVENT_TYPE block.
MPI_GLOBAL_OP_SENDSIZE = 50100001
MPI_GLOBAL_OP_RECVSIZE = 50100002
MPI_GLOBAL_OP_ROOT = 50100003
MPI_GLOBAL_OP_COMM = 50100004
MPI_GLOBAL_OP_PCF_FLAG = 1

# Which collectives Dimemas (bsc-performance-tools/dimemas, common_utilities/EventEncoding.c
# MPI_Table + prv2dim/ParaverRecord.cpp GlobalOp) replays as what: MPI_Reduce is its only
# GLOBAL_OP_ROOT_SYNC (the root waits for every member, the others go on; the root is the task whose
# record carries MPI_GLOBAL_OP_ROOT, which Extrae writes on the root's record only); every other
# blocking collective is GLOBAL_OP_SYNC (every member waits for the last one, whatever the root).
ROOT_SYNC_COLLECTIVES = ("MPI_Reduce",)

# Extrae's APPL_EV (src/common/events.h): written on every thread with value 1 when tracing starts
# and 0 when it ends (Backend_Finalize, after MPI_Finalize), flag 6 in the .pcf.  prv2dim ends a
# thread's last CPU burst at it: without it the time after the last MPI call is lost in Dimemas.
APPL_EV = 40000001
APPL_EV_LABEL = "Application"
APPL_EV_VALUES: Dict[int, str] = {0: "End", 1: "Begin"}
APPL_EV_PCF_FLAG = 6

# [EV] (044e8b) one-sided extra types; written after the RMA type block with the
# RMA flag.  MPI_RMA_Event writes SIZE when != 0, TARGET_RANK/ORIGIN_ADDR/
# TARGET_DISP for Get/Put/Get_accumulate, TARGET_RANK for Win_lock/unlock.
MPITYPE_RMA_SIZE = 50001000
MPITYPE_RMA_TARGET_RANK = 50001001
MPITYPE_RMA_ORIGIN_ADDR = 50001002
MPITYPE_RMA_TARGET_DISP = 50001003

# [EVH] ids, [TBL] labels (soft counters / MPI-IO size; flag 0 in the .pcf).
MPI_TEST_COUNTER_EV = 50000080
MPI_IO_SIZE_EV = 50000110
MPI_IPROBE_COUNTER_EV = 50000300
MPI_TIME_OUTSIDE_IPROBES_EV = 50000301
MPI_REQUEST_GET_STATUS_COUNTER_EV = 50000302
MPI_TIME_OUTSIDE_MPI_REQUEST_GET_STATUS_EV = 50000303

MPI_EXTRA_EVENT_TYPES: Dict[int, str] = {
    MPI_GLOBAL_OP_SENDSIZE: "Send Size in MPI Global OP",
    MPI_GLOBAL_OP_RECVSIZE: "Recv Size in MPI Global OP",
    MPI_GLOBAL_OP_ROOT: "Root in MPI Global OP",
    MPI_GLOBAL_OP_COMM: "Communicator in MPI Global OP",
    MPITYPE_RMA_SIZE: "MPI One-sided size",
    MPITYPE_RMA_TARGET_RANK: "MPI One-sided target rank",
    MPITYPE_RMA_ORIGIN_ADDR: "MPI One-sided origin address",
    MPITYPE_RMA_TARGET_DISP: "MPI One-sided target displacement",
    MPI_IO_SIZE_EV: "MPI-IO size in bytes",
    MPI_TEST_COUNTER_EV: "MPI_Test misses",
    MPI_IPROBE_COUNTER_EV: "MPI_Iprobe misses",
    MPI_TIME_OUTSIDE_IPROBES_EV: "Elapsed time outside MPI_Iprobe",
    MPI_REQUEST_GET_STATUS_COUNTER_EV: "MPI_Request_get_status counter",
    MPI_TIME_OUTSIDE_MPI_REQUEST_GET_STATUS_EV: "Elapsed time outside MPI_Request_get_status",
}

# Communication records (type 3) as Extrae writes them
# ([SEM] + src/merger/paraver/trace_communication.c trace_communicationAt):
#   3:cpu_s:ptask_s:task_s:thread_s:log_send:phy_send:
#     cpu_r:ptask_r:task_r:thread_r:log_recv:phy_recv:size:tag
#   log_send = begin of the send call, phy_send = end of the send call,
#   log_recv = begin of MPI_Recv (or END of MPI_Irecv), phy_recv = end of
#   MPI_Recv (or the Wait/Test that completed the Irecv);
#   size = bytes (receive side), tag = the MPI message tag.
# Sendrecv: one send and one receive record; collectives: no type-3 records.

# --------------------------------------------------------------------------
# Paraver states  [EVH] STATE_* numbers, [LBL] labels/colours
# --------------------------------------------------------------------------
# Extrae's labels.h holds 24 states (0..23); newer labels.c iterates 32
# (0..31) but the definitions of 24..31 were not found.
EXTRAE_STATES: Dict[int, str] = {
    0: "Idle",
    1: "Running",
    2: "Not created",
    3: "Waiting a message",
    4: "Blocking Send",
    5: "Synchronization",
    6: "Test/Probe",
    7: "Scheduling and Fork/Join",
    8: "Wait/WaitAll",
    9: "Blocked",
    10: "Immediate Send",
    11: "Immediate Receive",
    12: "I/O",
    13: "Group Communication",
    14: "Tracing Disabled",
    15: "Others",
    16: "Send Receive",
    17: "Memory transfer",
    18: "Profiling",
    19: "On-line analysis",
    20: "Remote memory access",
    21: "Atomic memory operation",
    22: "Memory ordering operation",
    23: "Distributed locking",
}

EXTRAE_STATE_COLORS: Dict[int, Tuple[int, int, int]] = {
    0: (117, 195, 255),
    1: (0, 0, 255),
    2: (255, 255, 255),
    3: (255, 0, 0),
    4: (255, 0, 174),
    5: (179, 0, 0),
    6: (0, 255, 0),
    7: (255, 255, 0),
    8: (235, 0, 0),
    9: (0, 162, 0),
    10: (255, 0, 255),
    11: (100, 100, 177),
    12: (172, 174, 41),
    13: (255, 144, 26),
    14: (2, 255, 177),
    15: (192, 224, 0),
    16: (66, 66, 66),
    17: (255, 0, 96),  # {0xff, 0x0, 0x60}
    18: (169, 169, 169),
    19: (169, 0, 0),
    20: (0, 109, 255),
    21: (200, 61, 68),
    22: (200, 66, 0),
    23: (0, 41, 0),
}

# --------------------------------------------------------------------------
# .pcf text blocks, byte-for-byte as Extrae's labels.c prints them
# (each block is followed by LET_SPACES = "\n\n").
# --------------------------------------------------------------------------
PCF_DEFAULT_OPTIONS = (
    "DEFAULT_OPTIONS\n"
    "\n"
    "LEVEL               THREAD\n"
    "UNITS               NANOSEC\n"
    "LOOK_BACK           100\n"
    "SPEED               1\n"
    "FLAG_ICONS          ENABLED\n"
    "NUM_OF_STATE_COLORS 1000\n"
    "YMAX_SCALE          37\n"
    "\n\n"
)

PCF_DEFAULT_SEMANTIC = "DEFAULT_SEMANTIC\n\nTHREAD_FUNC          State As Is\n\n\n"

PCF_GRADIENT_COLOR = (
    "GRADIENT_COLOR\n"
    "0    {0,255,2}\n"
    "1    {0,244,13}\n"
    "2    {0,232,25}\n"
    "3    {0,220,37}\n"
    "4    {0,209,48}\n"
    "5    {0,197,60}\n"
    "6    {0,185,72}\n"
    "7    {0,173,84}\n"
    "8    {0,162,95}\n"
    "9    {0,150,107}\n"
    "10    {0,138,119}\n"
    "11    {0,127,130}\n"
    "12    {0,115,142}\n"
    "13    {0,103,154}\n"
    "14    {0,91,166}\n"
    "\n\n"
)

PCF_GRADIENT_NAMES = (
    "GRADIENT_NAMES\n"
    "0    Gradient 0\n"
    "1    Grad. 1/MPI Events\n"
    "2    Grad. 2/OMP Events\n"
    "3    Grad. 3/OMP locks\n"
    "4    Grad. 4/User func\n"
    "5    Grad. 5/User Events\n"
    "6    Grad. 6/General Events\n"
    "7    Grad. 7/Hardware Counters\n"
    "8    Gradient 8\n"
    "9    Gradient 9\n"
    "10    Gradient 10\n"
    "11    Gradient 11\n"
    "12    Gradient 12\n"
    "13    Gradient 13\n"
    "14    Gradient 14\n"
    "\n\n"
)


# The collectives every rank of the communicator leaves only after every rank has entered: the clock
# alignment's sync points (model/align/syncpoints.py) and the replay's synchronising calls (metrics/replay.py).
ALL_TO_ALL_COLLECTIVES = (
    "MPI_Barrier",
    "MPI_Allreduce",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Alltoallw",
    "MPI_Reduce_scatter",
    "MPI_Reduce_scatter_block",
)


# The point-to-point calls by role: message matching (translate/mpi_messages.py) and the MPI reader, which
# merges the two rows nsys exports for one MPI_Sendrecv (nsys/readers/mpi.py).
SEND_CALLS = frozenset(
    {"MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend"}
)
RECV_CALLS = frozenset({"MPI_Recv", "MPI_Irecv", "MPI_Mrecv", "MPI_Imrecv"})
SYNCHRONOUS_SEND_CALLS = frozenset({"MPI_Ssend"})  # returns only once the matching receive is posted
SENDRECV_CALLS = frozenset({"MPI_Sendrecv", "MPI_Sendrecv_replace"})  # a send and a receive in one call
NONBLOCKING_RECV_CALLS = frozenset({"MPI_Irecv", "MPI_Imrecv"})
# persistent requests: each MPI_Start/MPI_Startall of a request is one message of its *_init call
PERSISTENT_SEND_CALLS = frozenset({"MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init"})
PERSISTENT_RECV_CALLS = frozenset({"MPI_Recv_init"})
START_CALLS = frozenset({"MPI_Start", "MPI_Startall"})


# --------------------------------------------------------------------------
# MPI calls: (name, Paraver event type, Paraver value, state inside the call)
# value/type: [EV]+[TBL] for 1..172, [NSP]/[DIM] for 173..219; state: [SEM]
# unless the name is in STATE_INFERRED.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class MpiCall:
    name: str
    event_type: int
    value: int
    state: int


_P, _C, _O, _R, _I = (MPITYPE_PTOP, MPITYPE_COLLECTIVE, MPITYPE_OTHER, MPITYPE_RMA, MPITYPE_IO)

MPI_CALLS: Tuple[MpiCall, ...] = (
    MpiCall("MPI_Send", _P, 1, 4),
    MpiCall("MPI_Recv", _P, 2, 3),
    MpiCall("MPI_Isend", _P, 3, 10),
    MpiCall("MPI_Irecv", _P, 4, 11),
    MpiCall("MPI_Wait", _P, 5, 8),
    MpiCall("MPI_Waitall", _P, 6, 8),
    MpiCall("MPI_Bcast", _C, 7, 13),
    MpiCall("MPI_Barrier", _C, 8, 5),  # STATE_BARRIER = 5, not 13
    MpiCall("MPI_Reduce", _C, 9, 13),
    MpiCall("MPI_Allreduce", _C, 10, 13),
    MpiCall("MPI_Alltoall", _C, 11, 13),
    MpiCall("MPI_Alltoallv", _C, 12, 13),
    MpiCall("MPI_Gather", _C, 13, 13),
    MpiCall("MPI_Gatherv", _C, 14, 13),
    MpiCall("MPI_Scatter", _C, 15, 13),
    MpiCall("MPI_Scatterv", _C, 16, 13),
    MpiCall("MPI_Allgather", _C, 17, 13),
    MpiCall("MPI_Allgatherv", _C, 18, 13),
    MpiCall("MPI_Comm_rank", _O, 19, 15),
    MpiCall("MPI_Comm_size", _O, 20, 15),
    MpiCall("MPI_Comm_create", _O, 21, 15),
    MpiCall("MPI_Comm_dup", _O, 22, 15),
    MpiCall("MPI_Comm_split", _O, 23, 15),
    MpiCall("MPI_Comm_group", _O, 24, 15),
    MpiCall("MPI_Comm_free", _O, 25, 15),
    MpiCall("MPI_Comm_remote_group", _O, 26, 15),
    MpiCall("MPI_Comm_remote_size", _O, 27, 15),
    MpiCall("MPI_Comm_test_inter", _O, 28, 15),
    MpiCall("MPI_Comm_compare", _O, 29, 15),
    MpiCall("MPI_Scan", _C, 30, 13),
    MpiCall("MPI_Init", _O, 31, 15),  # STATE_INITFINI = 15
    MpiCall("MPI_Finalize", _O, 32, 15),
    MpiCall("MPI_Bsend", _P, 33, 4),
    MpiCall("MPI_Ssend", _P, 34, 4),
    MpiCall("MPI_Rsend", _P, 35, 4),
    MpiCall("MPI_Ibsend", _P, 36, 10),
    MpiCall("MPI_Issend", _P, 37, 10),
    MpiCall("MPI_Irsend", _P, 38, 10),
    MpiCall("MPI_Test", _O, 39, 8),  # Extrae: type OTHER, state 8
    MpiCall("MPI_Cancel", _P, 40, 15),
    MpiCall("MPI_Sendrecv", _P, 41, 16),
    MpiCall("MPI_Sendrecv_replace", _P, 42, 16),
    MpiCall("MPI_Cart_create", _O, 43, 15),
    MpiCall("MPI_Cart_shift", _O, 44, 15),
    MpiCall("MPI_Cart_coords", _O, 45, 15),
    MpiCall("MPI_Cart_get", _O, 46, 15),
    MpiCall("MPI_Cart_map", _O, 47, 15),
    MpiCall("MPI_Cart_rank", _O, 48, 15),
    MpiCall("MPI_Cart_sub", _O, 49, 15),
    MpiCall("MPI_Cartdim_get", _O, 50, 15),
    MpiCall("MPI_Dims_create", _O, 51, 15),
    MpiCall("MPI_Graph_get", _O, 52, 15),
    MpiCall("MPI_Graph_map", _O, 53, 15),
    MpiCall("MPI_Graph_create", _O, 54, 15),
    MpiCall("MPI_Graph_neighbors", _O, 55, 15),
    MpiCall("MPI_Graphdims_get", _O, 56, 15),
    MpiCall("MPI_Graph_neighbors_count", _O, 57, 15),
    MpiCall("MPI_Topo_test", _O, 58, 15),
    MpiCall("MPI_Waitany", _P, 59, 8),
    MpiCall("MPI_Waitsome", _P, 60, 8),
    MpiCall("MPI_Probe", _P, 61, 6),
    MpiCall("MPI_Iprobe", _P, 62, 6),
    MpiCall("MPI_Win_create", _R, 63, 15),
    MpiCall("MPI_Win_free", _R, 64, 15),
    MpiCall("MPI_Put", _R, 65, 17),
    MpiCall("MPI_Get", _R, 66, 17),
    MpiCall("MPI_Accumulate", _R, 67, 17),
    MpiCall("MPI_Win_fence", _R, 68, 17),
    MpiCall("MPI_Win_start", _R, 69, 15),  # .pcf label swapped, see below
    MpiCall("MPI_Win_complete", _R, 70, 15),  # .pcf label swapped, see below
    MpiCall("MPI_Win_post", _R, 71, 15),
    MpiCall("MPI_Win_wait", _R, 72, 8),
    MpiCall("MPI_Win_test", _R, 73, 8),
    MpiCall("MPI_Win_lock", _R, 74, 15),
    MpiCall("MPI_Win_unlock", _R, 75, 15),
    MpiCall("MPI_Pack", _O, 76, 15),
    MpiCall("MPI_Unpack", _O, 77, 15),
    MpiCall("MPI_Op_create", _O, 78, 15),
    MpiCall("MPI_Op_free", _O, 79, 15),
    MpiCall("MPI_Reduce_scatter", _C, 80, 13),
    MpiCall("MPI_Attr_delete", _O, 81, 15),
    MpiCall("MPI_Attr_get", _O, 82, 15),
    MpiCall("MPI_Attr_put", _O, 83, 15),
    MpiCall("MPI_Group_difference", _O, 84, 15),
    MpiCall("MPI_Group_excl", _O, 85, 15),
    MpiCall("MPI_Group_free", _O, 86, 15),
    MpiCall("MPI_Group_incl", _O, 87, 15),
    MpiCall("MPI_Group_intersection", _O, 88, 15),
    MpiCall("MPI_Group_rank", _O, 89, 15),
    MpiCall("MPI_Group_range_excl", _O, 90, 15),
    MpiCall("MPI_Group_range_incl", _O, 91, 15),
    MpiCall("MPI_Group_size", _O, 92, 15),
    MpiCall("MPI_Group_translate_ranks", _O, 93, 15),
    MpiCall("MPI_Group_union", _O, 94, 15),
    MpiCall("MPI_Group_compare", _O, 95, 15),
    MpiCall("MPI_Intercomm_create", _O, 96, 15),
    MpiCall("MPI_Intercomm_merge", _O, 97, 15),
    MpiCall("MPI_Keyval_free", _O, 98, 15),
    MpiCall("MPI_Keyval_create", _O, 99, 15),
    MpiCall("MPI_Abort", _O, 100, 15),
    MpiCall("MPI_Error_class", _O, 101, 15),
    MpiCall("MPI_Errhandler_create", _O, 102, 15),
    MpiCall("MPI_Errhandler_free", _O, 103, 15),
    MpiCall("MPI_Errhandler_get", _O, 104, 15),
    MpiCall("MPI_Error_string", _O, 105, 15),
    MpiCall("MPI_Errhandler_set", _O, 106, 15),
    MpiCall("MPI_Get_processor_name", _O, 107, 15),
    MpiCall("MPI_Initialized", _O, 108, 15),
    MpiCall("MPI_Wtick", _O, 109, 15),
    MpiCall("MPI_Wtime", _O, 110, 15),
    MpiCall("MPI_Address", _O, 111, 15),
    MpiCall("MPI_Bsend_init", _P, 112, 10),
    MpiCall("MPI_Buffer_attach", _O, 113, 15),
    MpiCall("MPI_Buffer_detach", _O, 114, 15),
    MpiCall("MPI_Request_free", _O, 115, 8),  # handler uses STATE_TWRECV
    MpiCall("MPI_Recv_init", _P, 116, 11),
    MpiCall("MPI_Send_init", _P, 117, 10),
    MpiCall("MPI_Get_count", _O, 118, 15),
    MpiCall("MPI_Get_elements", _O, 119, 15),
    MpiCall("MPI_Pack_size", _O, 120, 15),
    MpiCall("MPI_Rsend_init", _P, 121, 10),
    MpiCall("MPI_Ssend_init", _P, 122, 10),
    MpiCall("MPI_Start", _O, 123, 15),
    MpiCall("MPI_Startall", _O, 124, 15),
    MpiCall("MPI_Testall", _O, 125, 8),
    MpiCall("MPI_Testany", _O, 126, 8),
    MpiCall("MPI_Test_cancelled", _O, 127, 15),
    MpiCall("MPI_Testsome", _O, 128, 8),
    MpiCall("MPI_Type_commit", _O, 129, 15),
    MpiCall("MPI_Type_contiguous", _O, 130, 15),
    MpiCall("MPI_Type_extent", _O, 131, 15),
    MpiCall("MPI_Type_free", _O, 132, 15),
    MpiCall("MPI_Type_hindexed", _O, 133, 15),
    MpiCall("MPI_Type_hvector", _O, 134, 15),
    MpiCall("MPI_Type_indexed", _O, 135, 15),
    MpiCall("MPI_Type_lb", _O, 136, 15),
    MpiCall("MPI_Type_size", _O, 137, 15),
    MpiCall("MPI_Type_struct", _O, 138, 15),
    MpiCall("MPI_Type_ub", _O, 139, 15),
    MpiCall("MPI_Type_vector", _O, 140, 15),
    MpiCall("MPI_File_open", _I, 141, 12),
    MpiCall("MPI_File_close", _I, 142, 12),
    MpiCall("MPI_File_read", _I, 143, 12),
    MpiCall("MPI_File_read_all", _I, 144, 12),
    MpiCall("MPI_File_write", _I, 145, 12),
    MpiCall("MPI_File_write_all", _I, 146, 12),
    MpiCall("MPI_File_read_at", _I, 147, 12),
    MpiCall("MPI_File_read_at_all", _I, 148, 12),
    MpiCall("MPI_File_write_at", _I, 149, 12),
    MpiCall("MPI_File_write_at_all", _I, 150, 12),
    MpiCall("MPI_Comm_spawn", _O, 151, 15),
    MpiCall("MPI_Comm_spawn_multiple", _O, 152, 15),
    MpiCall("MPI_Request_get_status", _O, 153, 15),
    MpiCall("MPI_Ireduce", _C, 154, 13),
    MpiCall("MPI_Iallreduce", _C, 155, 13),
    MpiCall("MPI_Ibarrier", _C, 156, 5),
    MpiCall("MPI_Ibcast", _C, 157, 13),
    MpiCall("MPI_Ialltoall", _C, 158, 13),
    MpiCall("MPI_Ialltoallv", _C, 159, 13),
    MpiCall("MPI_Iallgather", _C, 160, 13),
    MpiCall("MPI_Iallgatherv", _C, 161, 13),
    MpiCall("MPI_Igather", _C, 162, 13),
    MpiCall("MPI_Igatherv", _C, 163, 13),
    MpiCall("MPI_Iscatter", _C, 164, 13),
    MpiCall("MPI_Iscatterv", _C, 165, 13),
    MpiCall("MPI_Ireduce_scatter", _C, 166, 13),
    MpiCall("MPI_Iscan", _C, 167, 13),
    MpiCall("MPI_Reduce_scatter_block", _C, 168, 13),
    MpiCall("MPI_Ireduce_scatter_block", _C, 169, 13),
    MpiCall("MPI_Alltoallw", _C, 170, 13),
    MpiCall("MPI_Ialltoallw", _C, 171, 13),
    MpiCall("MPI_Get_accumulate", _R, 172, 17),
    # ---- Extrae 4.x values, [NSP]; types 173..193 confirmed by [DIM] ----
    MpiCall("MPI_Dist_graph_create", _O, 173, 15),
    MpiCall("MPI_Neighbor_allgather", _C, 174, 13),
    MpiCall("MPI_Ineighbor_allgather", _C, 175, 13),
    MpiCall("MPI_Neighbor_allgatherv", _C, 176, 13),
    MpiCall("MPI_Ineighbor_allgatherv", _C, 177, 13),
    MpiCall("MPI_Neighbor_alltoall", _C, 178, 13),
    MpiCall("MPI_Ineighbor_alltoall", _C, 179, 13),
    MpiCall("MPI_Neighbor_alltoallv", _C, 180, 13),
    MpiCall("MPI_Ineighbor_alltoallv", _C, 181, 13),
    MpiCall("MPI_Neighbor_alltoallw", _C, 182, 13),
    MpiCall("MPI_Ineighbor_alltoallw", _C, 183, 13),
    MpiCall("MPI_Fetch_and_op", _R, 184, 17),
    MpiCall("MPI_Compare_and_swap", _R, 185, 17),
    MpiCall("MPI_Win_flush", _R, 186, 15),
    MpiCall("MPI_Win_flush_all", _R, 187, 15),
    MpiCall("MPI_Win_flush_local", _R, 188, 15),
    MpiCall("MPI_Win_flush_local_all", _R, 189, 15),
    MpiCall("MPI_Mprobe", _P, 190, 6),
    MpiCall("MPI_Improbe", _P, 191, 6),
    MpiCall("MPI_Mrecv", _P, 192, 3),
    MpiCall("MPI_Imrecv", _P, 193, 11),
    # ---- Extrae 4.x values, [NSP]; types by Extrae's rules (inferred) ----
    MpiCall("MPI_Comm_split_type", _O, 194, 15),
    MpiCall("MPI_File_write_all_begin", _I, 195, 12),
    MpiCall("MPI_File_write_all_end", _I, 196, 12),
    MpiCall("MPI_File_read_all_begin", _I, 197, 12),
    MpiCall("MPI_File_read_all_end", _I, 198, 12),
    MpiCall("MPI_File_write_at_all_begin", _I, 199, 12),
    MpiCall("MPI_File_write_at_all_end", _I, 200, 12),
    MpiCall("MPI_File_read_at_all_begin", _I, 201, 12),
    MpiCall("MPI_File_read_at_all_end", _I, 202, 12),
    MpiCall("MPI_File_read_ordered", _I, 203, 12),
    MpiCall("MPI_File_read_ordered_begin", _I, 204, 12),
    MpiCall("MPI_File_read_ordered_end", _I, 205, 12),
    MpiCall("MPI_File_read_shared", _I, 206, 12),
    MpiCall("MPI_File_write_ordered", _I, 207, 12),
    MpiCall("MPI_File_write_ordered_begin", _I, 208, 12),
    MpiCall("MPI_File_write_ordered_end", _I, 209, 12),
    MpiCall("MPI_File_write_shared", _I, 210, 12),
    MpiCall("MPI_Comm_dup_with_info", _O, 211, 15),
    MpiCall("MPI_Dist_graph_create_adjacent", _O, 212, 15),
    MpiCall("MPI_Comm_create_group", _O, 213, 15),
    MpiCall("MPI_Exscan", _C, 214, 13),
    MpiCall("MPI_Iexscan", _C, 215, 13),
    MpiCall("MPI_File_get_info", _I, 216, 12),
    MpiCall("MPI_File_get_size", _I, 217, 12),
    MpiCall("MPI_File_set_view", _I, 218, 12),
    MpiCall("MPI_File_set_size", _I, 219, 12),
)

# Functions Extrae records under another call's value.  MPI_Init_thread's
# wrapper emits MPI_INIT_EV (src/tracer/wrappers/MPI/mpi_wrapper.c), so it
# appears as value 31 "MPI_Init".  (Dimemas' prv2dim has its own
# MPI_Init_thread = 194, which clashes with Extrae 4.x MPI_Comm_split_type.)
MPI_ALIASES: Dict[str, str] = {
    "MPI_Init_thread": "MPI_Init",
}

# Convenience lookups.
MPI_CALL_BY_NAME: Dict[str, MpiCall] = {c.name: c for c in MPI_CALLS}
MPI_VALUE_LABELS: Dict[int, str] = {c.value: c.name for c in MPI_CALLS}

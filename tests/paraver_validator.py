"""Strict validator and loader for Paraver traces (NAME.prv[.gz], NAME.pcf, NAME.row).

The grammar checked here is what Paraver's own parser (paraver-kernel) accepts, tightened to what
nsys2prv must write (docs/trace-content.md describes the content).

Public API::

    validate_trace(base) -> Trace     # raises AssertionError listing every problem found
    load_trace(base) -> Trace         # same parsing, never raises on content problems

``base`` is the path without extension ("out/trace" for out/trace.prv, .pcf, .row); a path
ending in ``.prv`` or ``.prv.gz`` is accepted too.  ``base.prv`` is preferred to
``base.prv.gz`` when both exist.

The record checks are vectorised (numpy on the raw bytes, pandas ``read_csv`` per record
shape), so multi-million-record traces validate in seconds.

Plain module (no package-relative imports): importable as ``paraver_validator`` (tests/ on
sys.path) or as ``tests.paraver_validator``.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pandas as pd

__all__ = [
    "validate_trace",
    "load_trace",
    "Trace",
    "Header",
    "Pcf",
    "STATE_COLUMNS",
    "EVENT_COLUMNS",
    "COMM_COLUMNS",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_LISTED = 50  # problems listed in the AssertionError message
EXAMPLES = 3  # example lines shown per record-level check

STATE_COLUMNS = ["cpu", "appl", "task", "thread", "begin", "end", "state"]
EVENT_COLUMNS = ["cpu", "appl", "task", "thread", "time", "type", "value", "rec"]
COMM_COLUMNS = [
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
]

PCF_SECTIONS = (
    "DEFAULT_OPTIONS",
    "DEFAULT_SEMANTIC",
    "STATES",
    "STATES_COLOR",
    "GRADIENT_COLOR",
    "GRADIENT_NAMES",
    "EVENT_TYPE",
    "VALUES",
)
ROW_LEVELS = ("CPU", "NODE", "THREAD", "TASK", "APPL")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KIND_NAME = {1: "state", 2: "event", 3: "communication"}


# --------------------------------------------------------------------------- data classes
@dataclass
class Header:
    """Parsed first line of the .prv."""

    text: str
    date: str
    end_time: int
    unit: Optional[str]  # "_ns" for a valid trace; None when the suffix is missing
    nodes: list  # CPUs per node, e.g. [2, 2]; [] when RESOURCES is 0
    apps: list  # per app, list of tasks as (nthreads, node) tuples
    ncomm: Optional[int] = None  # the optional ",NCOMM" suffix

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def total_cpus(self) -> int:
        return int(sum(self.nodes))

    @property
    def n_apps(self) -> int:
        return len(self.apps)

    @property
    def n_tasks(self) -> int:
        return sum(len(a) for a in self.apps)

    @property
    def n_threads(self) -> int:
        return sum(th for a in self.apps for th, _ in a)


@dataclass
class Pcf:
    """Parsed .pcf.  ``types``: type id -> {"label", "gradient", "values"} where
    ``values`` is a dict value -> label, or None when the type has no VALUES list."""

    types: dict = field(default_factory=dict)
    states: dict = field(default_factory=dict)  # state id -> label
    states_color: dict = field(default_factory=dict)  # state id -> (r, g, b)
    gradient_color: dict = field(default_factory=dict)  # index -> (r, g, b)
    gradient_names: dict = field(default_factory=dict)  # index -> name
    default_options: list = field(default_factory=list)  # raw lines
    default_semantic: list = field(default_factory=list)  # raw lines


@dataclass
class Trace:
    base: str
    prv_path: str
    header: Optional[Header]
    states: pd.DataFrame
    events: pd.DataFrame
    comms: pd.DataFrame
    pcf: Pcf
    row: dict  # level name ("NODE", "THREAD", ...) -> list of names
    rec_line: np.ndarray  # rec index -> 1-based line number in the .prv
    problems: list  # every problem found (load_trace does not raise)


class _Problems:
    def __init__(self) -> None:
        self.items: list = []

    def add(self, msg: str) -> None:
        self.items.append(msg)


# --------------------------------------------------------------------------- header
_RE_END = re.compile(r"(\d+)(_[A-Za-z]+)?:")
_RE_RES = re.compile(r"(\d+)(\(([^)]*)\))?:")
_RE_NAPPS = re.compile(r"(\d+):")
_RE_APP = re.compile(r"(\d+)(:?)\(([^)]*)\)")
_RE_NCOMM = re.compile(r",(\d+)")


def _parse_header(line: str, P: _Problems) -> Optional[Header]:
    """Parse ``#Paraver (DATE):END_ns:RESOURCES:NAPPS:APP[:APP...][,NCOMM]``.

    Returns None when the line is too broken to know the object model."""
    what = "prv header"
    shown = line if len(line) < 300 else line[:300] + "..."
    if not line.startswith("#Paraver ("):
        P.add(f"{what}: must start with '#Paraver (' : {shown!r}")
        return None
    close = line.find(")", len("#Paraver ("))
    if close < 0:
        P.add(f"{what}: no ')' closing the date: {shown!r}")
        return None
    date = line[len("#Paraver (") : close]
    rest = line[close + 1 :]
    if not rest.startswith(":"):
        P.add(f"{what}: expected ':' after the date ')': {shown!r}")
        return None
    pos = 1
    m = _RE_END.match(rest, pos)
    if not m:
        P.add(f"{what}: END time is not an unsigned integer followed by '_ns:': {shown!r}")
        return None
    end_time = int(m.group(1))
    unit = m.group(2)
    if unit is None:
        P.add(
            f"{what}: END time has no unit suffix, the '_ns' unit is required (no suffix means microseconds): {shown!r}"
        )
    elif unit != "_ns":
        P.add(f"{what}: END time unit is {unit!r}, the '_ns' unit is required: {shown!r}")
    pos = m.end()

    m = _RE_RES.match(rest, pos)
    if not m:
        P.add(f"{what}: RESOURCES must be 'N(c1,...,cN)', 'N' or '0': {shown!r}")
        return None
    n_nodes = int(m.group(1))
    nodes: list = []
    if m.group(2) is not None:
        parts = m.group(3).split(",")
        if n_nodes == 0:
            P.add(f"{what}: RESOURCES '0' takes no CPU list: {shown!r}")
        if not all(re.fullmatch(r"\d+", p) for p in parts):
            P.add(f"{what}: RESOURCES CPU list {m.group(2)!r} is not comma-separated unsigned integers")
            return None
        nodes = [int(p) for p in parts]
        if len(nodes) != n_nodes:
            P.add(f"{what}: RESOURCES declares {n_nodes} nodes but lists {len(nodes)} CPU counts")
        if any(c < 1 for c in nodes):
            P.add(f"{what}: RESOURCES has a node with 0 CPUs: {m.group(2)!r}")
    else:
        nodes = [1] * n_nodes
    pos = m.end()

    m = _RE_NAPPS.match(rest, pos)
    if not m:
        P.add(f"{what}: NAPPS is not an unsigned integer followed by ':': {shown!r}")
        return None
    napps = int(m.group(1))
    if napps < 1:
        P.add(f"{what}: NAPPS must be >= 1, got {napps}")
        return None
    pos = m.end()

    n_nodes_eff = len(nodes)
    apps: list = []
    for i in range(1, napps + 1):
        m = _RE_APP.match(rest, pos)
        if not m:
            P.add(f"{what}: application {i} of {napps} is not 'T(threads:node,...)' at {rest[pos : pos + 40]!r}")
            return None
        ntasks = int(m.group(1))
        if m.group(2):
            P.add(
                f"{what}: stray ':' between the task count and '(' in application {i} "
                f"({m.group(0)!r}); the grammar is 'T(th:node,...)'"
            )
        entries = m.group(3).split(",")
        tasks = []
        for j, e in enumerate(entries, 1):
            em = re.fullmatch(r"(\d+):(\d+)", e)
            if not em:
                P.add(f"{what}: application {i} task {j}: {e!r} is not 'threads:node'")
                return None
            th, node = int(em.group(1)), int(em.group(2))
            if th < 1:
                P.add(f"{what}: application {i} task {j} has {th} threads (must be >= 1)")
            if n_nodes_eff == 0:
                if node != 0:
                    P.add(
                        f"{what}: application {i} task {j} is mapped to node {node} but "
                        f"RESOURCES is 0 (no nodes): use node 0"
                    )
            elif not 1 <= node <= n_nodes_eff:
                P.add(
                    f"{what}: application {i} task {j} is mapped to node {node}, outside "
                    f"1..{n_nodes_eff} (above the node count makes paramedir hang)"
                )
            tasks.append((th, node))
        if ntasks < 1:
            P.add(f"{what}: application {i} has {ntasks} tasks (must be >= 1)")
        if ntasks != len(tasks):
            P.add(f"{what}: application {i} declares {ntasks} tasks but lists {len(tasks)}")
        apps.append(tasks)
        pos = m.end()
        if i < napps:
            if rest[pos : pos + 1] != ":":
                P.add(f"{what}: NAPPS is {napps} but only {i} application(s) found: {shown!r}")
                break
            pos += 1

    ncomm = None
    m = _RE_NCOMM.match(rest, pos)
    if m:
        ncomm = int(m.group(1))
        pos = m.end()
    if pos != len(rest):
        P.add(
            f"{what}: unexpected text after the applications: {rest[pos : pos + 60]!r} "
            f"(NAPPS={napps}; only ',NCOMM' may follow)"
        )
    return Header(text=line, date=date, end_time=end_time, unit=unit, nodes=nodes, apps=apps, ncomm=ncomm)


# --------------------------------------------------------------------------- .prv body
class _Body:
    """Raw bytes of the record part of the .prv, split into lines with numpy."""

    def __init__(self, data: bytes, first_line_no: int) -> None:
        if data and not data.endswith(b"\n"):
            data = data + b"\n"
        self.data = data
        self.arr = np.frombuffer(data, dtype=np.uint8)
        self.first_line_no = first_line_no  # 1-based file line number of body line 0
        self.ends = np.flatnonzero(self.arr == 10)
        self.starts = np.empty_like(self.ends)
        if self.ends.size:
            self.starts[0] = 0
            self.starts[1:] = self.ends[:-1] + 1
        self.lengths = self.ends - self.starts

    @property
    def nlines(self) -> int:
        return int(self.ends.size)

    def text(self, i: int, limit: int = 160) -> str:
        s = self.data[self.starts[i] : self.ends[i]].decode("utf-8", "replace")
        return s if len(s) <= limit else s[:limit] + "..."

    def line_no(self, i):
        return i + self.first_line_no

    def line_of_pos(self, pos: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, pos, side="right") - 1


def _examples(body: _Body, body_lines: np.ndarray, details: Optional[Callable] = None) -> str:
    out = []
    for k, bl in enumerate(body_lines[:EXAMPLES]):
        d = f" ({details(k)})" if details is not None else ""
        out.append(f"line {body.line_no(int(bl))}{d}: {body.text(int(bl))!r}")
    return "; ".join(out)


def _flag(P: _Problems, body: _Body, title: str, body_lines: np.ndarray, details: Optional[Callable] = None) -> None:
    """One problem entry for a record-level check: count + first examples."""
    n = int(len(body_lines))
    if n == 0:
        return
    P.add(f"prv: {title} [{n} record(s)], e.g. {_examples(body, body_lines, details)}")


def _read_int_table(buf: bytes, ncols: int) -> list:
    """Parse ':'-separated unsigned integer lines (already validated to contain only digits
    and single ':' separators, exact field count).  Returns a list of (int64 array, overflow
    mask) per column; overflowing entries (> 2^63-1) are set to -1."""
    df = pd.read_csv(
        io.BytesIO(buf), sep=":", header=None, names=list(range(ncols)), na_filter=False, low_memory=False, engine="c"
    )
    cols = []
    for c in range(ncols):
        s = df[c]
        if s.dtype == np.int64:
            cols.append((s.to_numpy(), None))
            continue
        if s.dtype == np.uint64:
            u = s.to_numpy()
            over = u > np.uint64(INT64_MAX)
            v = np.where(over, np.uint64(0), u).astype(np.int64)
            v[over] = -1
            cols.append((v, over))
            continue
        # object (values beyond uint64) or anything unexpected: slow path, error case only
        ints = [int(x) for x in s.astype(str)]
        over = np.array([x > INT64_MAX for x in ints], dtype=bool)
        v = np.array([-1 if o else x for x, o in zip(ints, over)], dtype=np.int64)
        cols.append((v, over))
    return cols


def _empty_frame(columns: list) -> pd.DataFrame:
    return pd.DataFrame({c: np.empty(0, dtype=np.int64) for c in columns})


@dataclass
class _Parsed:
    states: pd.DataFrame
    events: pd.DataFrame
    comms: pd.DataFrame
    state_lines: np.ndarray  # body line index per states row
    event_lines: np.ndarray  # body line index per events row (one per pair)
    comm_lines: np.ndarray
    rec_body_line: np.ndarray  # rec -> body line index
    rec_time: np.ndarray
    rec_kind: np.ndarray


def _parse_body(body: _Body, P: _Problems) -> _Parsed:
    arr = body.arr
    n = arr.size
    nl = body.nlines
    if nl == 0:
        P.add("prv: the trace has no records")
        e = np.empty(0, dtype=np.int64)
        return _Parsed(
            _empty_frame(STATE_COLUMNS),
            _empty_frame(EVENT_COLUMNS),
            _empty_frame(COMM_COLUMNS),
            e,
            e,
            e,
            e,
            e,
            np.empty(0, np.int8),
        )
    starts, lengths = body.starts, body.lengths
    first = arr[starts]
    second = arr[np.minimum(starts + 1, n - 1)]
    is_comment = first == ord("#")
    is_blank = lengths == 0
    rtype = np.zeros(nl, dtype=np.int8)
    for t in (1, 2, 3):
        rtype[(first == 48 + t) & (second == 58)] = t
    is_rec = rtype > 0

    blank = np.flatnonzero(is_blank)
    if blank.size:
        P.add(
            f"prv: blank line(s) [{blank.size}], e.g. lines "
            f"{', '.join(str(body.line_no(int(b))) for b in blank[:EXAMPLES])}"
        )
    other = np.flatnonzero(~is_rec & ~is_comment & ~is_blank)
    if other.size:
        _flag(
            P,
            body,
            "line is neither a record '1:', '2:', '3:' nor a '#' comment "
            "(record type 4, communicator and other lines are not expected)",
            other,
        )

    is_nl = arr == 10
    is_colon = arr == 58
    is_digit = (arr - np.uint8(48)) < 10
    bad_ok = np.ones(nl, dtype=bool)  # record lines whose bytes are clean

    badpos = np.flatnonzero(~(is_digit | is_colon | is_nl))
    if badpos.size:
        bl = body.line_of_pos(badpos)
        keep = is_rec[bl]
        badpos, bl = badpos[keep], bl[keep]
        if bl.size:
            is_sign = (arr[badpos] == ord("-")) | (arr[badpos] == ord("+"))
            sign_lines = np.unique(bl[is_sign])
            other_lines = np.setdiff1d(np.unique(bl[~is_sign]), sign_lines)
            _flag(
                P,
                body,
                "negative or signed number (fields must be unsigned integers; a negative time drops the record)",
                sign_lines,
            )
            _flag(
                P,
                body,
                "invalid character in record (only digits and ':' allowed: no spaces, letters, '\\r')",
                other_lines,
            )
            bad_ok[bl] = False
    del badpos

    emp = np.flatnonzero(is_colon[:-1] & (is_colon[1:] | is_nl[1:]))
    if emp.size:
        el = np.unique(body.line_of_pos(emp))
        el = el[is_rec[el]]
        _flag(P, body, "empty field in record ('::' or trailing ':')", el)
        bad_ok[el] = False
    del is_nl, is_digit

    colon_pos = np.flatnonzero(is_colon)
    del is_colon
    k = np.searchsorted(colon_pos, starts)
    ncol = np.diff(np.append(k, colon_pos.size))
    del colon_pos, k

    ok1 = ncol == 7
    ok3 = ncol == 14
    ok2 = (ncol >= 7) & (ncol % 2 == 1)
    badcount1 = np.flatnonzero((rtype == 1) & bad_ok & ~ok1)
    badcount2 = np.flatnonzero((rtype == 2) & bad_ok & ~ok2)
    badcount3 = np.flatnonzero((rtype == 3) & bad_ok & ~ok3)
    _flag(P, body, "state record must have 8 fields '1:cpu:appl:task:thread:begin:end:state'", badcount1)
    _flag(
        P,
        body,
        "event record must have 6 + 2k fields (k >= 1) '2:cpu:appl:task:thread:time:type:value[:type:value]...'",
        badcount2,
    )
    _flag(
        P,
        body,
        "communication record must have 15 fields '3:cpu:appl:task:thread:"
        "logSend:physSend:rcpu:rappl:rtask:rthread:logRecv:physRecv:size:tag'",
        badcount3,
    )
    valid = is_rec & bad_ok & (((rtype == 1) & ok1) | ((rtype == 2) & ok2) | ((rtype == 3) & ok3))

    rec_body_line = np.flatnonzero(valid)
    nrec = rec_body_line.size
    if nrec == 0:
        P.add("prv: the trace has no valid records")
    rec_of_line = np.cumsum(valid) - 1
    rec_time = np.zeros(nrec, dtype=np.int64)
    rec_kind = rtype[rec_body_line].astype(np.int8)

    def extract(line_mask: np.ndarray, ncols: int):
        lines = np.flatnonzero(line_mask)
        if lines.size == 0:
            return lines, None
        bytemask = np.repeat(line_mask, lengths + 1)
        buf = arr[bytemask].tobytes()
        return lines, _read_int_table(buf, ncols)

    def overflow(cols, names, lines, what):
        for (v, over), name in zip(cols, names):
            if over is not None and over.any():
                _flag(
                    P,
                    body,
                    f"{what} field '{name}' does not fit in a signed 64-bit integer",
                    lines[np.flatnonzero(over)],
                )

    # states
    lines, cols = extract(valid & (rtype == 1), 8)
    if cols is None:
        states = _empty_frame(STATE_COLUMNS)
        state_lines = lines
    else:
        overflow(cols[1:], STATE_COLUMNS, lines, "state")
        states = pd.DataFrame({c: cols[i + 1][0] for i, c in enumerate(STATE_COLUMNS)})
        state_lines = lines
        rec_time[rec_of_line[lines]] = states["begin"].to_numpy()

    # communications
    lines, cols = extract(valid & (rtype == 3), 15)
    if cols is None:
        comms = _empty_frame(COMM_COLUMNS)
        comm_lines = lines
    else:
        overflow(cols[1:], COMM_COLUMNS, lines, "communication")
        comms = pd.DataFrame({c: cols[i + 1][0] for i, c in enumerate(COMM_COLUMNS)})
        comm_lines = lines
        rec_time[rec_of_line[lines]] = comms["log_send"].to_numpy()

    # events, grouped by field count
    ev_parts = []
    ev_valid = valid & (rtype == 2)
    for nc in np.unique(ncol[ev_valid]):
        nfields = int(nc) + 1
        npairs = (nfields - 6) // 2
        lines, cols = extract(ev_valid & (ncol == nc), nfields)
        names = ["cpu", "appl", "task", "thread", "time"] + [
            f"{x}#{j + 1}" for j in range(npairs) for x in ("type", "value")
        ]
        overflow(cols[1:], names, lines, "event")
        recs = rec_of_line[lines]
        rec_time[recs] = cols[5][0]
        common = [np.tile(cols[i][0], npairs) for i in range(1, 6)]
        types = np.concatenate([cols[6 + 2 * j][0] for j in range(npairs)])
        values = np.concatenate([cols[7 + 2 * j][0] for j in range(npairs)])
        pair = np.repeat(np.arange(npairs, dtype=np.int64), lines.size)
        ev_parts.append((common, types, values, np.tile(recs, npairs), pair, np.tile(lines, npairs)))
    if ev_parts:
        common = [np.concatenate([p[0][i] for p in ev_parts]) for i in range(5)]
        types = np.concatenate([p[1] for p in ev_parts])
        values = np.concatenate([p[2] for p in ev_parts])
        recs = np.concatenate([p[3] for p in ev_parts])
        pair = np.concatenate([p[4] for p in ev_parts])
        elines = np.concatenate([p[5] for p in ev_parts])
        order = np.lexsort((pair, recs))
        data = {c: common[i][order] for i, c in enumerate(["cpu", "appl", "task", "thread", "time"])}
        data["type"] = types[order]
        data["value"] = values[order]
        data["rec"] = recs[order].astype(np.int64)
        events = pd.DataFrame(data, columns=EVENT_COLUMNS)
        event_lines = elines[order]
    else:
        events = _empty_frame(EVENT_COLUMNS)
        event_lines = np.empty(0, dtype=np.int64)

    return _Parsed(states, events, comms, state_lines, event_lines, comm_lines, rec_body_line, rec_time, rec_kind)


def _check_objects(P, body, h: Header, cpu, appl, task, thread, lines, what, side=""):
    """Vectorised object-range checks for one side: side "" (record owner / sender) or
    "r" (receiver of a communication: rcpu, rappl, rtask, rthread)."""
    napps = h.n_apps
    lens = [len(a) for a in h.apps]
    ntasks_app = np.array([0] + lens, dtype=np.int64)
    base_app = np.zeros(napps + 1, dtype=np.int64)
    if napps:
        base_app[1:] = np.cumsum([0] + lens[:-1])
    nthreads_g = np.array([th for a in h.apps for th, _ in a] or [0], dtype=np.int64)
    node_g = np.array([nd for a in h.apps for _, nd in a] or [0], dtype=np.int64)
    ncpu = h.total_cpus
    cpu_node = np.zeros(ncpu + 1, dtype=np.int64)
    if ncpu:
        cpu_node[1:] = np.repeat(np.arange(1, h.n_nodes + 1), h.nodes)

    p = side
    who = f"{what} receiver" if side else what
    ok_appl = (appl >= 1) & (appl <= napps)
    a = np.where(ok_appl, appl, 0)
    ok_task = ok_appl & (task >= 1) & (task <= ntasks_app[a])
    g = np.where(ok_task, base_app[a] + task - 1, 0)
    ok_thread = ok_task & (thread >= 1) & (thread <= nthreads_g[g])

    bad = np.flatnonzero(~ok_appl)
    _flag(P, body, f"{who}: {p}appl out of range 1..{napps}", lines[bad], lambda k: f"{p}appl {appl[bad[k]]}")
    bad = np.flatnonzero(ok_appl & ~ok_task)
    _flag(
        P,
        body,
        f"{who}: {p}task out of range (1..number of tasks of the application)",
        lines[bad],
        lambda k: f"{p}appl {appl[bad[k]]} has {ntasks_app[a[bad[k]]]} tasks, {p}task is {task[bad[k]]}",
    )
    bad = np.flatnonzero(ok_task & ~ok_thread)
    _flag(
        P,
        body,
        f"{who}: {p}thread out of range (1..number of threads of the task)",
        lines[bad],
        lambda k: (
            f"{p}appl {appl[bad[k]]} {p}task {task[bad[k]]} has "
            f"{nthreads_g[g[bad[k]]]} threads, {p}thread is {thread[bad[k]]}"
        ),
    )

    if ncpu == 0:
        bad = np.flatnonzero(cpu != 0)
        _flag(P, body, f"{who}: {p}cpu must be 0 when RESOURCES is 0", lines[bad])
        return
    ok_cpu = (cpu >= 0) & (cpu <= ncpu)
    bad = np.flatnonzero(~ok_cpu)
    _flag(P, body, f"{who}: {p}cpu out of range 0..{ncpu}", lines[bad], lambda k: f"{p}cpu {cpu[bad[k]]}")
    tnode = node_g[g]
    check = ok_task & ok_cpu & (cpu > 0) & (tnode >= 1) & (tnode <= h.n_nodes)
    c = np.where(check, cpu, 0)
    bad = np.flatnonzero(check & (cpu_node[c] != tnode))
    _flag(
        P,
        body,
        f"{who}: {p}cpu on the wrong node (cpu must belong to its task's node)",
        lines[bad],
        lambda k: (
            f"{p}cpu {cpu[bad[k]]} is on node {cpu_node[c[bad[k]]]}, "
            f"{p}appl {appl[bad[k]]} {p}task {task[bad[k]]} runs on node "
            f"{tnode[bad[k]]}"
        ),
    )


def _check_records(P: _Problems, body: _Body, h: Optional[Header], r: _Parsed) -> None:
    S, E, C = r.states, r.events, r.comms
    s = {c: S[c].to_numpy() for c in S.columns}
    c_ = {c: C[c].to_numpy() for c in C.columns}
    # event records (not pairs) for object/time checks: first pair of each record
    first_pair = np.ones(len(E), dtype=bool)
    if len(E):
        rec = E["rec"].to_numpy()
        first_pair[1:] = rec[1:] != rec[:-1]
    ev = {c: E[c].to_numpy()[first_pair] for c in ("cpu", "appl", "task", "thread", "time")}
    ev_lines = r.event_lines[first_pair]

    if h is not None:
        _check_objects(P, body, h, s["cpu"], s["appl"], s["task"], s["thread"], r.state_lines, "state")
        _check_objects(P, body, h, ev["cpu"], ev["appl"], ev["task"], ev["thread"], ev_lines, "event")
        _check_objects(P, body, h, c_["cpu"], c_["appl"], c_["task"], c_["thread"], r.comm_lines, "communication")
        _check_objects(
            P, body, h, c_["rcpu"], c_["rappl"], c_["rtask"], c_["rthread"], r.comm_lines, "communication", "r"
        )
        end = h.end_time
        for name in ("begin", "end"):
            bad = np.flatnonzero(s[name] > end)
            _flag(P, body, f"state {name} time after the header END time {end}", r.state_lines[bad])
        bad = np.flatnonzero(ev["time"] > end)
        _flag(P, body, f"event time after the header END time {end}", ev_lines[bad])
        for name in ("log_send", "phys_send", "log_recv", "phys_recv"):
            bad = np.flatnonzero(c_[name] > end)
            _flag(P, body, f"communication {name} time after the header END time {end}", r.comm_lines[bad])

    bad = np.flatnonzero(s["begin"] > s["end"])
    _flag(P, body, "state begin time after its end time", r.state_lines[bad])
    bad = np.flatnonzero(c_["phys_recv"] < c_["phys_send"])
    _flag(P, body, "communication physical receive time before physical send time", r.comm_lines[bad])
    if len(E):
        bad = np.flatnonzero(E["type"].to_numpy() > INT32_MAX)
        _flag(P, body, "event type above 2^31-1 (cannot be labelled in the .pcf)", r.event_lines[bad])

    # sortedness over the whole file
    t, kind = r.rec_time, r.rec_kind
    if t.size > 1:
        dt = np.diff(t)
        bad = np.flatnonzero(dt < 0)
        lines = r.rec_body_line
        _flag(
            P,
            body,
            "records not in non-decreasing time order (time = begin for states, "
            "time for events, logSend for communications)",
            lines[bad + 1],
            lambda k: f"time {t[bad[k] + 1]} after time {t[bad[k]]} on line {body.line_no(int(lines[bad[k]]))}",
        )
        bad = np.flatnonzero((dt == 0) & (np.diff(kind) < 0))
        _flag(
            P,
            body,
            "at equal time, records out of order: state records must come before "
            "events, and events before communications",
            lines[bad + 1],
            lambda k: (
                f"{_KIND_NAME[int(kind[bad[k] + 1])]} after "
                f"{_KIND_NAME[int(kind[bad[k]])]} at equal time {t[bad[k]]}, i.e. "
                f"{_KIND_NAME[int(kind[bad[k]])]} before "
                f"{_KIND_NAME[int(kind[bad[k] + 1])]}"
            ),
        )


def _check_against_pcf(P: _Problems, body: _Body, r: _Parsed, pcf: Pcf) -> None:
    S, E = r.states, r.events
    if len(S):
        used = np.unique(S["state"].to_numpy())
        missing = [int(x) for x in used if int(x) not in pcf.states]
        if missing:
            st = S["state"].to_numpy()
            first_lines = np.array([r.state_lines[np.argmax(st == m)] for m in missing[:EXAMPLES]])
            _flag(
                P,
                body,
                f"state id(s) not listed in .pcf STATES: {missing[:20]}{' ...' if len(missing) > 20 else ''}",
                np.sort(first_lines),
            )
    if not len(E):
        return
    et = E["type"].to_numpy()
    ev = E["value"].to_numpy()
    used_types = np.unique(et)
    undefined = [int(x) for x in used_types if int(x) not in pcf.types]
    if undefined:
        first_lines = np.array([r.event_lines[np.argmax(et == u)] for u in undefined[:EXAMPLES]])
        P.add(
            f"prv: event type(s) not defined in any .pcf EVENT_TYPE block: {undefined[:20]}"
            f"{' ...' if len(undefined) > 20 else ''} [{len(undefined)} type(s)], e.g. "
            f"{_examples(body, np.sort(first_lines))}"
        )
    labelled = [int(x) for x in used_types if int(x) in pcf.types and pcf.types[int(x)]["values"] is not None]
    if not labelled:
        return
    sel = np.isin(et, labelled)
    pairs = pd.DataFrame({"type": et[sel], "value": ev[sel]}).drop_duplicates()
    lab = [(t, v) for t in labelled for v in pcf.types[t]["values"]]
    labdf = pd.DataFrame(lab, columns=["type", "value"], dtype=np.int64)
    if labdf.empty:
        labdf = pd.DataFrame({"type": np.empty(0, np.int64), "value": np.empty(0, np.int64)})
    m = pairs.merge(labdf, on=["type", "value"], how="left", indicator=True)
    miss = m[m["_merge"] == "left_only"].sort_values(["type", "value"])
    if len(miss):
        shown = [(int(a), int(b)) for a, b in zip(miss["type"][:20], miss["value"][:20])]
        first_lines = []
        for tt, vv in shown[:EXAMPLES]:
            first_lines.append(r.event_lines[np.argmax((et == tt) & (ev == vv))])
        P.add(
            f"prv: event value(s) without a label in the .pcf VALUES list of their type "
            f"(type, value): {shown}{' ...' if len(miss) > 20 else ''} "
            f"[{len(miss)} distinct pair(s)], e.g. {_examples(body, np.sort(first_lines))}"
        )


# --------------------------------------------------------------------------- .pcf
_RE_PCF_STATE = re.compile(r"[ \t]*(\d+)[ \t]+(.*)")
_RE_PCF_COLOR = re.compile(r"[ \t]*(\d+)[ \t]+\{[ \t]*(\d+)[ \t]*,[ \t]*(\d+)[ \t]*,[ \t]*(\d+)[ \t]*\}[ \t]*")
_RE_PCF_TYPE = re.compile(r"[ \t]*(\d+)[ \t]+(\d+)[ \t]+(.*)")
_RE_PCF_VALUE = re.compile(r"[ \t]*(\d+)[ \t]+(.*)")


def _check_label(P, where: str, label: str) -> str:
    if _CONTROL.search(label):
        P.add(f"{where}: label contains control characters: {label!r}")
    lab = label.strip(" \t")
    if not lab:
        P.add(f"{where}: empty label")
    return lab


def _parse_pcf(text: str, P: _Problems, fname: str = "pcf") -> Pcf:
    pcf = Pcf()
    if "\r" in text:
        P.add(f"{fname}: contains carriage returns ('\\r', CRLF line endings?)")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    section: Optional[str] = None
    block_types: list = []  # type ids of the current EVENT_TYPE block
    block_values: Optional[dict] = None
    type_first_line: dict = {}

    def close_block(lineno: int) -> None:
        nonlocal block_types, block_values
        if section in ("EVENT_TYPE", "VALUES") and not block_types:
            P.add(f"{fname} line {lineno}: EVENT_TYPE block without any type line")
        if section == "VALUES" and block_values is not None and not block_values:
            P.add(f"{fname} line {lineno}: empty VALUES list")
        block_types = []
        block_values = None

    for i, raw in enumerate(lines, 1):
        s = raw.strip(" \t")
        where = f"{fname} line {i}"
        if s == "":
            if section in ("EVENT_TYPE", "VALUES"):
                close_block(i)
                section = None
            elif section in ("STATES", "STATES_COLOR", "GRADIENT_COLOR", "GRADIENT_NAMES"):
                section = None
            # DEFAULT_OPTIONS / DEFAULT_SEMANTIC: blank lines inside are customary
            continue
        if s in PCF_SECTIONS:
            if s == "VALUES":
                if section != "EVENT_TYPE" or not block_types:
                    P.add(f"{where}: VALUES outside an EVENT_TYPE block (or after no type line)")
                    section = None
                    continue
                block_values = {}
                for t in block_types:
                    pcf.types[t]["values"] = block_values
                section = "VALUES"
                continue
            if section in ("EVENT_TYPE", "VALUES"):
                close_block(i)
            section = s
            continue
        if section is None:
            P.add(f"{where}: line outside any section: {raw!r}")
            continue
        if section == "DEFAULT_OPTIONS":
            pcf.default_options.append(s)
        elif section == "DEFAULT_SEMANTIC":
            pcf.default_semantic.append(s)
        elif section == "STATES":
            m = _RE_PCF_STATE.fullmatch(raw)
            if not m:
                P.add(f"{where}: STATES line does not parse as '<id> <label>': {raw!r}")
                continue
            sid = int(m.group(1))
            if sid > INT32_MAX:
                P.add(f"{where}: state id {sid} exceeds 2^31-1")
            if sid in pcf.states:
                P.add(f"{where}: state id {sid} defined twice in STATES")
            pcf.states[sid] = _check_label(P, where, m.group(2))
        elif section in ("STATES_COLOR", "GRADIENT_COLOR"):
            m = _RE_PCF_COLOR.fullmatch(raw)
            if not m:
                P.add(f"{where}: {section} line does not parse as '<id> {{r,g,b}}': {raw!r}")
                continue
            rgb = tuple(int(m.group(k)) for k in (2, 3, 4))
            if any(x > 255 for x in rgb):
                P.add(f"{where}: colour component above 255: {raw!r}")
            target = pcf.states_color if section == "STATES_COLOR" else pcf.gradient_color
            target[int(m.group(1))] = rgb
        elif section == "GRADIENT_NAMES":
            m = _RE_PCF_STATE.fullmatch(raw)
            if not m:
                P.add(f"{where}: GRADIENT_NAMES line does not parse as '<id> <name>': {raw!r}")
                continue
            pcf.gradient_names[int(m.group(1))] = _check_label(P, where, m.group(2))
        elif section == "EVENT_TYPE":
            m = _RE_PCF_TYPE.fullmatch(raw)
            if not m:
                P.add(
                    f"{where}: EVENT_TYPE line does not parse as "
                    f"'<gradient> <type id> <label>' (label split over lines?): {raw!r}"
                )
                continue
            grad, tid = int(m.group(1)), int(m.group(2))
            label = _check_label(P, where, m.group(3))
            if tid > INT32_MAX:
                P.add(f"{where}: event type id {tid} exceeds 2^31-1 (Paraver ignores it)")
            if tid in pcf.types:
                P.add(f"{where}: event type {tid} defined twice (first at {fname} line {type_first_line[tid]})")
            else:
                type_first_line[tid] = i
            pcf.types[tid] = {"label": label, "gradient": grad, "values": None}
            block_types.append(tid)
        elif section == "VALUES":
            m = _RE_PCF_VALUE.fullmatch(raw)
            if not m:
                P.add(f"{where}: VALUES line does not parse as '<value> <label>' (label split over lines?): {raw!r}")
                continue
            val = int(m.group(1))
            label = _check_label(P, where, m.group(2))
            if val > INT32_MAX:
                P.add(f"{where}: value {val} exceeds 2^31-1 (Paraver ignores it)")
            if val in block_values:
                P.add(f"{where}: value {val} labelled twice in the same VALUES list")
            block_values[val] = label
    if section in ("EVENT_TYPE", "VALUES"):
        close_block(len(lines))
    return pcf


# --------------------------------------------------------------------------- .row
_RE_ROW_LEVEL = re.compile(r"LEVEL[ \t]+(\S+)[ \t]+SIZE[ \t]+(\d+)[ \t]*")


def _parse_row(text: str, P: _Problems, fname: str = "row") -> dict:
    row: dict = {}
    if "\r" in text:
        P.add(f"{fname}: contains carriage returns ('\\r', CRLF line endings?)")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    prev_level = None
    while i < len(lines):
        line = lines[i]
        if line.strip() == "" or line.startswith("#"):  # (a comment outside a block: Paraver's RowFileParser skips it)
            prev_level = None
            i += 1
            continue
        m = _RE_ROW_LEVEL.fullmatch(line)
        if not m:
            if prev_level is not None:
                P.add(
                    f"{fname} line {i + 1}: LEVEL {prev_level} has more names than its "
                    f"SIZE {len(row[prev_level])}: {line!r}"
                )
            else:
                P.add(f"{fname} line {i + 1}: expected 'LEVEL <name> SIZE <n>': {line!r}")
            i += 1
            continue
        level, size = m.group(1), int(m.group(2))
        if level not in ROW_LEVELS:
            P.add(f"{fname} line {i + 1}: unknown level {level!r} (expected one of {', '.join(ROW_LEVELS)})")
        if level in row:
            P.add(f"{fname} line {i + 1}: LEVEL {level} defined twice")
        names = []
        j = i + 1
        while len(names) < size and j < len(lines) and not _RE_ROW_LEVEL.fullmatch(lines[j]):
            nm = lines[j]
            if nm.strip() == "":
                # a blank line followed only by blank lines up to the next LEVEL (or EOF)
                # ends the block: the block is short, not holding an empty name
                k = j
                while k < len(lines) and lines[k].strip() == "":
                    k += 1
                if k == len(lines) or _RE_ROW_LEVEL.fullmatch(lines[k]):
                    break
            if nm.strip() == "":
                P.add(f"{fname} line {j + 1}: empty name in LEVEL {level}")
            elif _CONTROL.search(nm):
                P.add(f"{fname} line {j + 1}: name contains control characters: {nm!r}")
            names.append(nm)
            j += 1
        if len(names) < size:
            P.add(f"{fname} line {i + 1}: LEVEL {level} SIZE {size} but only {len(names)} names follow")
        row[level] = names
        prev_level = level
        i = j
    return row


def _check_row_vs_header(P: _Problems, row: dict, h: Header, fname: str = "row") -> None:
    def check(level, expected, required, what):
        if level not in row:
            if required:
                P.add(f"{fname}: missing 'LEVEL {level} SIZE {expected}' block")
            return
        n = len(row[level])
        if n != expected:
            P.add(f"{fname}: LEVEL {level} has {n} names but the header declares {expected} {what}")

    check("NODE", h.n_nodes, h.n_nodes > 0, "nodes")
    check("THREAD", h.n_threads, True, "threads (sum of the header's thread counts)")
    check("CPU", h.total_cpus, False, "CPUs")
    check("TASK", h.n_tasks, False, "tasks")
    check("APPL", h.n_apps, False, "applications")


# --------------------------------------------------------------------------- entry points
def _resolve(base) -> str:
    base = os.fspath(base)
    for ext in (".prv.gz", ".prv"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def _read_text(path: str, P: _Problems) -> Optional[str]:
    if not os.path.exists(path):
        P.add(f"missing file {path}")
        return None
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        P.add(f"{os.path.basename(path)}: not valid UTF-8 ({e})")
        return raw.decode("utf-8", "replace")


def _analyse(base) -> Trace:
    base = _resolve(base)
    P = _Problems()
    prv = base + ".prv"
    if not os.path.exists(prv):
        prv = base + ".prv.gz"
    if not os.path.exists(prv):
        raise FileNotFoundError(f"no {base}.prv or {base}.prv.gz")
    if prv.endswith(".gz"):
        with gzip.open(prv, "rb") as f:
            data = f.read()
    else:
        with open(prv, "rb") as f:
            data = f.read()

    nl = data.find(b"\n")
    head_bytes = data if nl < 0 else data[:nl]
    header = _parse_header(head_bytes.decode("utf-8", "replace"), P)
    offset = len(data) if nl < 0 else nl + 1
    first_line_no = 2
    if header is not None and header.ncomm:
        found = 0
        while found < header.ncomm and data.startswith(b"c:", offset):
            e = data.find(b"\n", offset)
            offset = len(data) if e < 0 else e + 1
            found += 1
        if found < header.ncomm:
            P.add(f"prv header: declares {header.ncomm} communicator lines ('c:...') but {found} follow the header")
        first_line_no += found
    body = _Body(data[offset:], first_line_no)
    del data
    parsed = _parse_body(body, P)
    _check_records(P, body, header, parsed)

    pcf_text = _read_text(base + ".pcf", P)
    pcf = _parse_pcf(pcf_text, P) if pcf_text is not None else Pcf()
    _check_against_pcf(P, body, parsed, pcf)

    row_text = _read_text(base + ".row", P)
    row = _parse_row(row_text, P) if row_text is not None else {}
    if header is not None and row_text is not None:
        _check_row_vs_header(P, row, header)

    return Trace(
        base=base,
        prv_path=prv,
        header=header,
        states=parsed.states,
        events=parsed.events,
        comms=parsed.comms,
        pcf=pcf,
        row=row,
        rec_line=body.line_no(parsed.rec_body_line).astype(np.int64),
        problems=P.items,
    )


def load_trace(base) -> Trace:
    """Parse a trace.  Never raises on content problems (they are in ``.problems``);
    raises FileNotFoundError when neither base.prv nor base.prv.gz exists.

    DataFrames (all columns int64, ids 1-based as in the file, malformed lines left out):
      states: cpu, appl, task, thread, begin, end, state            (one row per record)
      events: cpu, appl, task, thread, time, type, value, rec       (one row per type:value
              pair, in file order; ``rec`` = 0-based index of the record among the parsed
              records of the file, states/events/comms together, comments excluded)
      comms:  cpu, appl, task, thread, log_send, phys_send, rcpu, rappl, rtask, rthread,
              log_recv, phys_recv, size, tag
    """
    return _analyse(base)


def format_problems(problems: list, base: str = "") -> str:
    n = len(problems)
    head = f"Paraver trace {base!s} has {n} problem(s):"
    listed = [f"  {i}. {p}" for i, p in enumerate(problems[:MAX_LISTED], 1)]
    if n > MAX_LISTED:
        listed.append(f"  ... and {n - MAX_LISTED} more")
    return "\n".join([head] + listed)


def validate_trace(base) -> Trace:
    """Strictly validate base.prv[.gz] + base.pcf + base.row; raise AssertionError listing
    all problems found (first MAX_LISTED).  Returns the loaded Trace when valid."""
    try:
        trace = _analyse(base)
    except FileNotFoundError as e:
        raise AssertionError(str(e)) from None
    if trace.problems:
        raise AssertionError(format_problems(trace.problems, trace.base))
    return trace

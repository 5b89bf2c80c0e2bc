r"""The Paraver resource model: node = host, task = profiled process (rank), threads =
the process's CPU threads that have events, then one thread per GPU stream -- and one more per
overlap lane of a stream whose activities overlap (a ``CUDA-D0.S7-<host>-overlap1`` row right after
the first, as Nsight Systems draws them), then one row per GPU the process is the first to use
(``Metrics GPU3``: the GPU's sampled metrics, if any).  When processes and GPUs are not one to one
(a GPU shared by ranks, a rank using several GPUs), every GPU of a host has such a row, in the first
task using it: it carries the GPU's activity over all its streams and processes (GPU_ACTIVITY), the
per-GPU timeline no Paraver level can aggregate (a node aggregates every CPU of the host).

Labels follow the forms BSC BasicAnalysis's nsys2prv path reads: streams ``CUDA-D<gpu>.S<stream>-<host>``
(its pattern ``^(?:CUDA|HIP)-(D\d+)\.S(\d+)(?:-(\S+))?\s*$`` reads the suffix as the node), where
``<gpu>`` is the GPU's number in the run (``run_gpu_numbers``: GPU ids are per host), that of the
``Metrics GPU<gpu>`` rows (``^Metrics GPU\d+\s*$``, so they carry nothing else); CPU threads
``Rank 0 main (1234)``.  Every label is unique: on a shared GPU a stream's adds its rank (``-rank3``), an
overlap lane its number (``-overlap1``), which BasicAnalysis reads as part of the node (docs/paraver-views.md).

Every thread also gets its own CPU on its node, so CPU-level views show one row per
thread; node i declares as many CPUs as its tasks have threads.

One model serves the trace and POP: it is built once over the keys of the translated kinds (the
trace's) and of the POP kinds (whatever -t), with one decision of every process's identity (rank,
order, node).  The trace's tasks and threads (``Model.tasks``, ``Model.threads``: its rows) are the
processes and threads the translated kinds have; a process or thread only the POP kinds have (with
``-t nvtx``, a thread that only calls MPI) is the model's too (``Model.processes``,
``Task.pop_only``) but no row.  POP asks the model's view ``Model.pop`` (``Processes``): its
processes and ``task_of(report, pids)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv.core.errors import UserError
from nsys2prv.nsys.devices import gpu_of
from nsys2prv.nsys.identity import INTERNAL_THREAD, NVTX_RANK_SOURCE, RANK_THREAD_NAME, Identity
from nsys2prv.nsys.ids import pid_of, tid_of


@dataclass(slots=True)  # (one per thread and process of the run, held to the end: no __dict__ each)
class Thread:
    task: int  # 0-based task index
    kind: str  # "cpu" | "gpu" | "metric"
    key: tuple  # ("cpu", tid), ("gpu", device, stream, lane) or ("metric", gpu)
    name: str
    cpu: int = 0  # 1-based global CPU
    local: int = 0  # 1-based thread number inside its task


@dataclass(slots=True)
class Task:
    report: int
    pid: int
    rank: int | None
    rank_source: str
    host: str
    node: int = 0  # 0-based node index
    life: tuple[int, int] | None = None  # the process's lifetime on the trace's timeline (set in stage B)
    gpus: tuple[int, ...] = ()  # the GPUs (ids via the report's device map) of its streams' rows
    threads: list[int] = field(default_factory=list)  # its rows: global threads (none: a process only POP has)
    pop: bool = True  # a POP process: it has rows of the POP kinds (``build_model`` says which)
    pop_gpu: bool = False  # ... GPU activity among them (a stream: POP's host tree counts such processes)
    pop_only: tuple[tuple, ...] = ()  # its threads only the POP kinds have, not rows: ("cpu", tid), ("gpu", d, s, 0)

    @property
    def label(self) -> str:
        return f"Rank {self.rank}" if self.rank is not None else f"Process {self.pid}"


class KeyTable:
    """Rows of int64 key tuples -> int64 values, looked up a column of each key at a time: the
    keys are mixed into one int64 code within the table's own ranges (a sorted search), or, when
    those ranges are too wide for one int64, through a pandas MultiIndex."""

    def __init__(self, keys: list[tuple[int, ...]], values):
        self.values = np.asarray(values, np.int64)
        if not keys:
            self.mixed, self.index = False, None
            return
        k = np.array(keys, np.int64)
        self.lo, self.span = k.min(axis=0), k.max(axis=0) - k.min(axis=0) + 1
        self.mixed = float(np.prod(self.span.astype(float))) < 2.0**62
        if self.mixed:
            codes = self._code(k.T)
            self.order = np.argsort(codes, kind="stable")
            self.codes = codes[self.order]
        else:
            self.index = pd.MultiIndex.from_arrays(list(k.T))

    def _code(self, cols) -> np.ndarray:
        code = np.zeros(len(cols[0]), np.int64)
        for c, lo, span in zip(cols, self.lo, self.span):
            code = code * span + (c - lo)
        return code

    def lookup(self, *cols: np.ndarray) -> np.ndarray:
        """The value of each row's key tuple (-1: not in the table)."""
        n = len(cols[0])
        if not self.mixed:
            if self.index is None:
                return np.full(n, -1, np.int64)
            pos = self.index.get_indexer(pd.MultiIndex.from_arrays(list(cols)))
            return np.where(pos >= 0, self.values[pos], -1)
        inside = np.ones(n, bool)
        for c, lo, span in zip(cols, self.lo, self.span):
            inside &= (c >= lo) & (c < lo + span)
        code = self._code([np.where(inside, c, lo) for c, lo in zip(cols, self.lo)])
        pos = np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)
        hit = inside & (self.codes[pos] == code)
        return np.where(hit, self.values[self.order[pos]], -1)


class ProcessTable:
    """(report, pid) -> the index of that process in ``tasks`` (-1: none): the model's one table of
    its processes, one sorted int64 code per process (report << 32 | pid)."""

    def __init__(self, tasks: list[Task]):
        self.n = len(tasks)
        codes = np.array([(t.report << 32) | t.pid for t in tasks], np.int64)
        self.order = np.argsort(codes, kind="stable")
        self.codes = codes[self.order]

    def __call__(self, report: int, pids) -> np.ndarray:
        pids = np.asarray(pids, np.int64)
        if not self.n:
            return np.full(len(pids), -1, np.int64)
        valid = (pids >= 0) & (pids < (1 << 32))
        code = (np.int64(report) << 32) | np.where(valid, pids, 0)
        pos = np.minimum(np.searchsorted(self.codes, code), self.n - 1)
        return np.where(valid & (self.codes[pos] == code), self.order[pos], -1)


@dataclass
class Processes:
    """POP's view of the model: the processes with rows of the POP kinds (``Task.pop``), in the
    model's order, and the nodes ``Task.node`` indexes (the trace's, then the hosts only processes
    without rows are on).  ``task_of`` asks the model's one table of processes."""

    tasks: list[Task]
    nodes: list[str]
    table: ProcessTable  # the model's (over ``Model.processes``)
    index: np.ndarray  # per process of the model, then one more (-1): its index in ``tasks`` (-1: none)

    def task_of(self, report: int, pids) -> np.ndarray:
        """The POP task (index in ``tasks``) of each of ``pids``, processes of report ``report`` (-1: none)."""
        return self.index[self.table(report, pids)]


@dataclass
class Model:
    nodes: list[str]
    tasks: list[Task]  # the trace's tasks (rows)
    threads: list[Thread]  # the trace's threads (rows)
    hidden_threads: dict[tuple[int, int], str]  # (report, tid) -> name of hidden internal threads
    # (host, GPU id) -> global thread of the GPU's row that carries its activity (GPU_ACTIVITY):
    # only when processes and GPUs are not one to one (``gpu_rows`` of build_model)
    device_rows: dict[tuple[str, int], int] = field(default_factory=dict)
    # (host, GPU id) -> the GPU's number in the run, in its stream and metric row labels (run_gpu_numbers)
    gpu_numbers: dict[tuple[str, int], int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the model decided that the summary should say
    # every process, in the one order (rank, then report and pid): the trace's tasks and those only
    # POP has (none given: the tasks)
    processes: list[Task] = field(default_factory=list)
    # (report, key) -> global thread, over every report (``index_threads``): CPU thread ids, GPU streams'
    # (pid, device, stream, lane), metric rows' GPU ids
    _cpu_index: KeyTable = field(default_factory=lambda: KeyTable([], []))
    _gpu_index: KeyTable = field(default_factory=lambda: KeyTable([], []))
    _metric_index: KeyTable = field(default_factory=lambda: KeyTable([], []))

    def __post_init__(self) -> None:
        if not self.processes:
            self.processes = list(self.tasks)

    # per global thread (arrays built once, after the model is complete): 1-based task, 1-based
    # thread within its task, 1-based cpu, whether it is a CPU thread
    def _per_thread(self, name: str, value, dtype) -> np.ndarray:
        got = self.__dict__.get(name)
        if got is None or len(got) != len(self.threads):
            got = self.__dict__[name] = np.array([value(t) for t in self.threads], dtype=dtype)
        return got

    @property
    def task_of(self) -> np.ndarray:
        return self._per_thread("_task_of", lambda t: t.task + 1, np.int64)

    @property
    def thread_in_task(self) -> np.ndarray:
        return self._per_thread("_thread_in_task", lambda t: t.local, np.int64)

    @property
    def cpu_of(self) -> np.ndarray:
        return self._per_thread("_cpu_of", lambda t: t.cpu, np.int64)

    @property
    def is_cpu(self) -> np.ndarray:
        return self._per_thread("_is_cpu", lambda t: t.kind == "cpu", bool)

    def report_tasks(self, report: int) -> list[int]:
        """Indexes of the tasks of one report (per-report steps look there, not through every task:
        that would cost ranks x ranks); the index is built once."""
        n, got = self.__dict__.get("_report_tasks", (-1, None))
        if n != len(self.tasks):
            got = {}
            for i, t in enumerate(self.tasks):
                got.setdefault(t.report, []).append(i)
            self.__dict__["_report_tasks"] = (len(self.tasks), got)
        return got.get(report, [])

    def _table(self) -> ProcessTable:
        """The one table of the processes ((report, pid) -> index in ``processes``), built once."""
        got = self.__dict__.get("_processes_table")
        if got is None or got.n != len(self.processes):
            got = self.__dict__["_processes_table"] = ProcessTable(self.processes)
        return got

    def processes_of(self, report: int, pids) -> np.ndarray:
        """The index in ``processes`` of each of ``pids``, processes of report ``report`` (-1: none)."""
        return self._table()(report, pids)

    def _index_in(self, tasks: list[Task]) -> np.ndarray:
        """Per process, then one more (-1): its index in ``tasks`` (-1: not there)."""
        where = {id(t): i for i, t in enumerate(tasks)}
        return np.array([where.get(id(t), -1) for t in self.processes] + [-1], np.int64)

    def tasks_of(self, report: int, pids) -> np.ndarray:
        """The task (row) index of each of ``pids``, processes of report ``report`` (-1: not a task of
        the trace)."""
        got = self.__dict__.get("_rows")
        if got is None or len(got) != len(self.processes) + 1:
            got = self.__dict__["_rows"] = self._index_in(self.tasks)
        return got[self._table()(report, pids)]

    @property
    def pop(self) -> Processes:
        """POP's view: the processes with rows of the POP kinds (``Processes``), built once."""
        got = self.__dict__.get("_pop")
        if got is None or len(got.index) != len(self.processes) + 1:
            tasks = [t for t in self.processes if t.pop]
            extra = {t.node: t.host for t in self.processes if t.node >= len(self.nodes)}
            nodes = list(self.nodes) + [extra[n] for n in sorted(extra)]
            got = self.__dict__["_pop"] = Processes(tasks, nodes, self._table(), self._index_in(tasks))
        return got

    def report_threads(self, report: int) -> np.ndarray:
        """The global threads of one report's tasks, sorted (what a report's chunk paints)."""
        return np.array(sorted(g for i in self.report_tasks(report) for g in self.tasks[i].threads), np.int64)

    def cpus_per_node(self) -> list[int]:
        counts = [0] * len(self.nodes)
        for task in self.tasks:
            counts[task.node] += len(task.threads)
        return counts

    def cpu_threads(self, report: int, gtid) -> np.ndarray:
        """Global thread index of each globalTid of a report (-1: hidden or unknown)."""
        return _lookup(self._cpu_index, report, tid_of(np.asarray(gtid, dtype=np.int64)))

    def gpu_threads(self, report: int, gpid, device, stream, lane=None) -> np.ndarray:
        """Global thread index of each GPU activity's stream row (``lane``: its overlap lane, default
        0; -1: not in the model)."""
        lane = np.zeros(len(gpid), np.int64) if lane is None else np.asarray(lane, np.int64)
        pid = pid_of(np.asarray(gpid, np.int64))
        return _lookup(self._gpu_index, report, pid, np.asarray(device, np.int64), np.asarray(stream, np.int64), lane)

    def metric_threads(self, report: int, gpu) -> np.ndarray:
        """Global thread index of the metric row of each GPU id of a report (-1: none)."""
        return _lookup(self._metric_index, report, np.asarray(gpu, np.int64))

    def index_threads(
        self, cpu: dict[int, tuple[list, list]], gpu: dict[int, tuple[list, list]], metric: dict[int, tuple[list, list]]
    ) -> None:
        """Per report, (keys, global threads) of its CPU threads (tid), GPU stream rows ((pid, device,
        stream, lane)) and metric rows (GPU id): the tables ``cpu_threads``, ``gpu_threads`` and
        ``metric_threads`` look in (``build_model`` calls this once, when every thread is known): one
        table each over every report (per report, a table's Python objects were ~6 KB a report)."""
        self._cpu_index, self._gpu_index, self._metric_index = (_run_table(x) for x in (cpu, gpu, metric))


def _run_table(per_report: dict[int, tuple[list, list]]) -> KeyTable:
    """(report, *key) -> global thread over every report's (keys, global threads)."""
    keys = [(r, *(k if isinstance(k, tuple) else (k,))) for r, (ks, _) in per_report.items() for k in ks]
    return KeyTable(keys, [g for _, gids in per_report.values() for g in gids])


def _lookup(table: KeyTable, report: int, *cols: np.ndarray) -> np.ndarray:
    """``table``'s value of each row's key (``cols``) in report ``report`` (-1: none)."""
    return table.lookup(np.full(len(cols[0]), report, np.int64), *cols)


def _metric_owners(mine: list[int], task_gpus: list[set[int]], gpus) -> dict[int, int]:
    """GPU -> task index: the first task (trace order) of the report (its tasks: ``mine``) whose
    streams ran on it, else the report's first task."""
    owners = {}
    for g in sorted(int(x) for x in gpus):
        users = [i for i in mine if g in task_gpus[i]]
        if users or mine:
            owners[g] = (users or mine)[0]
    return owners


def gpu_users(tasks: list[Task]) -> dict[tuple[str, int], list[int]]:
    """(host, GPU id) -> the tasks whose streams ran on it, in trace order."""
    users: dict[tuple[str, int], list[int]] = {}
    for ti, task in enumerate(tasks):
        for g in task.gpus:
            users.setdefault((task.host, g), []).append(ti)
    return users


def _activity_owners(tasks: list[Task], owners: dict[int, dict[int, int]]) -> dict:
    """(host, GPU id) -> task index of the row carrying the GPU's activity, when processes and GPUs
    are not one to one (a GPU used by several processes, or a process using several GPUs; else {}):
    a task of the host that already has a metric row for that GPU, else the first task using it."""
    users = gpu_users(tasks)
    if all(len(u) == 1 for u in users.values()) and all(len(t.gpus) <= 1 for t in tasks):
        return {}
    out = {}
    for (host, d), tis in users.items():
        with_metric = [ti for ti, gpus in sorted(owners.items()) if tasks[ti].host == host and d in gpus]
        out[(host, d)] = (with_metric or tis)[0]
    return out


def _keys_of(tabs: dict[str, pd.DataFrame], r: int, ident: Identity, hidden: dict) -> tuple[dict, dict]:
    """One report's processes in one set of model keys: pid -> its CPU threads (tids; Nsight Systems'
    internal threads go to ``hidden``), pid -> its GPU streams' (device, stream, lane)."""
    cpu: dict[int, set[int]] = {}
    gpu: dict[int, set[tuple[int, int, int]]] = {}
    df = tabs.get("cpu")
    if df is not None and len(df):
        g = df["tid"].to_numpy(np.int64)
        for p, t in zip(pid_of(g), tid_of(g)):
            name = ident.thread_names.get(int(t), "")
            if INTERNAL_THREAD.match(name):
                hidden[(r, int(t))] = name
                continue
            cpu.setdefault(int(p), set()).add(int(t))
    u = tabs.get("gpu")
    if u is not None and len(u):
        lanes = u["lane"] if "lane" in u else np.zeros(len(u), np.int64)
        for p, d, s, ln in zip(pid_of(u["gpid"].to_numpy(np.int64)), u["device"], u["stream"], lanes):
            gpu.setdefault(int(p), set()).add((int(d), int(s), int(ln)))
    return cpu, gpu


def build_model(
    keys: Sequence[dict[str, pd.DataFrame]],
    identities: list[Identity],
    force: bool = False,
    sources: list[str] | None = None,
    devmaps: Sequence[pd.DataFrame] | None = None,
    gpu_rows: bool = False,
    pop_keys: Sequence[dict[str, pd.DataFrame]] | None = None,
) -> Model:
    """Tasks, threads and nodes from every report's model keys: ``{"cpu": tid, "gpu": gpid/device/stream
    (/lane), "metric": gpu}`` frames of unique keys (``pipeline.scan.model_keys``).  ``gpu_rows``: give
    every GPU a row for its activity when processes and GPUs are not one to one (``_activity_owners``).
    ``pop_keys``: the same over the POP kinds, whatever -t (None: ``keys``).  One build: the model's
    processes are those of either, in one order, each with one identity (rank, node); the trace's
    tasks, threads and nodes (its rows and their numbering) are those of ``keys``, POP's processes
    (``Model.pop``) those of ``pop_keys``; a thread only ``pop_keys`` have is in ``Task.pop_only``."""
    sources = sources or [f"report {i}" for i in range(len(keys))]
    processes: list[Task] = []
    cpu_keys: list[dict[int, set[int]]] = []
    gpu_keys: list[dict[int, set[tuple[int, int, int]]]] = []
    hidden: dict[tuple[int, int], str] = {}
    for r, (tabs, ident) in enumerate(zip(keys, identities)):
        cpu, gpu = _keys_of(tabs, r, ident, hidden)
        pcpu, pgpu = (cpu, gpu) if pop_keys is None else _keys_of(pop_keys[r], r, ident, hidden)
        pids = sorted(set(cpu) | set(gpu) | set(pcpu) | set(pgpu))
        for pid in pids:
            rank = ident.ranks.get(pid)
            source = ident.rank_source.get(pid, "")
            if rank is None and ident.env_rank is not None and len(pids) == 1:
                rank, source = ident.env_rank, "captured environment"
            task = Task(r, pid, rank, source, ident.host, pop=pid in pcpu or pid in pgpu, pop_gpu=pid in pgpu)
            only_cpu = sorted(pcpu.get(pid, set()) - cpu.get(pid, set()))
            only_gpu = sorted(pgpu.get(pid, set()) - gpu.get(pid, set()))
            task.pop_only = tuple(("cpu", t) for t in only_cpu) + tuple(("gpu", *k) for k in only_gpu)
            processes.append(task)
        cpu_keys.append(cpu)
        gpu_keys.append(gpu)

    distrusted = _untrusted_nvtx_ranks(processes, sources, [i.env_rank for i in identities])
    _check_duplicate_ranks(processes, sources, force)
    # Processes in rank order; those without a rank after them, in report order.  The trace's tasks:
    # those with rows of the translated kinds, numbered in that order, and their nodes first.
    processes.sort(key=lambda t: (t.rank is None, t.rank if t.rank is not None else 0, t.report, t.pid))
    tasks = [t for t in processes if t.pid in cpu_keys[t.report] or t.pid in gpu_keys[t.report]]
    node_of: dict[str, int] = {}
    for task in tasks:
        task.node = node_of.setdefault(task.host, len(node_of))
    nodes = list(node_of)
    for task in processes:  # (a host only processes without rows are on: a node of POP's view)
        task.node = node_of.setdefault(task.host, len(node_of))

    threads: list[Thread] = []
    model = Model(nodes, tasks, threads, hidden, processes=processes)
    if distrusted:
        model.notes.append(distrusted)
    cpu_index: dict[int, tuple[list, list]] = {}
    gpu_index: dict[int, tuple[list, list]] = {}
    metric_index: dict[int, tuple[list, list]] = {}
    task_gpus = []
    task_gpu_of: list[dict[int, int]] = []  # per task: CUDA device ordinal -> GPU id
    for task in tasks:
        devs = np.array(sorted({d for d, _, _ in gpu_keys[task.report].get(task.pid, ())}), np.int64)
        dm = devmaps[task.report] if devmaps is not None else None
        ids = gpu_of(dm, np.full(len(devs), task.pid), devs) if dm is not None else devs
        task_gpu_of.append(dict(zip(devs.tolist(), np.asarray(ids).tolist())))
        task_gpus.append(set(task_gpu_of[-1].values()))
        task.gpus = tuple(sorted(task_gpus[-1]))
    owners: dict[int, dict[int, int]] = {}  # task -> {gpu: report}
    for r, tabs in enumerate(keys):
        df = tabs.get("metric")
        if df is not None and len(df):
            gpus = np.unique(df["gpu"].to_numpy(np.int64))
            for g, ti in _metric_owners(model.report_tasks(r), task_gpus, gpus).items():
                owners.setdefault(ti, {})[g] = r
    activity = _activity_owners(tasks, owners) if gpu_rows else {}
    for (_, d), ti in activity.items():
        owners.setdefault(ti, {}).setdefault(d, tasks[ti].report)
    model.gpu_numbers = run_gpu_numbers(tasks, nodes, owners)
    number = model.gpu_numbers
    whose = sharer_words(tasks)
    for ti, task in enumerate(tasks):
        ident = identities[task.report]
        tids = sorted(cpu_keys[task.report].get(task.pid, ()), key=lambda t: (t != task.pid, t))
        for t in tids:
            tname = ident.thread_names.get(t) or ("main" if t == task.pid else "thread")
            if RANK_THREAD_NAME.match(tname):  # nsys names the MPI main thread "MPI Rank N"
                tname = "main"
            task.threads.append(len(threads))
            cpu_index.setdefault(task.report, ([], []))
            cpu_index[task.report][0].append(t)
            cpu_index[task.report][1].append(len(threads))
            threads.append(Thread(ti, "cpu", ("cpu", t), f"{task.label} {tname} ({t})"))
        for d, s, ln in sorted(gpu_keys[task.report].get(task.pid, ())):
            task.threads.append(len(threads))
            gpu_index.setdefault(task.report, ([], []))
            gpu_index[task.report][0].append((task.pid, d, s, ln))
            gpu_index[task.report][1].append(len(threads))
            gpu_id = task_gpu_of[ti].get(d, d)
            label = stream_label(number[(task.host, gpu_id)], s, task.host, whose.get((ti, gpu_id), ""), ln)
            threads.append(Thread(ti, "gpu", ("gpu", d, s, ln), label))  # overlap lanes too
        for g in sorted(owners.get(ti, {})):
            task.threads.append(len(threads))
            metric_index.setdefault(task.report, ([], []))
            metric_index[task.report][0].append(g)
            metric_index[task.report][1].append(len(threads))
            threads.append(Thread(ti, "metric", ("metric", g), metric_label(number[(task.host, g)])))
            if activity.get((task.host, g)) == ti:
                model.device_rows[(task.host, g)] = len(threads) - 1
    # CPUs: numbered from 1 in node order, one per thread.
    next_cpu = 1
    for task in sorted(tasks, key=lambda t: t.node):  # (stable: trace order within a node)
        for local, gid in enumerate(task.threads, start=1):
            threads[gid].local = local
            threads[gid].cpu = next_cpu
            next_cpu += 1
    model.index_threads(cpu_index, gpu_index, metric_index)
    return model


def run_gpu_numbers(tasks: list[Task], nodes: list[str], owners: dict[int, dict[int, int]]) -> dict:
    """(host, GPU id) -> the GPU's number in the run: GPU ids are per host, so the GPUs of each host
    (its tasks' streams and metric rows, ``owners``: task -> {GPU id: report}) are numbered after those
    of the hosts before it (node order): its GPU id plus one more than the highest number given so far.
    The first host's GPUs (every GPU of a one-host run) keep their ids."""
    per_host: dict[str, set[int]] = {h: set() for h in nodes}
    for ti, task in enumerate(tasks):
        per_host[task.host] |= set(task.gpus) | set(owners.get(ti, ()))
    out, offset = {}, 0
    for host in nodes:
        ids = sorted(per_host[host])
        out.update({(host, g): offset + g for g in ids})
        if ids:
            offset += max(ids[-1], -1) + 1
    return out


def sharer_words(tasks: list[Task]) -> dict[tuple[int, int], str]:
    """(task, GPU id) -> what tells its streams from the other processes' on a GPU several use: ``rank3``
    (``pid4242`` when ranks are missing or repeat among them, ``task2`` when pids repeat too)."""
    users: dict[tuple[str, int], list[int]] = {}
    for ti, task in enumerate(tasks):
        for g in task.gpus:
            users.setdefault((task.host, g), []).append(ti)
    out: dict[tuple[int, int], str] = {}
    for (_, g), tis in ((k, v) for k, v in users.items() if len(v) > 1):
        for word in ("rank", "pid", "task"):
            ids = [getattr(tasks[ti], word) if word != "task" else ti + 1 for ti in tis]
            if None not in ids and len(set(ids)) == len(ids):
                break
        out.update({(ti, g): f"{word}{i}" for ti, i in zip(tis, ids, strict=True)})
    return out


def stream_label(gpu: int, stream: int, host: str, whose: str = "", lane: int = 0) -> str:
    """``CUDA-D<gpu>.S<stream>-<host>`` (the GPU's number, as its ``Metrics GPU<gpu>`` row), then ``-<whose>``
    (``sharer_words``) and ``-overlap<lane>``: unique, one word (BasicAnalysis's pattern reads a stream)."""
    word = re.sub(r"\s+", "_", host.strip())
    parts = [w for w in (word, whose, f"overlap{lane}" if lane else "") if w]
    return f"CUDA-D{gpu}.S{stream}" + "".join(f"-{w}" for w in parts)


def metric_label(gpu: int) -> str:
    """``Metrics GPU<gpu>``: the row of a GPU's metrics and activity (BasicAnalysis: ``^Metrics GPU<n>$``)."""
    return f"Metrics GPU{gpu}"


# A row's kind from its .row label (the forms above; every other row is a CPU thread).
ROW_KINDS = {
    "stream": re.compile(r"^(?:CUDA|HIP)-D\d+\.S\d+(?:-\S+)?\s*$"),
    "metric": re.compile(r"^Metrics GPU\d+\s*$"),
}


def row_kind(label: str) -> str:
    """ "stream", "metric" or "cpu": the kind of a thread row, by its label."""
    return next((kind for kind, pattern in ROW_KINDS.items() if pattern.match(label)), "cpu")


def _file_ranks(tasks: list[Task], sources: list[str]) -> dict[int, int] | None:
    """report -> the rank its file name gives (the last number in it: rank3.sqlite, run_7.nsys-rep), when
    every report has one process and the numbers are distinct; else None."""
    per_report: dict[int, int] = {}
    for task in tasks:
        if task.report in per_report:
            return None  # several processes in one report: a file name cannot tell them apart
        digits = re.findall(r"\d+", Path(sources[task.report]).name.split(".")[0])
        if not digits:
            return None
        per_report[task.report] = int(digits[-1])
    if len(set(per_report.values())) != len(per_report):
        return None
    return per_report


def _untrusted_nvtx_ranks(tasks: list[Task], sources: list[str], env_ranks: list[int | None]) -> str | None:
    """When "MPI Rank N" thread names collide (nsys 2021.x names the main thread of every process
    "MPI Rank 0" in some runs) while nothing better says the ranks are the same, the NVTX ranks are
    distrusted: each such task takes its rank from the captured environment, else from its file name
    (the last number in it), else none (report order).  Returns the note, or None (nothing collided)."""
    claimed: dict[int, int] = {}
    for task in tasks:
        if task.rank is not None:
            claimed[task.rank] = claimed.get(task.rank, 0) + 1
    clash = [t for t in tasks if t.rank is not None and claimed[t.rank] > 1]
    if not clash or any(t.rank_source != NVTX_RANK_SOURCE for t in clash):
        return None
    nvtx = [t for t in tasks if t.rank_source == NVTX_RANK_SOURCE]
    files = _file_ranks(nvtx, sources)
    names = sorted({f"MPI Rank {t.rank}" for t in clash})
    for task in nvtx:
        env = env_ranks[task.report]
        if env is not None and sum(t.report == task.report for t in tasks) == 1:
            task.rank, task.rank_source = env, "captured environment (NVTX thread names collide)"
        elif files is not None:
            name = Path(sources[task.report]).name
            task.rank, task.rank_source = files[task.report], f"file name {name} (NVTX thread names collide)"
        else:
            task.rank, task.rank_source = None, "report order (NVTX thread names collide)"
    return (
        f"NVTX thread names {', '.join(repr(n) for n in names)} are claimed by several processes "
        f"({len(clash)} of {len(tasks)}): those ranks were not trusted; ranks from the captured environment, "
        "else the file names, else the report order"
    )


def _check_duplicate_ranks(tasks: list[Task], sources: list[str], force: bool) -> None:
    seen: dict[int, Task] = {}
    for task in tasks:
        if task.rank is None:
            continue
        other = seen.get(task.rank)
        if other is not None and not force:
            raise UserError(
                f"rank {task.rank} is claimed by both {sources[other.report]} (pid {other.pid}) "
                f"and {sources[task.report]} (pid {task.pid}); use --force to merge anyway"
            )
        seen.setdefault(task.rank, task)
    if force:
        ranks = [t.rank for t in tasks]
        if len(set(r for r in ranks if r is not None)) != len([r for r in ranks if r is not None]):
            for task in tasks:  # duplicates allowed with --force: fall back to report order
                task.rank = None

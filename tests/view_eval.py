"""A small evaluator of the Paraver semantics our POP views use, so CI can run the shipped views on a
trace without Paraver (where paramedir is installed, tests compare the two).

What it evaluates, as Paraver's kernel does (paraver-kernel: semantic functions, 2D analyzer):
- thread functions ``Last Evt Val`` (the value of the thread's last event of the window's types at or
  before t, 0 before the first; several at one time: the last record wins) and ``Useful`` (1 while the
  thread's state is Running, state 1);
- compose functions ``As Is``, ``Sign`` (1 where the value is not 0), ``1-Sign`` (1 where it is 0);
- task level ``Maximum`` / ``Adding`` over the task's threads; node level (cpu ``Active Thd``) the
  same over the threads of the node's tasks (every thread has a CPU of its own on its node);
- derived (composed) windows with ``substract`` and factors 1, 1;
- the 2D analyzer with the Semantic accumulator and the Time statistic: per row of the window's level,
  the time spent at each value over [0, END], value 0 left out (paramedir shows a column 0 only beside
  other values than 1; the POP numbers are in column 1).

Anything else raises NotImplementedError: a view the evaluator cannot run is not silently skipped.
"""

from __future__ import annotations

import re

import numpy as np
from cfg_parser import Win, parse_cfg

UNIT_NS = {"Nanoseconds": 1, "Microseconds": 1_000, "Milliseconds": 1_000_000, "Seconds": 1_000_000_000}

Signal = tuple[np.ndarray, np.ndarray]  # (times, values): value v[i] on [t[i], t[i+1]), t[0] = 0


def _compose(name: str, v: np.ndarray) -> np.ndarray:
    if name == "As Is":
        return v
    if name == "Sign":
        return (v != 0).astype(np.float64)
    if name == "1-Sign":
        return (v == 0).astype(np.float64)
    raise NotImplementedError(f"compose function {name!r}")


def _steps(t: np.ndarray, v: np.ndarray) -> Signal:
    """A signal from change points sorted by time (the last at one time wins), 0 from time 0."""
    t, v = np.asarray(t, np.int64), np.asarray(v, np.float64)
    if len(t):
        last = np.ones(len(t), bool)
        last[:-1] = t[1:] != t[:-1]
        t, v = t[last], v[last]
    if not len(t) or t[0] != 0:
        t, v = np.concatenate([[0], t]), np.concatenate([[0.0], v])
    return t, v


def _at(sig: Signal, times: np.ndarray) -> np.ndarray:
    t, v = sig
    return v[np.searchsorted(t, times, side="right") - 1]


class Evaluator:
    def __init__(self, trace):
        self.trace = trace
        self.end = int(trace.header.end_time)
        self.threads = [
            (task, th) for task, (n, _) in enumerate(trace.header.apps[0], start=1) for th in range(1, n + 1)
        ]
        ev = trace.events.sort_values("rec", kind="stable")
        self.events = {k: g for k, g in ev.groupby(["task", "thread"], sort=False)}
        st = trace.states.sort_values(["task", "thread", "begin"], kind="stable")
        self.states = {k: g for k, g in st.groupby(["task", "thread"], sort=False)}

    # -- one thread -------------------------------------------------------------------------------
    def _thread(self, win: Win, key) -> Signal:
        fn = win.functions["thread"]
        if fn == "Last Evt Val":
            f = win.functions
            if f.get("evt_value", "All") != "All" or f.get("evt_type") != "=":
                raise NotImplementedError(f"event filter {f.get('evt_type')}/{f.get('evt_value')}")
            ev = self.events.get(key)
            if ev is None:
                return _steps([], [])
            # as Paraver: a filter keeps only the types the .pcf declares, and a filter left empty lets
            # every event through (paramedir, measured: a trace whose .pcf lacks the CUDA API type)
            declared = [t for t in win.types if t in self.trace.pcf.types]
            if declared:
                ev = ev[ev["type"].isin(declared)]
            return _steps(ev["time"].to_numpy(), ev["value"].to_numpy(np.float64))
        if fn == "Useful":
            st = self.states.get(key)
            if st is None:
                return _steps([], [])
            t = np.concatenate([st["begin"].to_numpy(), st["end"].to_numpy()])
            v = np.concatenate([(st["state"].to_numpy() == 1).astype(np.float64), np.zeros(len(st))])
            order = np.lexsort((np.r_[np.ones(len(st)), np.zeros(len(st))], t))  # an end before a begin at one time
            return _steps(t[order], v[order])
        raise NotImplementedError(f"thread function {fn!r}")

    # -- one window, every object of its level ------------------------------------------------------
    def signals(self, cfg, number: int) -> list[Signal]:
        win = cfg.windows[number - 1]
        if win.kind == "composed":
            if win.operation != "substract":
                raise NotImplementedError(f"derived window operation {win.operation!r}")
            a, b = (self.signals(cfg, p) for p in win.parents)
            out = []
            for sa, sb in zip(a, b):
                t = np.union1d(sa[0], sb[0])
                v = _compose(win.compose["topcompose1"], _at(sa, t) - _at(sb, t))
                out.append((t, v))
            return out
        per_thread = [(key, self._thread(win, key)) for key in self.threads]
        per_thread = [(key, (t, _compose(win.compose["compose_thread"], v))) for key, (t, v) in per_thread]
        if win.level == "thread":
            return [(t, _compose(win.compose["topcompose1"], v)) for _, (t, v) in per_thread]
        if win.level not in ("task", "node"):
            raise NotImplementedError(f"level {win.level!r}")
        if win.level == "node" and win.functions.get("cpu") != "Active Thd":
            raise NotImplementedError(f"cpu function {win.functions.get('cpu')!r}")
        # a task's threads; a node's: every thread of its tasks (each thread has a CPU of its own there)
        node_of = [node for _, node in self.trace.header.apps[0]]
        groups = range(1, len(node_of) + 1) if win.level == "task" else range(1, len(self.trace.header.nodes) + 1)
        member = (lambda tk, g: tk == g) if win.level == "task" else (lambda tk, g: node_of[tk - 1] == g)
        agg = win.functions[win.level]
        out = []
        for group in groups:
            sigs = [s for (tk, _), s in per_thread if member(tk, group)]
            t = np.unique(np.concatenate([s[0] for s in sigs]))
            vals = np.stack([_at(s, t) for s in sigs])
            if agg == "Maximum":
                v = vals.max(axis=0)
            elif agg == "Adding":
                v = vals.sum(axis=0)
            else:
                raise NotImplementedError(f"task function {agg!r}")
            v = _compose(win.compose["compose_" + win.level], v)
            out.append((t, _compose(win.compose["topcompose1"], v)))
        return out

    def histogram(self, cfg_text: str) -> list[dict[float, float]]:
        """The first analyzer's table: per object of its window's level, value -> time (in the control
        window's unit: ns as an int, else rounded to 2 decimals as paramedir prints it)."""
        if re.search(r"window_factors (?!1\.0+ 1\.0+\s*$)", cfg_text, re.M):
            raise NotImplementedError("derived window factors other than 1, 1")
        cfg = parse_cfg(cfg_text)
        an = cfg.analyzers[0]
        if an.control != an.data or an.statistic != "Time" or "Analyzer2D.Accumulator: Semantic" not in cfg_text:
            raise NotImplementedError(f"analyzer {an.name!r}: only semantic x time of one window")
        scale = UNIT_NS[cfg.windows[an.control - 1].units]  # paramedir prints the window's unit, 2 decimals
        rows = []
        for t, v in self.signals(cfg, an.control):
            inside = t < self.end
            t, v = t[inside], v[inside]
            dur = np.diff(np.append(t, self.end))
            row: dict[float, float] = {}
            for value in np.unique(v[v != 0]):
                total = int(dur[v == value].sum())
                row[float(value)] = total if scale == 1 else round(total / scale, 2)
            rows.append(row)
        return rows

"""Paraver records as columns of integers: the one place that knows each record type's fields.

1:cpu:appl:task:thread:begin:end:state
2:cpu:appl:task:thread:time:type:value[:type:value]...
3:cpu:appl:task:thread:logSend:physSend:rcpu:rappl:rtask:rthread:logRecv:physRecv:size:tag
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core.names import is_names
from nsys2prv.model.resources import Model
from nsys2prv.translate.records import CommBatch, EventBatch, StateIntervals


class Fields:
    def __init__(self, model: Model):
        self.cpu, self.task, self.thr = model.cpu_of, model.task_of, model.thread_in_task

    def obj(self, g: np.ndarray) -> list[np.ndarray]:
        """cpu, appl, task, thread of global threads ``g``."""
        return [self.cpu[g], np.ones(len(g), np.int64), self.task[g], self.thr[g]]

    def states(self, s: StateIntervals) -> list[np.ndarray]:
        return [np.full(len(s.thread), 1, np.int64), *self.obj(s.thread), s.start, s.end, s.state]

    def events(self, b: EventBatch, encode) -> tuple[list[np.ndarray], list[bool]]:
        """The columns, and for each column whether it holds encoded names (dynamic values)."""
        n = len(b)
        cols = [np.full(n, 2, np.int64), *self.obj(b.thread), b.time]
        dynamic = [False] * len(cols)
        for t, v in b.pairs:
            cols += [np.broadcast_to(np.asarray(t, np.int64), (n,)), encode(t, v)]
            dynamic += [False, is_names(v)]
        return cols, dynamic

    def comms(self, c: CommBatch) -> list[np.ndarray]:
        return [
            np.full(len(c), 3, np.int64),
            *self.obj(c.send_thread),
            c.log_send,
            c.phys_send,
            *self.obj(c.recv_thread),
            c.log_recv,
            c.phys_recv,
            c.size,
            c.tag,
        ]

"""Read intervals back out of a translated trace (begin value != 0 ... next 0 of that type)."""

from __future__ import annotations

import pandas as pd


def intervals(trace, type_ids) -> pd.DataFrame:
    """Columns task, thread, type, value, label, start, end: one row per begin event, paired
    with the end (value 0) that closes it on the same thread and type (stack order, so
    nested ranges pair correctly)."""
    ids = [type_ids] if isinstance(type_ids, int) else list(type_ids)
    ev = trace.events[trace.events["type"].isin(ids)].sort_values("rec", kind="stable")
    rows, stacks = [], {}
    for task, thread, t, time, value in ev[["task", "thread", "type", "time", "value"]].itertuples(index=False):
        key = (task, thread, t)
        if value != 0:
            stacks.setdefault(key, []).append((time, value))
        else:
            start, v = stacks[key].pop()
            rows.append((task, thread, t, v, start, time))
    open_ = sum(len(s) for s in stacks.values())
    assert open_ == 0, f"{open_} begin events without an end"
    df = pd.DataFrame(rows, columns=["task", "thread", "type", "value", "start", "end"])
    df["label"] = [trace.pcf.types[t]["values"][v] for t, v in zip(df["type"], df["value"])]
    return df


def begins(trace, type_id: int) -> pd.Series:
    """Number of begin events (value != 0) per value label of one type."""
    ev = trace.events[(trace.events["type"] == type_id) & (trace.events["value"] != 0)]
    labels = trace.pcf.types[type_id]["values"]
    return ev["value"].map(labels).value_counts().sort_index()

"""GPU metric samples (``--gpu-metrics-devices``), both export forms (docs/nsys-schema.md).

- newer: ``GPU_METRICS(timestamp, typeId, metricId, value)`` joined to
  ``TARGET_INFO_GPU_METRICS`` on **(typeId, metricId)** (metric ids are per type);
- older: ``GENERIC_EVENTS(timestamp, typeId, data JSON)``, one JSON object of
  ``{"metric name": value}`` per sample, restricted to the types that
  ``GENERIC_EVENT_TYPES``/``GENERIC_EVENT_SOURCES`` describe as GPU metrics when they say so.

GPU = ``typeId & 0xFF``.  Normalised columns: start (= end, the sample time), end, gpu,
metric (name), value (int64).  Rows with a negative timestamp are dropped, negative
values are clamped to 0 (both counted).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import Reader, ReadResult, int64

NEW, NEW_INFO = "GPU_METRICS", "TARGET_INFO_GPU_METRICS"
OLD, OLD_TYPES, OLD_SOURCES = "GENERIC_EVENTS", "GENERIC_EVENT_TYPES", "GENERIC_EVENT_SOURCES"
COLUMNS = ["start", "end", "gpu", "metric", "value"]


def _new_form(report: Report) -> pd.DataFrame:
    info = NEW_INFO if report.has(NEW_INFO, "typeId", "metricId", "metricName") else None
    name = "i.metricName" if info else "NULL"
    join = f"LEFT JOIN {NEW_INFO} i ON i.typeId = g.typeId AND i.metricId = g.metricId" if info else ""
    df = report.query(
        f"SELECT g.timestamp AS time, g.typeId AS type, g.metricId AS mid, {name} AS metric, "
        f"g.value AS value FROM {NEW} g {join}"
    )
    miss = df["metric"].isna()
    if miss.any():
        df.loc[miss, "metric"] = [f"metric {int(m)}" for m in df.loc[miss, "mid"]]
    return df[["time", "type", "metric", "value"]]


def _gpu_metric_types(report: Report) -> set[int] | None:
    """typeIds GENERIC_EVENT_TYPES/SOURCES name as GPU metrics; None: no way to tell (keep all)."""
    if not report.has(OLD_TYPES, "typeId", "data"):
        return None
    types = report.query(f"SELECT typeId, {report.col_or_null(OLD_TYPES, 'sourceId')}, data FROM {OLD_TYPES}")
    src = {}
    if report.has(OLD_SOURCES, "sourceId", "data"):
        s = report.query(f"SELECT sourceId, data FROM {OLD_SOURCES}")
        src = dict(zip(int64(s["sourceId"]), s["data"].astype(str)))
    keep = {
        int(t)
        for t, sid, d in zip(int64(types["typeId"]), int64(types["sourceId"], -1), types["data"].astype(str))
        if "gpu metric" in (d + " " + src.get(int(sid), "")).lower()
    }
    return keep or None


def _old_form(report: Report) -> tuple[pd.DataFrame, int]:
    df = report.query(f"SELECT timestamp AS time, typeId AS type, data FROM {OLD}")
    wanted = _gpu_metric_types(report)
    other = 0
    if wanted is not None:
        sel = np.isin(int64(df["type"]), list(wanted))
        other = int((~sel).sum())
        df = df[sel]
    # Parse each distinct JSON text once, then explode to one row per (sample, metric).
    codes, uniq = pd.factorize(df["data"].astype(str))
    parsed = []
    for text in uniq:
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        parsed.append(
            {k: v for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if isinstance(obj, dict)
            else {}
        )
    lens = np.array([len(p) for p in parsed], np.int64)
    names = np.array([k for p in parsed for k in p], dtype=object)
    vals = np.array([v for p in parsed for v in p.values()], dtype=float)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    n_per = lens[codes]
    row = np.repeat(np.arange(len(df)), n_per)
    within = np.arange(int(n_per.sum())) - np.repeat(np.cumsum(n_per) - n_per, n_per)
    pos = offs[codes][row] + within
    out = pd.DataFrame(
        {
            "time": df["time"].to_numpy()[row],
            "type": df["type"].to_numpy()[row],
            "metric": names[pos] if len(pos) else np.array([], object),
            "value": vals[pos],
        }
    )
    return out, other + int((n_per == 0).sum())


def read(report: Report) -> ReadResult | None:
    if report.has(NEW, "timestamp", "typeId", "metricId", "value"):
        df, other = _new_form(report), 0
    elif report.has(OLD, "timestamp", "typeId", "data"):
        df, other = _old_form(report)
    else:
        return None
    res = ReadResult(table=df, source_rows=len(df) + other)
    res.drop("not a GPU metric sample (other generic event or unparsable JSON)", other)
    time = pd.to_numeric(df["time"], errors="coerce")
    bad = (time.isna() | (time < 0)).to_numpy()
    res.drop("negative or missing timestamp", int(bad.sum()))
    df = df[~bad]
    value = np.rint(pd.to_numeric(df["value"], errors="coerce").fillna(0).to_numpy(float)).astype(np.int64)
    res.note("negative value clamped to 0", int((value < 0).sum()))
    t = int64(df["time"])
    res.table = pd.DataFrame(
        {
            "start": t,
            "end": t,
            "gpu": int64(df["type"]) & 0xFF,
            "metric": df["metric"].astype(str).to_numpy(object),
            "value": np.maximum(value, 0),
        }
    )
    return res


READER = Reader((NEW, NEW_INFO, OLD, OLD_TYPES, OLD_SOURCES, "TARGET_INFO_CUDA_DEVICE"), read)

"""What stage A derives once per row of a report's GPU activities, stored beside the cached tables:
their overlap lanes (``stream_lanes``; given back to stage C by ``attach_lanes``, or derived again
where the cache cannot hold them: ``add_lanes``) and their launch calls (``translate.launches.match``;
``stored_launches``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.core.intervals import overlap_lanes, tuple_codes
from nsys2prv.nsys.cache import CacheDamage, entry_hash
from nsys2prv.pipeline.report import Source, table_cache
from nsys2prv.translate.launches import ACTIVITIES, Launches

GPU_STREAM = ("gpid", "device", "stream")  # a GPU stream: the model's key, before the overlap lane
LANE_COLUMNS = [*GPU_STREAM, "start", "end"]  # what an activity's overlap lane depends on


def stream_part(columns: list[np.ndarray], ids: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GPU activities as (stream code, start, end) for ``stream_lanes``, from their ``LANE_COLUMNS``
    (``ids``: the streams' codes)."""
    gpid, device, stream, start, end = columns
    return (
        tuple_codes([np.asarray(gpid, np.int64), np.asarray(device, np.int64), np.asarray(stream, np.int64)], ids),
        np.array(start, np.int64),
        np.array(end, np.int64),
    )


def stream_lanes(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The stream codes and overlap lanes (``core.intervals.overlap_lanes``) of GPU activities given as
    ``stream_part``s, every translated GPU-side kind of a report in declaration order (a table or a
    batch a part)."""
    stream, start, end = (np.concatenate(x) for x in zip(*parts))
    return stream, overlap_lanes(stream, start, end)


def lane_kinds(src: Source) -> tuple[str, ...]:
    """The kinds whose activities share the overlap lanes: the translated GPU-side kinds."""
    return tuple(k for k in K.side_kinds(K.GPU) if k in src.reading.kinds)


def lane_tag(src: Source) -> str:
    """The name of the report's overlap lanes in its table cache entry (they depend on ``lane_kinds``)."""
    return entry_hash(repr(lane_kinds(src)))


def attach_lanes(src: Source, tables: dict[str, pd.DataFrame]) -> list[str]:
    """Give the translated GPU activities of ``tables`` (whole, unclipped) the overlap lanes stage A
    stored in the table cache (column ``lane``, only on the tables of a report with an activity on an
    extra lane); where the cache has none (it cannot be written, its file was unusable), ``add_lanes``
    derives them.  Returns what to say about the cache (``TableCache.notes``)."""
    cache = table_cache(src)
    got = cache.lanes(lane_tag(src))
    if got is None:
        add_lanes(tables)
        return cache.notes
    for k, lane in got.items():
        if k in tables:
            if len(lane) != len(tables[k]):
                raise CacheDamage(f"{LANES_NOTE}: {len(lane)} lanes for {len(tables[k])} {k} rows")
            tables[k] = tables[k].assign(lane=lane.astype(np.int64))
    return []


LANES_NOTE = "the stored overlap lanes do not match the table"


def add_lanes(tables: dict[str, pd.DataFrame]) -> int:
    """Give the GPU activities (every GPU-side kind) of a stream that overlap an earlier activity of
    the same stream a lane > 0 (column ``lane``, only on the tables of a report that has such
    overlaps): each lane is a row of its own in the trace, so that no activity's end record closes
    another one still running.  Stage A (``_Facts``) numbers them as the tables go by and stores them
    in the table cache (``attach_lanes`` gives them back); this derives them where the cache cannot
    hold them.  Returns the number of activities on an extra lane."""
    kinds = [k for k in K.side_kinds(K.GPU) if k in tables and len(tables[k])]
    if not kinds:
        return 0
    ids: dict = {}
    _, lanes = stream_lanes([stream_part([tables[k][c].to_numpy(np.int64) for c in LANE_COLUMNS], ids) for k in kinds])
    if not lanes.any():
        return 0
    cut = np.cumsum([len(tables[k]) for k in kinds])[:-1]
    for k, part in zip(kinds, np.split(lanes, cut)):
        tables[k] = tables[k].assign(lane=part)
    return int((lanes > 0).sum())


def launch_kinds(src: Source) -> tuple[str, ...]:
    """The activities whose launch calls stage A finds (the translated ones, when calls are read for
    the links: ``cuda_api`` translated or ``Reading.link_calls``); () when none."""
    r = src.reading
    return tuple(k for k in ACTIVITIES if k in r.kinds) if "cuda_api" in r.kinds or r.link_calls else ()


def launch_tag(src: Source) -> str:
    """The name of the report's launch calls in its table cache entry (they depend on ``launch_kinds``)."""
    return entry_hash(repr(("launches", launch_kinds(src))))


LAUNCHES_NOTE = "the stored launch calls do not match the tables"


def stored_launches(src: Source, calls: pd.DataFrame | None, tables: dict[str, pd.DataFrame]) -> Launches | None:
    """Each activity's launch call as stage A stored it (rows of the whole ``calls`` table), for the
    whole, unclipped ``tables``; None where the cache has none (then derived in stage C)."""
    if calls is None or not launch_kinds(src):
        return None
    got = table_cache(src).launches(launch_tag(src))
    if got is None:
        return None
    rows, shared = got
    if any(k not in rows for k in launch_kinds(src) if k in tables and len(tables[k])):
        raise CacheDamage(f"{LAUNCHES_NOTE}: no launch calls for some activities")
    for k, row in rows.items():
        if k in tables and len(row) != len(tables[k]) or len(row) and int(row.max(initial=-1)) >= len(calls):
            raise CacheDamage(f"{LAUNCHES_NOTE}: {len(row)} launch calls for the {k} rows")
    return Launches({k: np.asarray(row, np.int64) for k, row in rows.items() if k in tables}, shared)

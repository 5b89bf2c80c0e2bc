"""Clock alignment: per-report offsets that put every timestamp on one timeline.

``session`` alignment (NSYS_SQLITE.md §3): wall = utcEpochNs + t for session-relative
exports; exports made with ``--ts-normalize`` already hold wall-clock times, and
``--ts-shift`` was added to every timestamp by the exporter, so it is removed here.
The trace's zero is the earliest session start, so a single report keeps the times
Nsight Systems shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsys2prv.nsys.schema import Report


@dataclass
class Alignment:
    method: str
    offsets: list[int]        # ns to add to each report's timestamps
    notes: list[str]


def wall_offset(report: Report) -> int:
    """ns to add to a report's timestamps to get UTC epoch ns."""
    base = 0 if report.time_normalized else (report.session_start_ns or 0)
    return base - report.time_shift_ns


def session_alignment(reports: list[Report]) -> Alignment:
    walls = [wall_offset(r) for r in reports]
    notes = []
    missing = [r.source for r in reports if r.session_start_ns is None and not r.time_normalized]
    if missing and len(reports) > 1:
        notes.append("no TARGET_INFO_SESSION_START_TIME in " + ", ".join(missing) + ": assumed aligned")
    origin = min(walls)
    return Alignment("session", [w - origin for w in walls], notes)

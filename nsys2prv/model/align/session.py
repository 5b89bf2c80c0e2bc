"""``session`` alignment (docs/nsys-schema.md): wall = utcEpochNs + t.

For session-relative exports wall = utcEpochNs + t; exports made with
``--ts-normalize`` already hold wall-clock times, and ``--ts-shift`` was added to
every timestamp by the exporter, so it is removed here.  The trace's zero is the
earliest session start, so a single report keeps the times Nsight Systems shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nsys2prv.core.errors import UserError

MAX_START_GAP_NS = 3600 * 10**9  # reports of one job start within minutes; > 1 h = another run


class ReportTimes(Protocol):
    """What the alignment reads of a report: ``nsys.database.Report`` (an open export) and the
    conversion's cached ``pipeline.report.ReportInfo`` both have it."""

    @property
    def source(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def session_start_ns(self) -> int | None: ...
    @property
    def time_normalized(self) -> bool: ...
    @property
    def time_shift_ns(self) -> int: ...


def wall_offset(report: ReportTimes) -> int:
    """ns to add to a report's timestamps to get UTC epoch ns."""
    base = 0 if report.time_normalized else (report.session_start_ns or 0)
    return base - report.time_shift_ns


def without_session_start(reports: Sequence[ReportTimes]) -> list[str]:
    """The reports whose times cannot be put on the wall clock (no session start, not normalised)."""
    return [r.source for r in reports if r.session_start_ns is None and not r.time_normalized]


def session_offsets(reports: Sequence[ReportTimes]) -> tuple[list[int], list[str]]:
    """Per report: ns to add so that every report is on the earliest session start's timeline.
    When a report has no session start (a lazy ``nsys stats`` export), no report's is used: session
    times are then taken as they are (session alignment is impossible; sync points still align)."""
    notes = []
    missing = without_session_start(reports)
    if missing and len(reports) > 1:
        walls = [-r.time_shift_ns for r in reports]
        notes.append(
            "session alignment impossible: no session start time (TARGET_INFO_SESSION_START_TIME) in "
            + ", ".join(missing[:5])
            + (" ..." if len(missing) > 5 else "")
            + "; session times taken as they are (MPI, NCCL or marker sync points, where the reports have "
            "them, still align the clocks: --align auto, mpi, nccl, marker:NAME)"
        )
    else:
        walls = [wall_offset(r) for r in reports]
    origin = min(walls)
    return [w - origin for w in walls], notes


def check_start_times(reports: Sequence[ReportTimes], force: bool) -> list[str]:
    """Refuse (unless ``force``) reports whose session starts are more than an hour apart."""
    known = [(wall_offset(r), r) for r in reports if r.session_start_ns is not None or r.time_normalized]
    if len(known) < 2:
        return []
    (lo, first), (hi, last) = min(known, key=lambda x: x[0]), max(known, key=lambda x: x[0])
    if hi - lo <= MAX_START_GAP_NS:
        return []
    msg = f"reports started {(hi - lo) / 3.6e12:.1f} h apart ({first.source} and {last.source}): not one run"
    if not force:
        raise UserError(msg + "; use --force to merge anyway")
    return [msg + " (merged because of --force)"]

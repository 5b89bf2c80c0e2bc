"""Capture problems recorded by Nsight Systems itself (DIAGNOSTIC_EVENT, 2023+ exports):
warnings and errors are shown to the user, since they can mean incomplete data."""

from __future__ import annotations

from nsys2prv.nsys.database import Report

WARNING = 2


def capture_warnings(report: Report) -> list[str]:
    if not report.has("DIAGNOSTIC_EVENT", "severity", "text"):
        return []
    df = report.query(
        f"SELECT severity, text FROM DIAGNOSTIC_EVENT WHERE severity IN ({WARNING}, 3) ORDER BY timestamp"
    )
    labels = {WARNING: "warning", 3: "error"}
    seen: dict[str, None] = {}
    for sev, text in zip(df["severity"], df["text"]):
        first = str(text).strip().splitlines()[0].strip() if text else ""
        seen.setdefault(f"nsys {labels.get(int(sev), 'warning')}: {first}")
    return list(seen)

"""One clock per host: the reports taken on one host share its clock, so their session starts place
them exactly against each other, and the alignment fits one correction per host, not per report.

The fit runs on host timelines: a report's times are moved onto its host's lead report's timeline by
the difference of their session offsets (exact on one clock), the sync points and messages are fitted
with one unknown per host (``fit.fit_clocks`` sees hosts as its "reports"), and each report's clock is
its host's, shifted back: for t' = u + off_h + k_h (u - t_ref_h) with u = t + shift_r,
Clock(off_h + shift_r, k_h, t_ref_h - shift_r).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from nsys2prv.model.align.fit import P2P, FitResult
from nsys2prv.model.align.session import ReportTimes, without_session_start
from nsys2prv.model.align.syncpoints import SyncPoints


@dataclass
class Hosts:
    group: np.ndarray  # per report: its host (index into lead)
    lead: np.ndarray  # per host: its first report
    shift: np.ndarray  # per report: ns from its own timeline to its host lead's (0 for a lead)
    names: list[str]  # per host

    @property
    def shared(self) -> bool:
        """Some host has several reports (else hosts and reports are the same)."""
        return len(self.lead) < len(self.group)


def host_groups(reports: Sequence[ReportTimes], session: np.ndarray, each: bool = False) -> Hosts:
    """The reports grouped by host: those whose export names the same host, with session starts (a
    report without a known host, or without a session start, is a host of its own; ``each``: every
    report is)."""
    n = len(reports)
    timed = not each and not without_session_start(reports)
    group = np.zeros(n, np.int64)
    leads: list[int] = []
    names: list[str] = []
    seen: dict[str, int] = {}
    for r, rep in enumerate(reports):
        known = timed and getattr(rep, "host_known", True) and rep.hostname not in ("", "unknown")
        g = seen.get(rep.hostname) if known else None
        if g is None:
            g = len(leads)
            leads.append(r)
            names.append(rep.hostname)
            if known:
                seen[rep.hostname] = g
        group[r] = g
    lead = np.asarray(leads, np.int64)
    s = np.asarray(session, np.int64)
    return Hosts(group, lead, s - s[lead[group]], names)


def to_hosts(sp: SyncPoints, p2p: P2P, hosts: Hosts) -> tuple[SyncPoints, P2P]:
    """Sync points and messages on host timelines, with hosts in place of reports."""
    d = hosts.shift
    host_sp = replace(
        sp,
        reports=hosts.group[sp.reports],
        entry=sp.entry + d[sp.reports][:, None],
        exit=sp.exit + d[sp.reports][:, None],
    )
    host_p2p = P2P(
        hosts.group[p2p.src],
        hosts.group[p2p.dst],
        p2p.send_start + d[p2p.src],
        p2p.recv_end + d[p2p.dst],
        p2p.rendezvous,
    )
    return host_sp, host_p2p


def to_reports(res: FitResult, hosts: Hosts) -> FitResult:
    """A fit over hosts as per-report clocks (every report of a host gets its host's clock and figures)."""
    g, d = hosts.group, hosts.shift
    return replace(
        res,
        offsets=res.offsets[g] + d,
        drift=res.drift[g].copy(),
        t_ref=res.t_ref[g] - d,
        fitted=res.fitted[g].copy(),
        residual_mad=res.residual_mad[g].copy(),
        residual_max=res.residual_max[g].copy(),
        stderr=res.stderr[g].copy(),
        points=res.points[g].copy(),
        kept=res.kept[g].copy(),
        bound=res.bound[g].copy(),
        notes=list(res.notes),
    )

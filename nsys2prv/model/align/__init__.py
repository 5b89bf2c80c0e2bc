"""Clock alignment: one Clock per report that puts every timestamp on one timeline.

Methods (``--align``):
- ``session``: TARGET_INFO_SESSION_START_TIME.utcEpochNs (session.py); exact for reports
  taken on one host, as good as the system clocks across hosts;
- ``mpi``: synchronising MPI collectives present in every rank, plus matched
  point-to-point messages (syncpoints.py, fit.py);
- ``nccl``: NCCL collective kernels run by every rank;
- ``marker:NAME``: the k-th occurrence of the NVTX range NAME on every rank;
- ``auto`` (default): session when every report comes from one host and the sync points agree
  with it (one clock), else MPI and NCCL sync points together when there are any, else session;
- ``none``: raw timestamps.
Sync-point methods start from the session offsets and correct them; ranks without sync
points keep their session offset (noted).  Whatever the method, the sync points found are
evaluated (residual spread, violated constraints) and reported, and the causality of the MPI
and NCCL collectives and matched messages is checked on the clocks the method produced
(``causality``): a marker or the session clocks may satisfy their own points and still have
ranks leaving an Allreduce before the last rank entered it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.core.errors import UserError
from nsys2prv.model.align import syncpoints
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.align.fit import P2P, FitResult, aligned, fit_clocks
from nsys2prv.model.align.hosts import Hosts, host_groups, to_hosts, to_reports
from nsys2prv.model.align.session import (
    ReportTimes,
    check_start_times,
    session_offsets,
    wall_offset,
    without_session_start,
)
from nsys2prv.model.communicators import Communicators
from nsys2prv.model.resources import Model

METHODS = ("auto", "session", "mpi", "nccl", "none")


@dataclass
class Alignment:
    method: str
    clocks: list[Clock]
    notes: list[str] = field(default_factory=list)
    reports: list[dict] = field(default_factory=list)  # per report: method, offset, drift, residuals
    stats: dict = field(default_factory=dict)

    @property
    def offsets(self) -> list[int]:
        return [c.offset for c in self.clocks]

    def to_dict(self) -> dict:
        return {"method": self.method, **self.stats, "reports": self.reports, "notes": self.notes}


def parse_method(spec: str | None) -> tuple[str, str | None]:
    spec = (spec or "auto").strip()
    if spec.startswith("marker:"):
        name = spec[len("marker:") :]
        if not name:
            raise UserError("--align marker:NAME needs the name of an NVTX range")
        return "marker", name
    if spec not in METHODS:
        raise UserError(f"unknown --align method '{spec}' (one of {', '.join(METHODS)}, marker:NAME)")
    return spec, None


def _sync_rows(
    method: str, marker: str | None, tables: Sequence[dict], model: Model, comms: Communicators | None = None
) -> tuple[pd.DataFrame, list]:
    if marker is not None:  # method "marker" (parse_method gives a name with it only)
        return syncpoints.marker_rows(tables, model, marker), ["marker"]
    parts = []
    if method in ("mpi", "auto", "session", "none"):
        parts.append(("mpi", syncpoints.mpi_rows(tables, model, comms)))
    if method in ("nccl", "auto", "session", "none"):
        parts.append(("nccl", syncpoints.nccl_rows(tables, model)))
    parts = [(n, df) for n, df in parts if len(df)]
    if not parts:
        return syncpoints.mpi_rows([], model), []
    return pd.concat([df for _, df in parts], ignore_index=True), [n for n, _ in parts]


def align(
    spec: str | None,
    reports: Sequence[ReportTimes],
    tables: Sequence[dict],
    model: Model,
    p2p: P2P | None = None,
    force: bool = False,
    comms: Communicators | None = None,
) -> Alignment:
    method, marker = parse_method(spec)
    notes = check_start_times(reports, force)
    session, snotes = session_offsets(reports)
    notes += snotes
    all_p2p = p2p if p2p is not None else P2P.empty()
    p2p = all_p2p if method in ("mpi", "auto", "session", "none") else P2P.empty()
    rows, sources = _sync_rows(method, marker, tables, model, comms)
    sp = syncpoints.build(rows, sources, syncpoints.mpi_scopes(rows, comms))
    if sp.n:  # the sources that survived the pairing
        kinds = {n.split(":", 1)[0] for n in sp.names}
        sp.sources = [s for s in sources if s in kinds]
    n_rep = len(reports)
    multi = n_rep > 1
    if method in ("mpi", "nccl", "marker") and multi and sp.n == 0 and not len(p2p.src):
        what = {
            "mpi": "synchronising MPI collectives (or matched messages) present in every rank",
            "nccl": "NCCL collective kernels present in every rank",
            "marker": f"an NVTX range '{marker}' present in every rank",
        }[method]
        raise UserError(f"--align {spec}: the reports have no {what}; try --align auto or session")
    fitting = multi and method not in ("session", "none") and (sp.n > 0 or len(p2p.src) > 0)
    ref = _reference(model, sp)
    base = np.zeros(n_rep, np.int64) if method == "none" else np.asarray(session, np.int64)
    host = None if without_session_start(reports) else one_host(reports)  # one clock, but unknown starts
    if method == "auto" and fitting and host is not None:
        # one host, one clock: the session starts are exact unless the sync points contradict them
        as_is = fit_clocks(sp, p2p, base, ref, estimate=False)
        if as_is.violations_after == 0:
            fitting = False
            notes.append(
                f"every report comes from host {host}, whose clock they share: session alignment "
                "(exact); the sync points only check it"
            )
        else:
            notes.append(
                f"every report comes from host {host}, but their session starts violate "
                f"{as_is.violations_after} sync constraint(s): clocks fitted to the sync points"
            )
    if method == "auto":
        name = "+".join(sp.sources + (["p2p"] if len(p2p.src) else [])) if fitting else "session"
    else:
        name = method if method != "marker" else f"marker:{marker}"
    # one unknown per host; a marker is the user's word that its ranges are simultaneous: per report
    hosts = host_groups(reports, base, each=marker is not None)
    res = _fit(sp, p2p, base, ref, fitting, hosts, notes)
    clocks = [Clock(int(o), float(k), int(t)) for o, k, t in zip(res.offsets, res.drift, res.t_ref)]
    notes += res.notes
    unfitted = [reports[r].source for r in range(n_rep) if fitting and not res.fitted[r] and np.isnan(res.bound[r])]
    if unfitted:
        notes.append(
            "no sync points in "
            + ", ".join(unfitted[:5])
            + (" ..." if len(unfitted) > 5 else "")
            + ": kept the session offset"
        )
    al = Alignment(name, clocks, notes)
    al.stats = {
        "reference_report": reports[ref].source if reports else None,
        "sync_points": int(sp.n),
        "sync_names": sorted({n.rsplit("#", 1)[0] for n in sp.names}),
        "constraining_points": int(sp.constrain.sum()),
        "messages": int(p2p.messages),
        "violations": {
            "after_estimate": res.violations_before,
            "after_clamp": res.violations_clamped,
            "after_fix": res.violations_after,
        },
        # fitted clocks (one per host; one per report where reports are fitted on their own) the fix moved
        "clocks_moved_by_fix": res.moved_by_fix,
        "reports_moved_by_fix": res.moved_by_fix,  # (the old name, kept until the next release)
    }
    al.reports = _per_report(name, fitting, reports, model, res, base)
    if multi:
        both = marker is None and method in ("auto", "session", "none")  # sp: MPI and NCCL, as causality's
        cau = causality(tables, model, res, all_p2p, sp if both else None, comms)
        al.stats["causality"] = cau
        if cau["collectives_violated"] or cau["messages_violated"] or cau.get("synchronous_sends_violated"):
            al.notes.append(causality_text(cau, name))
    return al


def _fit(
    sp: syncpoints.SyncPoints, p2p: P2P, base: np.ndarray, ref: int, fitting: bool, hosts: Hosts, notes: list[str]
) -> FitResult:
    """The clocks fitted with one unknown per host (reports of one host keep their session offsets
    against each other); per report only when a host's own session clocks break its constraints."""
    if not (fitting and hosts.shared):
        return fit_clocks(sp, p2p, base, ref, estimate=fitting)
    host_sp, host_p2p = to_hosts(sp, p2p, hosts)
    res = to_reports(fit_clocks(host_sp, host_p2p, base[hosts.lead], int(hosts.group[ref]), estimate=True), hosts)
    if res.violations_after == 0:
        shared = [f"{n} ({int((hosts.group == g).sum())} reports)" for g, n in enumerate(hosts.names)]
        notes.append(
            "one clock per host: the reports of a host keep their session offsets against each other and "
            f"each host's clock is fitted ({', '.join(shared)})"
        )
        return res
    each = fit_clocks(sp, p2p, base, ref, estimate=True)
    if each.violations_after >= res.violations_after:
        return res
    notes.append(
        f"the session clocks of reports on one host break {res.violations_after} sync constraint(s) (one "
        "clock per host cannot hold them): every report's clock fitted on its own"
    )
    return each


def causality(
    tables: Sequence[dict],
    model: Model,
    res: FitResult,
    p2p: P2P,
    sp: syncpoints.SyncPoints | None = None,
    comms: Communicators | None = None,
) -> dict:
    """MPI/NCCL causality on the fitted clocks, whatever the method: synchronising collectives (the
    k-th of a name on every rank) that a rank leaves before the last rank entered, and matched
    messages received before they were sent; the largest violation of each (ns).  ``sp``: the MPI and
    NCCL sync points already built (None: built here)."""
    if sp is None:
        rows, sources = _sync_rows("auto", None, tables, model, comms)
        sp = syncpoints.build(rows, sources, syncpoints.mpi_scopes(rows, comms))
    con = sp.constrain if sp.n else np.zeros(0, bool)
    late = np.zeros(0, np.int64)
    if con.any():
        e = aligned(sp.entry[:, con], sp.reports, res.offsets, res.drift, res.t_ref)
        x = aligned(sp.exit[:, con], sp.reports, res.offsets, res.drift, res.t_ref)
        late = e.max(axis=0) - x.min(axis=0)  # > 0: someone left before the last entered
    early = np.zeros(0, np.int64)
    if len(p2p.src):
        s = aligned(p2p.send_start, p2p.src, res.offsets, res.drift, res.t_ref)
        q = aligned(p2p.recv_end, p2p.dst, res.offsets, res.drift, res.t_ref)
        early = s - q  # > 0: received before it was sent (a synchronous send returned before its receive)
    msg, rdv = early[: p2p.messages], early[p2p.messages :]
    out = {
        "collectives_checked": int(con.sum()),
        "collectives_violated": int((late > 0).sum()),
        "collective_max_violation_ns": int(late.max()) if (late > 0).any() else 0,
        "messages_checked": int(len(msg)),
        "messages_violated": int((msg > 0).sum()),
        "message_max_violation_ns": int(msg.max()) if (msg > 0).any() else 0,
    }
    if p2p.rendezvous:
        out["synchronous_sends_checked"] = int(len(rdv))
        out["synchronous_sends_violated"] = int((rdv > 0).sum())
        out["synchronous_send_max_violation_ns"] = int(rdv.max()) if (rdv > 0).any() else 0
    return out


def causality_text(c: dict, method: str) -> str:
    """The causality check in one sentence (a note when something is violated)."""
    parts = []
    if c["collectives_violated"]:
        parts.append(
            f"{c['collectives_violated']} of {c['collectives_checked']} synchronising MPI/NCCL "
            f"collective(s) have a rank leaving before the last rank entered (up to "
            f"{c['collective_max_violation_ns'] / 1e3:.1f} us)"
        )
    if c["messages_violated"]:
        parts.append(
            f"{c['messages_violated']} of {c['messages_checked']} matched message(s) are received "
            f"before they were sent (up to {c['message_max_violation_ns'] / 1e3:.1f} us)"
        )
    if c.get("synchronous_sends_violated"):
        parts.append(
            f"{c['synchronous_sends_violated']} of {c['synchronous_sends_checked']} synchronous send(s) "
            f"return before their receive was posted (up to {c['synchronous_send_max_violation_ns'] / 1e3:.1f} us)"
        )
    if not parts:
        return (
            f"causality checked on the {method} clocks: {c['collectives_checked']} collective(s), "
            f"{c['messages_checked']} message(s), none violated"
        )
    fitted_to_mpi = method in ("mpi", "auto") or "mpi" in method.split("+")
    return (
        f"the {method} clocks break causality: "
        + "; ".join(parts)
        + " -- events of different ranks may be shown in the wrong order"
        + ("" if fitted_to_mpi else " (--align mpi fits the clocks to the MPI calls)")
    )


def one_host(reports) -> str | None:
    """The host every report was taken on, when they share one known host name."""
    hosts = {r.hostname for r in reports}
    if len(hosts) != 1 or not all(getattr(r, "host_known", True) for r in reports):
        return None
    host = next(iter(hosts))
    return host if host and host != "unknown" else None


def _reference(model: Model, sp) -> int:
    """The report of the first task (lowest rank) that has sync points: its clock is the trace's."""
    with_rows = set(sp.reports.tolist())
    for t in model.tasks:
        if not with_rows or t.report in with_rows:
            return t.report
    return 0


def _per_report(name: str, fitting: bool, reports, model: Model, res: FitResult, base) -> list[dict]:
    out = []
    ranks: dict[int, list] = {}
    for t in model.tasks:
        ranks.setdefault(t.report, []).append(t.rank)
    nan = lambda v: None if v is None or not np.isfinite(v) else round(float(v), 1)  # noqa: E731
    for r, rep in enumerate(reports):
        method = name if (not fitting or res.fitted[r]) else "session (no sync points)"
        if fitting and res.fitted[r] and res.kept[r]:
            method = "session (the sync points do not move it significantly)"
        bounded = len(res.bound) > r and np.isfinite(res.bound[r])
        if bounded:
            method = f"{name} (bounds: the midpoint of the fastest exchanges each way)"
        out.append(
            {
                "report": rep.source,
                "ranks": ranks.get(r, []),
                "host": rep.hostname,
                "method": method,
                "offset_ns": int(res.offsets[r]),
                "session_offset_ns": int(base[r]),
                "correction_ns": int(res.offsets[r] - base[r]),
                "drift_ppm": round(float(res.drift[r]) * 1e6, 4),
                "t_ref_ns": int(res.t_ref[r]),
                "sync_points": int(res.points[r]),
                "residual_spread_ns": nan(res.residual_mad[r]),
                "residual_max_ns": nan(res.residual_max[r]),
                "stderr_ns": nan(res.stderr[r]),
                **({"bound_ns": nan(res.bound[r])} if bounded else {}),
            }
        )
    return out


__all__ = ["Alignment", "Clock", "METHODS", "align", "parse_method", "session_offsets", "wall_offset", "P2P"]

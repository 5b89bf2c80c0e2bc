"""The short human summary printed at the end of a conversion."""

from __future__ import annotations

import click

from nsys2prv.pipeline import Summary


def print_summary(s: Summary, seconds: float) -> None:
    rec = s.records
    click.echo(f"nsys2prv: {len(s.reports)} report(s) -> {s.ranks} task(s) on {len(s.nodes)} node(s) "
               f"({', '.join(s.nodes)}), {s.threads} CPU thread(s), {s.streams} GPU stream(s)"
               + (f", {s.metric_rows} GPU metric row(s)" if s.metric_rows else ""))
    click.echo(f"  records: {rec['states']} states, {rec['events']} events, {rec['communications']} "
               f"communications; trace length {rec['end_ns'] / 1e9:.6f} s; {seconds:.2f} s wall")
    click.echo(f"  {'category':<14} {'source rows':>12} {'translated':>11} {'records':>9}  dropped / notes")
    for kind, c in sorted(s.categories.items()):
        extra = "; ".join(f"{n} {why}" for why, n in {**c["dropped"], **c["notes"]}.items())
        click.echo(f"  {kind:<14} {c['source_rows']:>12} {c['translated_rows']:>11} {c['event_records']:>9}  {extra}")
    for u in s.untranslated:
        click.echo(f"  not translated: {u['rows']} rows of {u['table']} in {u['report']} ({u['reason']})")
    for r in s.reports:
        for w in r["capture_warnings"]:
            click.echo(f"  {r['path']}: {w}")
    _alignment_table(s.alignment)
    for note in s.alignment["notes"] + s.notes:
        click.echo(f"  note: {note}")
    click.echo("  wrote: " + ", ".join(s.outputs))


def _alignment_table(al: dict, shown: int = 16) -> None:
    """One line per report: method, offset, drift, residual spread of its sync points."""
    reports = al.get("reports", [])
    if len(reports) < 2:
        return
    v = al.get("violations", {})
    click.echo(f"  clock alignment: {al['method']}; {al.get('sync_points', 0)} sync point(s), "
               f"{al.get('messages', 0)} matched message(s); violated constraints "
               f"{v.get('after_estimate', 0)} after the estimate, {v.get('after_fix', 0)} after the fix")
    click.echo(f"  {'ranks':<10} {'method':<16} {'offset (ns)':>16} {'correction':>12} {'drift ppm':>10} "
               f"{'spread (ns)':>12} {'est. error':>11} {'points':>7}")
    for r in reports[:shown]:
        ranks = ",".join(str(x) for x in r["ranks"]) or "-"
        spread = "-" if r["residual_spread_ns"] is None else f"{r['residual_spread_ns']:.0f}"
        err = "-" if r.get("stderr_ns") is None else f"{r['stderr_ns']:.0f}"
        click.echo(f"  {ranks:<10} {r['method'][:16]:<16} {r['offset_ns']:>16} {r['correction_ns']:>12} "
                   f"{r['drift_ppm']:>10.3f} {spread:>12} {err:>11} {r['sync_points']:>7}")
    if len(reports) > shown:
        click.echo(f"  ... {len(reports) - shown} more in the .sync.json")

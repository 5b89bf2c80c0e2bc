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
    for note in s.alignment["notes"] + s.notes:
        click.echo(f"  note: {note}")
    click.echo("  wrote: " + ", ".join(s.outputs))

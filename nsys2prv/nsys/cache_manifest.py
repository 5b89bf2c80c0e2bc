"""The table cache's manifest (``kinds.json``: each kind's tally and its file's schema): checked as
``nsys.cache`` writes it (``check_manifest``), and an update applied to it (``updated``)."""

from __future__ import annotations

from nsys2prv.nsys.codec import CacheDamage

MANIFEST = "kinds.json"


def updated(kinds: dict, schemas: dict, update: tuple) -> tuple[dict, dict]:
    """The manifest's kinds and schemas with one update (added tallies, schemas, stale kinds) applied."""
    added, new, stale = update
    kept = {k: v for k, v in schemas.items() if k not in stale and k not in new}
    return {**kinds, **added}, {**kept, **new}


def check_manifest(doc) -> tuple[dict, dict]:
    """``kinds.json`` as this module writes it, or ``CacheDamage``."""
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise CacheDamage(f"{MANIFEST} is not this version's manifest")
    kinds, schemas = doc.get("kinds"), doc.get("schemas")
    if not isinstance(kinds, dict) or not isinstance(schemas, dict):
        raise CacheDamage(f"{MANIFEST} is not this version's manifest")
    for kind, tally in kinds.items():
        if tally is None:
            continue
        if not (
            isinstance(tally, dict)
            and isinstance(tally.get("source_rows", 0), int)
            and all(
                isinstance(tally.get(k, {}), dict)
                and all(isinstance(r, str) and isinstance(n, int) for r, n in tally.get(k, {}).items())
                for k in ("dropped", "notes")
            )
        ):
            raise CacheDamage(f"{MANIFEST}: the tally of {kind!r} is not one")
        if not tally.get("no_table"):
            s = schemas.get(kind)
            if not (
                isinstance(s, dict)
                and isinstance(s.get("columns"), list)
                and all(isinstance(c, str) for c in s["columns"])
                and isinstance(s.get("ipc", False), bool)
            ):
                raise CacheDamage(f"{MANIFEST}: no schema for {kind!r}")
    return kinds, schemas

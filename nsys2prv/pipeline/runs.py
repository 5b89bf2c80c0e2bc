"""One run of a scalability table (``nsys2prv pop RUN...``): an earlier conversion's ``OUT.pop.json``
or a (quoted) glob of one run's reports, whose POP metrics are computed by the conversion's own
stages without writing a trace."""

from __future__ import annotations

import glob
import json
from pathlib import Path

from nsys2prv.config import Config
from nsys2prv.core.choices import NcclAs
from nsys2prv.core.errors import UserError
from nsys2prv.metrics.pop import SCHEMA
from nsys2prv.pipeline import pop_of_reports


def load_run(
    spec: str,
    nccl_as: NcclAs,
    region=None,
    iterations=None,
    warmup: int = 0,
    cache_dir=None,
    force: bool = False,
    align_method: str = "auto",
) -> dict:
    p = Path(spec)
    if p.suffix == ".json" and p.exists():
        try:
            res = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"not a readable POP JSON file ({exc})", spec) from None
        if not isinstance(res, dict) or res.get("schema") != SCHEMA:
            raise UserError(f"not an OUT.pop.json of a conversion (schema {SCHEMA})", spec)
        res["source"] = [spec]
        return res
    matches = sorted(glob.glob(spec)) or ([spec] if p.exists() else [])
    if not matches:
        raise UserError("matches no file (give an OUT.pop.json or a quoted glob of one run's reports)", spec)
    cfg = Config(
        inputs=[Path(m) for m in matches],
        output=Path(Path(matches[0]).parent.name),
        merge=True,
        force=force,
        cache_dir=cache_dir,
        show_progress=False,
        nccl_as=nccl_as,
        region=(region,) if region else (),
        iterations=iterations,
        warmup=warmup,
        align=align_method,
        own_process=True,
    )
    return pop_of_reports(cfg)

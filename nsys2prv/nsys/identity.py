"""Who is who in a report: host, processes, their MPI ranks, thread names.

Rank of a process, in order of preference (docs/nsys-schema.md):
MPI_RANKS, the NVTX thread name "MPI Rank N", the captured environment
(OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), else None (report order later).
The environment is META_DATA_CAPTURE's (2023+ exports), else TARGET_INFO_SYSTEM_ENV
``DeviceEnvironment`` (2022.x exports); empty values (scrubbed) are ignored.  The job id
(SLURM_JOB_ID, PMI_JOBID, ...) comes from the same environment, and so does what nsys2prv's profiling
wrapper recorded (NSYS2PRV_DELAY_S: seconds from its start to its nsys's, NSYS2PRV_ATTEMPT).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv.core.errors import UserError
from nsys2prv.nsys.connection import sql_column
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.ids import pid_of, tid_of
from nsys2prv.nsys.readers.nvtx import load_nvtx

RANK_ENV_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
JOB_ENV_VARS = ("SLURM_JOB_ID", "PMI_JOBID", "OMPI_MCA_ess_base_jobid", "PBS_JOBID", "LSB_JOBID")
RANK_THREAD_NAME = re.compile(r"^MPI Rank (\d+)$")
INTERNAL_THREAD = re.compile(r"^\[NSys")
NVTX_RANK_SOURCE = "NVTX thread name"  # a rank from "MPI Rank N" (resources distrusts it when names collide)


@dataclass
class Identity:
    host: str
    process_names: dict[int, str] = field(default_factory=dict)  # pid -> executable name
    thread_names: dict[int, str] = field(default_factory=dict)  # tid (plain) -> name
    ranks: dict[int, int] = field(default_factory=dict)  # pid -> rank
    rank_source: dict[int, str] = field(default_factory=dict)  # pid -> how the rank was found
    env_rank: int | None = None
    job_id: str | None = None
    wrapper_delay_s: float | None = None  # nsys2prv's wrapper started nsys this late (waited, retried)
    wrapper_attempt: int | None = None


def identify(report: Report) -> Identity:
    ident = Identity(host=report.hostname)
    # (plain rows, not DataFrames: a report lists every process of its host, thousands of them)
    if report.has("PROCESSES", "pid", "name"):
        ident.process_names = {
            int(p): str(n)
            for p, n in report.rows("SELECT pid, name FROM PROCESSES WHERE typeof(pid) = 'integer'")
            if n is not None
        }
        if bad := report.count("PROCESSES", "pid IS NOT NULL AND typeof(pid) != 'integer'"):
            report.notes.append(f"{bad} row(s) of PROCESSES: text in the numeric column pid (row not used)")
    names: dict[int, str] = {}
    if report.has("ThreadNames", "nameId", "globalTid"):
        rows = report.rows("SELECT globalTid, nameId FROM ThreadNames WHERE typeof(globalTid) = 'integer'")
        if rows:
            gtid, ids = zip(*rows)
            texts = report.lookup(pd.Series(ids, dtype=object))
            for g, t in zip(tid_of(np.asarray(sql_column(gtid), dtype=np.int64)), texts):
                if t is not None:
                    names[int(g)] = str(t)
    nv = load_nvtx(report)
    if nv is not None:
        for global_tid, name in nv.thread_names.items():
            names[int(tid_of(global_tid))] = name
            m = RANK_THREAD_NAME.match(name)
            if m:
                pid = int(pid_of(global_tid))
                ident.ranks.setdefault(pid, int(m.group(1)))
                ident.rank_source.setdefault(pid, NVTX_RANK_SOURCE)
    ident.thread_names = names
    if report.has("MPI_RANKS", "globalTid", "rank"):
        df = report.query("SELECT globalTid, rank FROM MPI_RANKS WHERE globalTid IS NOT NULL")
        for g, r in zip(df["globalTid"], df["rank"]):
            if r is not None:
                pid = int(pid_of(int(g)))
                ident.ranks[pid] = int(r)
                ident.rank_source[pid] = "MPI_RANKS"
    env = {**{k: v for k, v in report.device_env.items() if v}, **{k: v for k, v in report.capture_env.items() if v}}
    for var in RANK_ENV_VARS:
        if var in env and env[var].strip().isdigit():
            ident.env_rank = int(env[var])
            break
    for var in JOB_ENV_VARS:
        if env.get(var):
            ident.job_id = f"{var}={env[var]}"
            break
    try:
        ident.wrapper_delay_s = float(env["NSYS2PRV_DELAY_S"]) if "NSYS2PRV_DELAY_S" in env else None
        ident.wrapper_attempt = int(env["NSYS2PRV_ATTEMPT"]) if "NSYS2PRV_ATTEMPT" in env else None
    except ValueError:
        pass
    return ident


def check_same_job(identities: list[Identity], sources: list[str], force: bool) -> list[str]:
    """Refuse (unless ``force``) reports whose captured environments name different jobs."""
    jobs: dict[str, str] = {}
    for ident, src in zip(identities, sources):
        if ident.job_id:
            jobs.setdefault(ident.job_id, src)
    if len(jobs) < 2:
        return []
    (j1, s1), (j2, s2) = list(jobs.items())[:2]
    msg = f"reports come from different jobs ({s1}: {j1}, {s2}: {j2})"
    if not force:
        raise UserError(msg + "; use --force to merge anyway")
    return [msg + " (merged because of --force)"]


def check_distinct_inputs(paths: list[Path]) -> None:
    """Refuse one file given twice (under one name or two): it is one report, not two ranks."""
    seen: dict[tuple[int, int], Path] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue  # the reader says what is wrong with it
        key = (st.st_dev, st.st_ino)
        if key in seen:
            first = seen[key]
            also = "" if os.path.normpath(first) == os.path.normpath(p) else f" (also as {first})"
            raise UserError(f"this file is given twice{also}: give each report once", str(p))
        seen[key] = Path(p)

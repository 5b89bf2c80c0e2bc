#!/usr/bin/env python3
"""Copy an Nsight Systems SQLite export and scrub private data from the copy.

    scripts/scrub_sqlite.py [--trim] [--vacuum] [--host NAME] IN OUT

What is scrubbed (never timestamps, never event rows):

* Environment variables, wherever the export keeps them:
  - ``TARGET_INFO_SYSTEM_ENV`` (``DeviceEnvironment``: a ``KEY=VALUE`` block, NUL-separated
    in 2022.4 exports, ';'-separated in 2024.x ones),
  - ``StringIds`` (nsys 2022.4 stores the environment of every process it saw as
    NUL-separated blocks),
  - ``META_DATA_CAPTURE`` / any ``*META*`` table (newer schemas: rows
    ``PROCESS_n:ENVIRONMENT_VARIABLE`` = ``KEY="VALUE"``).
  Values are blanked (the key stays, ``KEY=``), except for the variables that
  identify the rank/job: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, PMI_RANK,
  SLURM_PROCID, SLURM_JOB_ID.
* Host name: ``TARGET_INFO_SYSTEM_ENV`` 'Hostname' and ``EXPORT_HOST`` become
  ``node01`` (``--host``); other exact occurrences of the original host name too.
* User names: ``EXPORT_USER`` is blanked; the user names found in the environment
  (USER, LOGNAME) are replaced by ``user`` in metadata and strings.
* Absolute paths that are not system install locations (/usr, /lib, /etc, ...)
  become ``/path/to/<basename>``, in StringIds (process names, stream file names,
  callchain modules, stdout content), PROCESSES.name, TARGET_INFO_SYSTEM_ENV and
  the metadata tables.

``--trim`` additionally removes bulk rows that carry no events: PROCESSES and
ThreadNames rows of processes that own no event in any event table, and the rows
of SAMPLING_*, SCHED_EVENTS and COMPOSITE_EVENTS (tables are kept, with their
schema). With ``--keep-cpu`` those rows stay (the CPU-side fixtures): only the rows of
processes without events elsewhere go, and the symbols and modules of the kept call stacks are
scrubbed like any string. ``--vacuum`` runs VACUUM at the end.

Every change is printed. Exit status 1 if the final check still finds leftovers.
"""

import argparse
import os
import re
import shutil
import sqlite3
import sys

KEEP_ENV = {
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "SLURM_PROCID",
    "SLURM_JOB_ID",
}
SYSTEM_PREFIXES = (
    "/usr/",
    "/lib/",
    "/lib32/",
    "/lib64/",
    "/bin/",
    "/sbin/",
    "/etc/",
    "/proc/",
    "/sys/",
    "/dev/",
    "/opt/nvidia/",
)
# Tables whose rows are events: never modified.
EVENT_TABLE_RE = re.compile(
    r"^(NVTX_EVENTS|OSRT_API|CUPTI_ACTIVITY_KIND_.*|MPI_.*_EVENTS|UCP_.*EVENTS|"
    r"CUDA_.*EVENTS|SCHED_EVENTS|COMPOSITE_EVENTS|GPU_METRICS|PROFILER_OVERHEAD|"
    r"DIAGNOSTIC_EVENT|NCCL_.*|OPENMP_.*|.*_EVENTS)$"
)
BULK_TABLE_RE = re.compile(r"^(SAMPLING_.*|SCHED_EVENTS|COMPOSITE_EVENTS)$")

PATH_RE = re.compile(r"(?<![\w.~/])(/(?:[\w.+\-@%~,]+/)*[\w.+\-@%~,]+/?)")
ENV_ITEM_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def short(s, n=70):
    s = s.replace("\x00", "\\0").replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


class Scrubber:
    def __init__(self, con, host):
        self.con = con
        self.new_host = host
        self.hosts = set()
        self.users = set()
        self.changes = 0

    def log(self, where, msg):
        self.changes += 1
        print(f"  {where}: {msg}")

    # ---- helpers -----------------------------------------------------------
    def tables(self):
        return [r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]

    def columns(self, table):
        return [(r[1], (r[2] or "").upper()) for r in self.con.execute(f'PRAGMA table_info("{table}")')]

    @staticmethod
    def neutral_path(p):
        if p == "/" or p.startswith(SYSTEM_PREFIXES):
            return p
        base = os.path.basename(p.rstrip("/")) or "x"
        return "/path/to/" + base

    def scrub_paths(self, s):
        return PATH_RE.sub(lambda m: self.neutral_path(m.group(1)), s)

    def scrub_names(self, s):
        if s in self.hosts:
            return self.new_host
        for h in self.hosts:
            if len(h) >= 4:
                s = re.sub(rf"(?<![\w-]){re.escape(h)}(?![\w-])", self.new_host, s)
        for u in self.users:
            if len(u) >= 3 and u != "root":
                s = re.sub(rf"(?<![\w-]){re.escape(u)}(?![\w-])", "user", s)
        return s

    @staticmethod
    def is_env_block(s):
        if "\x00" not in s:
            return False
        items = [i for i in s.split("\x00") if i]
        return bool(items) and sum(bool(ENV_ITEM_RE.match(i)) for i in items) >= max(1, len(items) // 2)

    @staticmethod
    def scrub_env_block(s):
        out = []
        for item in s.split("\x00"):
            m = ENV_ITEM_RE.match(item)
            if m:
                k = m.group(1)
                out.append(item if k in KEEP_ENV else k + "=")
            else:
                out.append("" if item else item)
        return "\x00".join(out)

    @staticmethod
    def scrub_semicolon_env(s):
        """';'-separated KEY=VALUE list (DeviceEnvironment in nsys 2024.x). Values may contain
        ';', so split only where a ';' is followed by KEY=."""
        parts = re.split(r";(?=[A-Za-z_][A-Za-z0-9_]*=)", s)
        out = []
        for item in parts:
            m = ENV_ITEM_RE.match(item)
            out.append(item if (not m or m.group(1) in KEEP_ENV) else m.group(1) + "=")
        return ";".join(out)

    @staticmethod
    def scrub_env_assignment(s):
        """KEY=VALUE or KEY="VALUE" (META_DATA_CAPTURE) -> KEY= / KEY="" ."""
        m = ENV_ITEM_RE.match(s)
        if not m or m.group(1) in KEEP_ENV:
            return s
        v = m.group(2)
        return m.group(1) + ('=""' if v.startswith('"') else "=")

    def scrub_text(self, s):
        if self.is_env_block(s):
            s = self.scrub_env_block(s)
        return self.scrub_names(self.scrub_paths(s))

    # ---- discovery ---------------------------------------------------------
    def discover(self):
        names = self.tables()
        if "TARGET_INFO_SYSTEM_ENV" in names:
            for (v,) in self.con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'"):
                if v:
                    self.hosts.add(v)
        for t in names:
            if "META" in t.upper():
                cols = [c for c, _ in self.columns(t)]
                if "name" in cols and "value" in cols:
                    for n, v in self.con.execute(f'SELECT name, value FROM "{t}"'):
                        if n in ("EXPORT_HOST",) and v:
                            self.hosts.add(v)
                        if n in ("EXPORT_USER",) and v:
                            self.users.add(v)
        # Environment blocks: host and user names.
        blocks = []
        if "StringIds" in names:
            blocks += [v for (v,) in self.con.execute("SELECT value FROM StringIds WHERE instr(value, char(0)) > 0")]
        if "TARGET_INFO_SYSTEM_ENV" in names:
            blocks += [
                v
                for (v,) in self.con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE instr(value, char(0)) > 0")
            ]
        for b in blocks:
            for item in b.split("\x00"):
                m = ENV_ITEM_RE.match(item)
                if not m:
                    continue
                k, v = m.group(1), m.group(2).strip('"')
                if k in ("HOSTNAME", "PMIX_HOSTNAME", "SLURMD_NODENAME") and v:
                    self.hosts.add(v)
                if k in ("USER", "LOGNAME", "SLURM_JOB_USER") and v:
                    self.users.add(v)
        print(f"scrub: host names found: {len(self.hosts)}, user names found: {len(self.users)}")

    # ---- passes ------------------------------------------------------------
    def pass_system_env(self):
        if "TARGET_INFO_SYSTEM_ENV" not in self.tables():
            return
        rows = self.con.execute("SELECT rowid, name, value FROM TARGET_INFO_SYSTEM_ENV").fetchall()
        for rowid, name, value in rows:
            if value is None or not isinstance(value, str):
                continue
            if name == "Hostname":
                new = self.new_host
            elif self.is_env_block(value):
                new = self.scrub_names(self.scrub_env_block(value))
            elif name == "DeviceEnvironment":
                new = self.scrub_names(self.scrub_paths(self.scrub_semicolon_env(value)))
            elif value.startswith("/"):
                new = self.scrub_names(self.scrub_paths(value))
            else:
                new = self.scrub_names(value) if value in self.hosts else value
            if new != value:
                self.con.execute("UPDATE TARGET_INFO_SYSTEM_ENV SET value=? WHERE rowid=?", (new, rowid))
                env = self.is_env_block(value) or name == "DeviceEnvironment"
                what = "environment values blanked" if env else f"-> {short(new)!r}"
                self.log(f"TARGET_INFO_SYSTEM_ENV[{name}]", what)

    def pass_meta(self):
        for t in self.tables():
            if "META" not in t.upper():
                continue
            cols = [c for c, _ in self.columns(t)]
            if "name" not in cols or "value" not in cols:
                continue
            for rowid, name, value in self.con.execute(f'SELECT rowid, name, value FROM "{t}"').fetchall():
                if not isinstance(value, str):
                    continue
                if name == "EXPORT_HOST":
                    new = self.new_host
                elif name == "EXPORT_USER":
                    new = ""
                elif "ENVIRONMENT" in (name or "").upper():
                    new = self.scrub_names(self.scrub_paths(self.scrub_env_assignment(value)))
                else:
                    new = self.scrub_text(value)
                if new != value:
                    self.con.execute(f'UPDATE "{t}" SET value=? WHERE rowid=?', (new, rowid))
                    self.log(f"{t}[{name}]", f"-> {short(new)!r}")

    def pass_strings(self):
        if "StringIds" not in self.tables():
            return
        n_env = 0
        for sid, value in self.con.execute("SELECT id, value FROM StringIds").fetchall():
            if not isinstance(value, str):
                continue
            new = self.scrub_text(value)
            if new != value:
                self.con.execute("UPDATE StringIds SET value=? WHERE id=?", (new, sid))
                if self.is_env_block(value):
                    n_env += 1
                    kept = [i for i in new.split("\x00") if ENV_ITEM_RE.match(i) and not i.endswith("=")]
                    self.log(f"StringIds[{sid}]", f"environment block: values blanked, kept {kept}")
                else:
                    self.log(f"StringIds[{sid}]", f"{short(value)!r} -> {short(new)!r}")

    def pass_processes(self):
        if "PROCESSES" not in self.tables():
            return
        for rowid, pid, name in self.con.execute("SELECT rowid, pid, name FROM PROCESSES").fetchall():
            if not isinstance(name, str):
                continue
            new = self.scrub_text(name)
            if new != name:
                self.con.execute("UPDATE PROCESSES SET name=? WHERE rowid=?", (new, rowid))
                self.log(f"PROCESSES[pid {pid}]", f"{short(name)!r} -> {short(new)!r}")

    def pass_other_text(self):
        """TARGET_INFO_* and other non-event tables with TEXT columns: paths/names only."""
        done = {"StringIds", "PROCESSES", "TARGET_INFO_SYSTEM_ENV"}
        for t in self.tables():
            if t in done or "META" in t.upper() or EVENT_TABLE_RE.match(t) or t.startswith("ENUM_"):
                continue
            tcols = [c for c, ty in self.columns(t) if ty in ("TEXT", "")]
            for c in tcols:
                rows = self.con.execute(f'SELECT rowid, "{c}" FROM "{t}" WHERE typeof("{c}")=\'text\'').fetchall()
                for rowid, v in rows:
                    new = self.scrub_text(v)
                    if new != v:
                        self.con.execute(f'UPDATE "{t}" SET "{c}"=? WHERE rowid=?', (new, rowid))
                        self.log(f"{t}.{c}[rowid {rowid}]", f"{short(v)!r} -> {short(new)!r}")

    # ---- trimming ----------------------------------------------------------
    def trim(self, keep_cpu=False):
        names = self.tables()
        owners = set()
        for t in names:
            if t in ("PROCESSES", "ThreadNames") or BULK_TABLE_RE.match(t):
                continue
            cols = [c for c, _ in self.columns(t)]
            for c in ("globalTid", "globalPid"):
                if c in cols:
                    for (g,) in self.con.execute(f'SELECT DISTINCT "{c}" FROM "{t}" WHERE "{c}" IS NOT NULL'):
                        owners.add(int(g) & ~0xFFFFFF)
        print(f"trim: {len(owners)} process(es) own events")
        if "PROCESSES" in names:
            rows = self.con.execute("SELECT globalPid, pid FROM PROCESSES").fetchall()
            drop = [g for g, _ in rows if (int(g) & ~0xFFFFFF) not in owners]
            self.con.executemany("DELETE FROM PROCESSES WHERE globalPid=?", [(g,) for g in drop])
            print(f"  PROCESSES: kept {len(rows) - len(drop)}, removed {len(drop)} rows without events")
        if "ThreadNames" in names:
            rows = self.con.execute("SELECT rowid, globalTid FROM ThreadNames").fetchall()
            drop = [r for r, g in rows if (int(g) & ~0xFFFFFF) not in owners]
            self.con.executemany("DELETE FROM ThreadNames WHERE rowid=?", [(r,) for r in drop])
            print(f"  ThreadNames: kept {len(rows) - len(drop)}, removed {len(drop)} rows of processes without events")
        for t in names:
            if BULK_TABLE_RE.match(t) and keep_cpu:
                cols = [c for c, _ in self.columns(t)]
                if "globalTid" in cols:
                    rows = self.con.execute(f'SELECT rowid, globalTid FROM "{t}"').fetchall()
                    drop = [r for r, g in rows if g is None or (int(g) & ~0xFFFFFF) not in owners]
                    self.con.executemany(f'DELETE FROM "{t}" WHERE rowid=?', [(r,) for r in drop])
                    print(f"  {t}: kept {len(rows) - len(drop)}, removed {len(drop)} rows of processes without events")
        if keep_cpu and "SAMPLING_CALLCHAINS" in names and "COMPOSITE_EVENTS" in names:
            n = self.con.execute(
                "DELETE FROM SAMPLING_CALLCHAINS WHERE id NOT IN (SELECT id FROM COMPOSITE_EVENTS)"
            ).rowcount
            print(f"  SAMPLING_CALLCHAINS: removed {n} frames of removed samples")
        for t in names:
            if BULK_TABLE_RE.match(t) and not keep_cpu:
                n = self.con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
                if n:
                    self.con.execute(f'DELETE FROM "{t}"')
                    print(f"  {t}: removed all {n} rows (table kept)")

    # ---- final check -------------------------------------------------------
    def check(self):
        problems = []
        for t in self.tables():
            if t.startswith("ENUM_"):
                continue
            tcols = [c for c, ty in self.columns(t) if ty in ("TEXT", "")]
            for c in tcols:
                for (v,) in self.con.execute(f'SELECT "{c}" FROM "{t}" WHERE typeof("{c}")=\'text\''):
                    if self.is_env_block(v) and self.scrub_env_block(v) != v:
                        problems.append(f"{t}.{c}: environment values left")
                    for m in PATH_RE.finditer(v):
                        if self.neutral_path(m.group(1)) != m.group(1) and not m.group(1).startswith("/path/to/"):
                            problems.append(f"{t}.{c}: path {short(m.group(1))!r}")
                    if v in self.hosts and v != self.new_host:  # (--host's name is the one we chose)
                        problems.append(f"{t}.{c}: host name")
        for p in sorted(set(problems)):
            tab = p.split(".", 1)[0]
            note = " (event table: left unchanged by design)" if EVENT_TABLE_RE.match(tab) else ""
            print(f"  LEFTOVER {p}{note}")
        return not problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inp", metavar="IN")
    ap.add_argument("out", metavar="OUT")
    ap.add_argument("--host", default="node01", help="replacement host name (default node01)")
    ap.add_argument("--trim", action="store_true", help="remove bulk rows that carry no events")
    ap.add_argument("--keep-cpu", action="store_true", help="--trim keeps scheduling and sampling rows")
    ap.add_argument("--vacuum", action="store_true", help="VACUUM the output")
    a = ap.parse_args(argv)

    if os.path.abspath(a.inp) == os.path.abspath(a.out):
        ap.error("IN and OUT must differ")
    shutil.copyfile(a.inp, a.out)
    con = sqlite3.connect(a.out)
    con.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    print(f"scrub: {a.inp} -> {a.out}")
    s = Scrubber(con, a.host)
    s.discover()
    s.pass_system_env()
    s.pass_meta()
    s.pass_strings()
    s.pass_processes()
    s.pass_other_text()
    if a.trim:
        s.trim(keep_cpu=a.keep_cpu)
    con.commit()
    ok = s.check()
    if a.vacuum:
        con.execute("VACUUM")
    con.close()
    print(f"scrub: {s.changes} value(s) changed; check {'passed' if ok else 'FOUND LEFTOVERS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Draw the states of a Paraver trace (OUT.prv, .pcf, .row) as a timeline PNG, in the colours its .pcf
gives Paraver: one row per thread, like Paraver's state view (basics/states.cfg).  A rendering with
matplotlib, not Paraver: the README's picture, where Paraver's GUI is not available.

    python scripts/render_trace.py out/mpi4 docs/img/mpi4-states.png [--title TEXT]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

STATE = re.compile(rb"^1:\d+:(\d+):(\d+):(\d+):(\d+):(\d+):(\d+)\r?$", re.M)


def pcf_states(pcf: str) -> tuple[dict[int, str], dict[int, tuple[float, float, float]]]:
    names = dict(re.findall(r"^(\d+)\s+(.+?)\s*$", pcf.split("STATES\n", 1)[1].split("\n\n", 1)[0], re.M))
    block = pcf.split("STATES_COLOR\n", 1)[1].split("\n\n", 1)[0]
    colors = {
        int(k): (int(r) / 255, int(g) / 255, int(b) / 255)
        for k, r, g, b in re.findall(r"^(\d+)\s+\{(\d+),\s*(\d+),\s*(\d+)\}", block, re.M)
    }
    return {int(k): v for k, v in names.items()}, colors


def thread_names(row: str) -> list[str]:
    m = re.search(r"^LEVEL THREAD SIZE (\d+)\n", row, re.M)
    if m is None:
        m = re.search(r"^LEVEL CPU SIZE (\d+)\n", row, re.M)
    lines = row[m.end() :].splitlines()
    return lines[: int(m.group(1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, help="OUT (OUT.prv, OUT.pcf, OUT.row)")
    ap.add_argument("png", type=Path)
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    base = str(args.trace).removesuffix(".prv")
    raw = Path(base + ".prv").read_bytes()
    header = raw.split(b"\n", 1)[0].decode()
    tasks = re.findall(r"(\d+):\d+", header.split("):", 1)[1].split(":", 3)[3].split(")")[0].split("(", 1)[1])
    first_row = np.cumsum([0] + [int(n) for n in tasks])  # row of each task's first thread
    rec = np.array(STATE.findall(raw), dtype=np.int64).reshape(-1, 6)  # appl, task, thread, begin, end, state
    rows = first_row[rec[:, 1] - 1] + rec[:, 2] - 1
    names, colors = pcf_states(Path(base + ".pcf").read_text())
    labels = thread_names(Path(base + ".row").read_text())
    n = int(first_row[-1])
    fig, ax = plt.subplots(figsize=(12, 0.32 * n + 1.6), dpi=100)
    shown = []
    for s in np.unique(rec[:, 5]):
        sel = rec[:, 5] == s
        if s == 0:  # Idle: Paraver's background
            continue
        shown.append(int(s))
        for r in np.unique(rows[sel]):
            one = sel & (rows == r)
            ax.broken_barh(
                list(zip(rec[one, 3] / 1e9, (rec[one, 4] - rec[one, 3]) / 1e9)),
                (r - 0.45, 0.9),
                facecolors=colors.get(int(s), (0.5, 0.5, 0.5)),
                linewidth=0,
            )
    ax.set_facecolor(colors.get(0, (0.46, 0.76, 1.0)))
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(range(n), labels[:n], fontsize=8)
    ax.set_xlim(0, rec[:, 4].max() / 1e9)
    ax.set_xlabel("time (s)")
    ax.legend(
        handles=[Patch(color=colors.get(s), label=names.get(s, str(s))) for s in shown]
        + [Patch(color=colors.get(0), label=names.get(0, "Idle"))],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
    )
    ax.set_title(
        args.title or f"{Path(base).name}.prv: states per thread (rendered with matplotlib, not Paraver)", fontsize=10
    )
    fig.tight_layout()
    args.png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png)


if __name__ == "__main__":
    main()

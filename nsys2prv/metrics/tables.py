"""POP tables: text (printed), JSON, CSV, Markdown, LaTeX (booktabs) and PNG (optional matplotlib).

A table is metrics as rows and columns as runs (or, for one conversion, the analysed scopes:
whole trace, --region, --iterations steady state).  Efficiencies are printed as percentages
(CSV keeps fractions); "n/a" marks metrics that are not available.
"""

from __future__ import annotations

import csv
import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

ROWS = [  # key, label, indent, kind
    ("device.global_efficiency", "Device Global efficiency", 0, "pct"),
    ("device.parallel_efficiency", "Device Parallel efficiency", 1, "pct"),
    ("device.load_balance", "Device Load balance", 2, "pct"),
    ("device.communication_efficiency", "Device Communication efficiency", 2, "pct"),
    ("device.orchestration_efficiency", "Device Orchestration efficiency", 2, "pct"),
    ("device.computation_scalability", "Device Computation scalability", 1, "pct"),
    ("host.global_efficiency", "Host Global efficiency", 0, "pct"),
    ("host.parallel_efficiency", "Host Parallel efficiency", 1, "pct"),
    ("host.mpi_parallel_efficiency", "MPI Parallel efficiency", 2, "pct"),
    ("host.mpi_load_balance", "MPI Load balance", 3, "pct"),
    ("host.mpi_load_balance_in", "MPI Load balance in (intra-node)", 4, "pct"),
    ("host.mpi_load_balance_out", "MPI Load balance out (inter-node)", 4, "pct"),
    ("host.mpi_communication_efficiency", "MPI Communication efficiency", 3, "pct"),
    ("host.serialization_efficiency", "Serialization efficiency", 4, "pct"),
    ("host.transfer_efficiency", "Transfer efficiency", 4, "pct"),
    ("host.device_offload_efficiency", "Device Offload efficiency", 2, "pct"),
    ("host.computation_scalability", "Host Computation scalability", 1, "pct"),
    ("speedup", "Speedup", 0, "x"),
    ("efficiency", "Efficiency", 0, "pct"),
    ("elapsed_s", "Elapsed time (s)", 0, "sec"),
    ("device.count", "GPUs", 0, "int"),
    ("host.count", "Host processes", 0, "int"),
]
OPTIONAL_ROWS = ("speedup", "efficiency")  # shown only when some column has them


def column(scope: dict, header: str) -> dict:
    """{header, values: key -> number or None} from a scope dict (trace, region or run)."""
    vals: dict[str, Any] = {}
    for key, *_ in ROWS:
        if key == "elapsed_s":
            vals[key] = scope["elapsed_ns"] / 1e9
            continue
        obj: Any = scope
        for part in key.split("."):
            obj = obj.get(part) if isinstance(obj, dict) else None
        vals[key] = obj if isinstance(obj, (int, float)) and not (isinstance(obj, float) and math.isnan(obj)) else None
    return {"header": header, "values": vals}


def single_run_columns(res: dict) -> list[dict]:
    cols = [column(res, "trace")]
    for reg in res.get("regions", []):
        cols.append(column(reg, reg["name"]))
    return cols


def visible_rows(cols: list[dict]):
    """The rows a table of these columns shows: (key, label, indent, kind)."""
    for key, label, indent, kind in ROWS:
        if key in OPTIONAL_ROWS and all(c["values"].get(key) is None for c in cols):
            continue
        yield key, label, indent, kind


def fmt(v, kind: str, pct_sign: str = "%") -> str:
    if v is None:
        return "n/a"
    if kind == "pct":
        return f"{100 * v:.2f}{pct_sign}"
    if kind == "sec":
        return f"{v:.6g}"
    if kind == "x":
        return f"{v:.2f}"
    return str(int(v))


def text_table(cols: list[dict], title: str = "POP metrics") -> str:
    width = max(len(l) + 2 * i for _, l, i, _ in ROWS) + 2
    cw = [max(10, len(c["header"]) + 1) for c in cols]
    lines = [title, " " * width + "".join(f"{c['header']:>{w}}" for c, w in zip(cols, cw))]
    for key, label, indent, kind in visible_rows(cols):
        name = ("  " * indent + label).ljust(width)
        lines.append(name + "".join(f"{fmt(c['values'][key], kind):>{w}}" for c, w in zip(cols, cw)))
    return "\n".join(lines)


def _markdown_cell(s: str) -> str:
    """Text for one Markdown table cell or heading: ``|`` escaped, a line break shown as ``<br>`` (an
    NVTX name of --region/--iterations may hold either; raw, they split the row or end the table)."""
    s = str(s).replace("\\", "\\\\").replace("|", "\\|")
    return s.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")


def markdown_table(cols: list[dict], caption: str = "") -> str:
    out = ["| Metric | " + " | ".join(_markdown_cell(c["header"]) for c in cols) + " |", "|---|" + "---:|" * len(cols)]
    for key, label, indent, kind in visible_rows(cols):
        out.append(
            f"| {'&emsp;' * indent}{_markdown_cell(label)} | "
            + " | ".join(fmt(c["values"][key], kind) for c in cols)
            + " |"
        )
    if caption:
        out += ["", caption]
    return "\n".join(out) + "\n"


def _tex(s: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\^{}"),
    ):
        s = s.replace(a, b) if a != "\\" else s.replace(a, "\0")
    return s.replace("\0", r"\textbackslash{}")


def _comment_block(text: str, width: int = 100) -> list[str]:
    """``text`` as LaTeX comment lines (``% ...``), wrapped at ``width``."""
    return ["% " + line for line in textwrap.wrap(" ".join(text.split()), width - 2)]


def _tex_header(text: str, width: int = 12) -> str:
    """A column header, on several lines (a nested tabular, plain LaTeX) when it is long: broken at
    spaces and after "..", so that a few columns fit an article's text width."""
    words = [w for part in text.split(" ") for w in re.split(r"(?<=\.\.)", part) if w]
    lines: list[str] = []
    for w in words:
        glue = "" if lines and lines[-1].endswith("..") else " "
        if lines and len(lines[-1]) + len(glue) + len(w) <= width:
            lines[-1] += glue + w
        else:
            lines.append(w)
    if len(lines) <= 1:
        return _tex(text)
    return r"\begin{tabular}[b]{@{}r@{}}" + r" \\ ".join(_tex(x) for x in lines) + r"\end{tabular}"


def latex_table(cols: list[dict], caption: str = "", label: str = "tab:pop", short: str = "") -> str:
    """The table as a LaTeX ``table`` float (booktabs, nothing else: plain ``pdflatex`` compiles it
    with ``\\usepackage{booktabs}``).  ``short``: its caption; ``caption``: the long explanation, written
    as a comment block above the table (for the paper's text), and the caption when ``short`` is empty."""
    out = [
        r"% POP metrics written by nsys2prv; needs \usepackage{booktabs} (no other package):",
        r"%   \documentclass{article} \usepackage{booktabs} \begin{document} \input{THIS FILE} \end{document}",
    ]
    if caption and short:
        out += ["%", *_comment_block(caption)]
    out += [r"\begin{table}[htbp]", r"\centering", r"\small"]
    if short or caption:
        out.append(r"\caption{" + _tex(short or caption) + "}")
    out.append(r"\label{" + label + "}")
    out += [
        r"\begin{tabular}{l" + "r" * len(cols) + "}",
        r"\toprule",
        "Metric & " + " & ".join(_tex_header(c["header"]) for c in cols) + r" \\",
        r"\midrule",
    ]
    prev_tree = None
    for key, label, indent, kind in visible_rows(cols):
        tree = key.split(".")[0] if "." in key and not key.endswith(".count") else "other"
        if prev_tree is not None and tree != prev_tree:
            out.append(r"\midrule")
        prev_tree = tree
        pad = rf"\hspace{{{indent}em}}" if indent else ""
        out.append(pad + _tex(label) + " & " + " & ".join(fmt(c["values"][key], kind, r"\%") for c in cols) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def write_csv(cols: list[dict], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "label", *[c["header"] for c in cols]])
        for key, label, _, kind in visible_rows(cols):
            w.writerow(
                [
                    key,
                    label,
                    *[
                        ""
                        if c["values"][key] is None
                        else (f"{c['values'][key]:.6f}" if kind != "int" else int(c["values"][key]))
                        for c in cols
                    ],
                ]
            )


def write_iterations_csv(res: dict, path: Path) -> bool:
    it = res.get("iterations")
    if not it:
        return False
    keys = [k for k, *_ in ROWS if k not in OPTIONAL_ROWS]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["iteration", "start_ns", "end_ns", *keys])
        for row in it["table"]:
            v = column(row, "")["values"]
            w.writerow(
                [row["index"], row["start_ns"], row["end_ns"], *["" if v[k] is None else f"{v[k]:.6f}" for k in keys]]
            )
    return True


def colour(v, kind: str) -> str:
    """POP convention: >= 80% good (green), 60-80% fair (yellow), < 60% poor (red)."""
    if v is None or kind not in ("pct",):
        return "#eeeeee"
    return "#8fd18f" if v >= 0.8 else "#f5e17a" if v >= 0.6 else "#f08c8c"


def write_png(cols: list[dict], path: Path, title: str = "") -> str | None:
    """The coloured table as a PNG; returns a note instead when matplotlib is missing."""
    try:  # optional dependency (extra "plot")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # after choosing the Agg backend
    except ImportError:
        return f"{path.name} not written: matplotlib is not installed (pip install matplotlib)"
    rows = list(visible_rows(cols))
    label_w, col_w = 3.2, 1.6  # inches
    fig_w = label_w + col_w * len(cols)
    fig, ax = plt.subplots(figsize=(fig_w, 0.26 * (len(rows) + 2)))
    ax.axis("off")
    cell = [[fmt(c["values"][k], kind) for c in cols] for k, _, _, kind in rows]
    colours = [[colour(c["values"][k], kind) for c in cols] for k, _, _, kind in rows]
    table = ax.table(
        cellText=cell,
        cellColours=colours,
        rowLabels=["  " * i + l for _, l, i, _ in rows],
        colLabels=[c["header"] for c in cols],
        cellLoc="right",
        rowLoc="left",
        bbox=[label_w / fig_w, 0, 1 - label_w / fig_w, 1],
    )
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    if title:
        ax.set_title(title, fontsize=9)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return None


def short_caption(title: str, cols: list[dict]) -> str:
    """A table's caption for a paper: its title and what its columns are (the long explanation,
    ``caption``, goes beside it: a comment block in the .tex, a paragraph under the .md table)."""
    heads = [c["header"] for c in cols]
    text = title
    if heads and heads[0] == "trace" and len(heads) > 1:
        text += f". Columns: trace (the whole run), {', '.join(heads[1:])}"
    return text + "."


def caption(res: dict, scaling: str | None = None, reference: str | None = None) -> str:
    rule = res.get("nccl_as", "communication")
    text = (
        "Device metrics after per-GPU union of kernel intervals over streams; data movement = memcpy/memset"
        + (" and NCCL kernels" if rule == "communication" else "")
        + " not overlapped by compute kernels"
        + ("; NCCL kernels counted as useful" if rule == "useful" else "")
        + ". T = the run's elapsed time (first to last activity of the processes, whatever was "
        "translated into the trace) or a region's total length; time a process is not alive is not "
        "useful. Max terms over "
        "physical GPUs. Host useful time = time outside MPI and CUDA API calls (upper bound). "
        "SerE = max OutsideMPI / T_ideal, TrfE = T_ideal / T, T_ideal from an ideal-network replay of the "
        "MPI calls. Host and device trees are not multiplied."
    )
    if scaling:
        text += f" Scaling mode: {scaling} (stated, not detected); reference = {reference}."
    for reg in res.get("regions", []):
        if reg.get("kind") == "steady":
            text += " " + steady_text(reg)
    return text


def steady_text(reg: dict) -> str:
    """What the steady-state column is and why it is there (printed under the table, in captions)."""
    lo, hi = reg["windows_ns"][0]
    return (
        f"Column '{reg['name']}' ({(hi - lo) / 1e9:.6f} s, trace time {lo / 1e9:.6f} .. {hi / 1e9:.6f} s): "
        "from the end of the first MPI_Init to the start of the last MPI_Finalize (TALP's window), shown "
        f"because {reg['reason']}; the 'trace' column is the whole run."
    )


def write_all(res: dict, cols: list[dict], base: Path, title: str, cap: str) -> tuple[list[str], list[str]]:
    """OUT.pop.{json,csv,md,tex,png} (+ OUT.pop.iterations.csv).  Returns (paths written, notes)."""
    stem = base.with_name(base.name + ".pop")
    paths, notes = [], list(res.get("warnings") or [])  # (a scalability table's warnings about its runs)
    p = Path(str(stem) + ".json")
    p.write_text(json.dumps(res, indent=2, default=json_default), encoding="utf-8")
    paths.append(str(p))
    p = Path(str(stem) + ".csv")
    write_csv(cols, p)
    paths.append(str(p))
    p = Path(str(stem) + ".iterations.csv")
    if write_iterations_csv(res, p):
        paths.append(str(p))
    p = Path(str(stem) + ".md")
    p.write_text(f"### {_markdown_cell(title)}\n\n" + markdown_table(cols, cap), encoding="utf-8")
    paths.append(str(p))
    p = Path(str(stem) + ".tex")
    p.write_text(latex_table(cols, cap, short=short_caption(title, cols)), encoding="utf-8")
    paths.append(str(p))
    p = Path(str(stem) + ".png")
    note = write_png(cols, p, title)
    if note:
        notes.append(note)
    else:
        paths.append(str(p))
    return paths, notes


def json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def na_reasons(res: dict) -> list[str]:
    """Why the printed n/a are n/a: one line per reason, naming the metrics (and the columns of
    the table it holds for, when not all)."""
    scopes = [("trace", res)] + [(r["name"], r) for r in res.get("regions", [])]
    labels = {key: label for key, label, *_ in ROWS}
    found: dict[str, dict[str, list[str]]] = {}  # reason -> metric label -> columns
    for header, scope in scopes:
        values = column(scope, header)["values"]
        for tree in ("device", "host"):
            na = (scope.get(tree) or {}).get("not_available")
            if isinstance(na, str):
                na = {"all": na}
            for key, why in (na or {}).items():
                if key == "all":
                    names = [f"every {tree} metric"]
                else:
                    names = [labels[f"{tree}.{key}"]] if values.get(f"{tree}.{key}") is None else []
                for n in names:
                    found.setdefault(why, {}).setdefault(n, []).append(header)
    out = []
    for why, metrics in found.items():
        cols = sorted({c for cs in metrics.values() for c in cs}, key=[h for h, _ in scopes].index)
        where = "" if len(cols) == len(scopes) else f" [{', '.join(cols)}]"
        out.append(f"{', '.join(metrics)}{where}: {why}")
    return out


def elapsed_text(res: dict, trace_ns: int | None = None) -> str:
    """What T is, with the Paraver trace's length beside it when given."""
    scope = res.get("scope") or {}
    where = f" inside the -f window of NVTX range '{scope['filter_nvtx']}'" if scope.get("filter_nvtx") else ""
    lo, hi = scope.get("start_ns", 0) / 1e9, scope.get("end_ns", 0) / 1e9
    text = (
        f"  T = {res['elapsed_ns'] / 1e9:.6f} s: the run's elapsed time (first to last activity of the "
        f"processes{where}, trace time {lo:.6f} .. {hi:.6f} s)"
    )
    if trace_ns is not None:
        if scope.get("filter_nvtx"):
            text += (
                f"; the Paraver trace is {trace_ns / 1e9:.6f} s long (from its time 0, the -f window start, "
                "to its last record)"
            )
        elif lo == 0 and trace_ns == scope.get("end_ns"):
            text += "; the Paraver trace spans exactly T"
        else:
            text += (
                f"; the Paraver trace is {trace_ns / 1e9:.6f} s long (from its time 0 to its last record: "
                "records outside the POP processes' lifetimes, or --time-origin session)"
            )
    return text


def advice_text(items: list[dict]) -> str:
    return "\n".join(f"  - {a['message']}" for a in items)


__all__ = [
    "ROWS",
    "column",
    "single_run_columns",
    "text_table",
    "markdown_table",
    "latex_table",
    "write_csv",
    "write_png",
    "write_all",
    "caption",
    "advice_text",
    "colour",
    "na_reasons",
    "elapsed_text",
    "steady_text",
]

"""The text of a Paraver view (.cfg) from its description (cfg_model.py), as paraver-kernel's
loader (``api/cfg.cpp``) reads it and in the order its saver writes the keys.

Windows are numbered by their order in the file (``window_id`` is written for humans, the loader
counts), a derived window names its two parents by that number (``window_identifiers``), and a 2D
analyzer names its control and data windows the same way.  ``window_filter_module evt_type N ids``
is followed by ``evt_type_label N "labels"``, as Paraver writes it itself: when a label matches a
type of the loaded trace, Paraver uses that type's id, so a view keeps working if ids move.

Value ranges and colours (issue 36): a window of names or kinds (code colours) gets the largest value
it can show as its maximum -- the registry's for a type with a fixed value list, the trace's .pcf
for a view rendered for one trace, else Paraver computes it when it loads the view
(``window_compute_y_max``) -- because Paraver draws a value above the maximum as background.  Values
the code palette would draw black or white get colours of their own (palette.py) -- in a view rendered
for a trace every name (call, kernel, range) gets a distinct one --, and a state
view's Idle (0) its customary light blue instead of the black of "no data".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nsys2prv.core import registry as R
from nsys2prv.model.resources import row_kind
from nsys2prv.paraver import palette
from nsys2prv.paraver.cfg_model import COMM_STATISTICS, US, Histogram, View, Window
from nsys2prv.paraver.text_width import text_px

FULL_SCALE = "1.000000000000"
ZERO = "0.000000000000"
_BAR = "#" * 80
# Values of a type of names (kernels, calls, ranges) a shipped view gives readable colours to; a view
# rendered for a trace (--cfgs) covers exactly the values of its .pcf.
NAME_VALUES = 512
ROW_PX = 16  # Paraver draws a row label when the row is at least this tall
WIDTH, SHIPPED_HEIGHT, MIN_HEIGHT, MAX_HEIGHT = 800, 400, 115, 1000
# A histogram's table (wxparaver's grid): rows and columns of these sizes, a row-label column, the
# window's toolbar and header above them and its 7 statistics rows (Total .. Avg/Max) below; a view
# rendered for a trace opens with every row and column in sight, up to the maximum size.
TABLE_ROW_PX, TABLE_COL_PX, TABLE_LABEL_PX, TABLE_EXTRA_PX = 24, 120, 240, 300
TABLE_MAX_WIDTH, TABLE_MIN_WIDTH = 1600, 690  # (the least: wxparaver's histogram toolbar, every button)
# ... sized from its texts (text_width.text_px): the window's border left of the table and its vertical
# scroll bar and border right of it; the statistics rows' labels; the statistics whose cells are times.
TABLE_CHROME_PX = 48
STATISTICS_ROWS = ("Total", "Average", "Maximum", "Minimum", "StDev", "Avg/Max")
TIME_STATISTICS = frozenset({"Time", "Average Burst Time"})
STATE_FUNCTIONS = frozenset({"State As Is"})


@dataclass(frozen=True)
class TraceInfo:
    """What a view rendered for one trace knows of it: the values of each event type its .pcf lists
    (and their names), the number of rows per level (thread, task, node); per task, its threads' row
    labels; the trace's duration."""

    values: dict[int, frozenset[int]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    tasks: tuple[tuple[str, ...], ...] = ()
    names: dict[int, dict[int, str]] = field(default_factory=dict)  # type -> {value: its .pcf name}
    duration_ns: int = 0  # the trace's (its .prv header's; 0: not known)


def _f(x: float) -> str:
    return f"{x:.12f}"


def type_label(type_id: int) -> str | None:
    """The .pcf label of a type the writer defines for every trace, else None."""
    t = R.BY_ID.get(type_id)
    return t.label if t else None


def _labels(w: Window) -> list[str] | None:
    found = list(w.labels) if w.labels is not None else [type_label(t) for t in w.types]
    labels = [lab for lab in found if lab is not None and '"' not in lab]
    return labels if labels and len(labels) == len(found) else None


def window_values(w: Window, info: TraceInfo | None) -> frozenset[int] | None:
    """Every value a code-colour window can show (None: not bounded here -- names the shipped view
    cannot know, numbers, derived windows); a state view: the registry's states."""
    if w.operation is not None:
        return None
    if not w.types:
        return frozenset(R.STATES) if w.thread in STATE_FUNCTIONS else None
    out: set[int] = set()
    for t in w.types:
        if info is not None and info.values.get(t):  # a type of numbers has no VALUES
            out |= info.values[t]
            continue
        et = R.BY_ID.get(t)
        if et is None or et.kind != "static":
            return None
        out |= set(et.values)
    return frozenset(out)


def y_range(w: Window, info: TraceInfo | None) -> tuple[float, bool]:
    """(window_maximum_y, window_compute_y_max): a gradient is computed by Paraver over the values
    drawn; a code-colour window covers every value it can show."""
    if w.gradient:
        return (w.maximum_y if w.maximum_y is not None else 1.0), True
    if w.maximum_y is not None:
        return w.maximum_y, False
    values = window_values(w, info)
    if values is None:
        return float(NAME_VALUES), True
    return float(max(values, default=1) or 1), False


def colours(w: Window, info: TraceInfo | None) -> dict[int, tuple[int, int, int]]:
    if w.gradient:
        return {}
    if w.compose_thread not in ("As Is", "Stacked Val") or w.top != "As Is":
        return {}  # Sign, 1-Sign: 0 or 1
    values = window_values(w, info)
    if values is None:
        values = frozenset(range(1, NAME_VALUES + 1)) if w.maximum_y is None else frozenset({1})
    zero = palette.IDLE if w.operation is None and not w.types and w.thread in STATE_FUNCTIONS else None
    if info is not None and w.types and all(_names(t, info) for t in w.types):
        return palette.distinct_colors(values) or palette.custom_colors(values, zero)
    return palette.custom_colors(values, zero)


def _names(type_id: int, info: TraceInfo) -> bool:
    """A type of names (calls, kernels, ranges) whose values the trace's .pcf lists."""
    et = R.BY_ID.get(type_id)
    return bool(info.values.get(type_id)) and (et is None or et.kind != "static")


def shown_rows(w: Window, info: TraceInfo | None) -> int:
    """The rows ``w`` shows in the trace of ``info`` (0: not known)."""
    rows = (info.rows.get(w.level) if info is not None else None) or 0
    if rows and w.rows and w.level == "thread" and info is not None and info.tasks:
        rows = sum(row_kind(lab) in w.rows for labels in info.tasks for lab in labels)
    return rows


def height(w: Window, info: TraceInfo | None, extra: int = 40) -> int:
    rows = shown_rows(w, info)
    if not rows:
        return SHIPPED_HEIGHT
    return max(MIN_HEIGHT, min(MAX_HEIGHT, rows * ROW_PX + extra))


def row_selection(w: Window, info: TraceInfo | None) -> list[str]:
    """``window_object thread`` lines (as Paraver saves a selection: 0-based application and task, one
    1/0 per thread of the task) for the tasks where ``w.rows`` leaves rows out; none without the
    trace's rows, or when every row is shown."""
    if not w.rows or info is None or not info.tasks or w.level != "thread":
        return []
    out = []
    for task, labels in enumerate(info.tasks):
        shown = [row_kind(lab) in w.rows for lab in labels]
        if not all(shown):
            flags = ", ".join("1" if x else "0" for x in shown)
            out.append(f"window_object thread {{ 0, {task}, {len(shown)}, {{ {flags} }} }}")
    return out


def _window(w: Window, number: int, units: str, info: TraceInfo | None) -> list[str]:
    lines = [_BAR, f"< NEW DISPLAYING WINDOW {w.name} >", _BAR, f"window_name {w.name}"]
    derived = w.operation is not None
    lines.append(f"window_type {'composed' if derived else 'single'}")
    lines.append(f"window_id {number}")
    if derived:
        assert w.parents is not None, f"derived window {w.name} without parents"
        lines += [
            f"window_factors {FULL_SCALE} {FULL_SCALE}",
            f"window_operation {w.operation}",
            f"window_identifiers {w.parents[0]} {w.parents[1]}",
        ]
    lines += [
        "window_position_x 0",
        f"window_position_y {30 * (number - 1)}",
        f"window_width {WIDTH}",
        f"window_height {height(w, info)}",
        f"window_comm_lines_enabled {'true' if w.comm_lines else 'false'}",
        "window_flags_enabled false",
        "window_noncolor_mode true",
    ]
    if w.gradient:  # 0 (no value: between events, rows without the type) drawn as background
        lines.append("window_color_mode window_in_null_gradient_mode")
    custom = colours(w, info)
    if custom:
        lines.append("window_custom_color_enabled true")
        lines.append(
            "window_custom_color_palette " + ",".join(f"{{{v}:{r},{g},{b}}}" for v, (r, g, b) in sorted(custom.items()))
        )
    if not derived:
        lines += [
            "window_logical_filtered true",
            "window_physical_filtered false",
            "window_comm_fromto true",
            "window_comm_tagsize true",
            "window_comm_typeval true",
        ]
    maximum, compute = y_range(w, info)
    lines += [
        f"window_units {units}",
        f"window_maximum_y {_f(maximum)}",
        f"window_minimum_y {ZERO}",
        f"window_compute_y_max {'true' if compute else 'false'}",
        f"window_level {w.level}",
        f"window_scale_relative {FULL_SCALE}",
        f"window_end_time_relative {FULL_SCALE}",
        "window_object appl { 1, { All } }",
        *row_selection(w, info),
        f"window_begin_time_relative {ZERO}",
        f"window_open {'true' if w.open else 'false'}",
        "window_drawmode draw_maximum",
        "window_drawmode_rows draw_maximum",
        "window_pixel_size 1",
        "window_labels_to_draw 1",
    ]
    if derived:
        lines.append(
            "window_selected_functions { 5, { {appl, Adding}, {task, "
            + w.task
            + "}, {node, "
            + w.node
            + "}, {system, Adding}, {workload, Adding}, } }"
        )
    else:
        evt_type = "=" if w.types else "All"
        evt_value = "=" if w.values else "All"
        tag = w.tag_function if w.tags else "All"
        lines.append(
            "window_selected_functions { 14, { {cpu, Active Thd}, {appl, Adding}, "
            f"{{task, {w.task}}}, {{thread, {w.thread}}}, {{node, {w.node}}}, {{system, Adding}}, "
            "{workload, Adding}, {from_obj, All}, {to_obj, All}, "
            f"{{tag_msg, {tag}}}, {{size_msg, All}}, {{bw_msg, All}}, {{evt_type, {evt_type}}}, "
            f"{{evt_value, {evt_value}}} }} }}"
        )
    lines.append(
        "window_compose_functions { 9, { {compose_cpu, As Is}, {compose_appl, As Is}, "
        f"{{compose_task, As Is}}, {{compose_thread, {w.compose_thread}}}, {{compose_node, As Is}}, "
        f"{{compose_system, As Is}}, {{compose_workload, As Is}}, {{topcompose1, {w.top}}}, "
        "{topcompose2, As Is} } }"
    )
    if not derived:
        if w.tags:
            lines.append(f"window_filter_module tag_msg {len(w.tags)} " + " ".join(map(str, w.tags)))
        if w.types:
            lines.append(f"window_filter_module evt_type {len(w.types)} " + " ".join(map(str, w.types)))
            labels = _labels(w)
            if labels:
                lines.append(
                    f"window_filter_module evt_type_label {len(labels)} " + " ".join(f'"{lab}"' for lab in labels)
                )
        if w.values:
            lines.append(f"window_filter_module evt_value {len(w.values)} " + " ".join(map(str, w.values)))
    return lines + [""]


def column_labels(w: Window, info: TraceInfo | None) -> list[str] | None:
    """The column labels of a histogram whose control window is ``w``: one per value it can show but 0
    (Paraver leaves value 0 out of a histogram), named as the .pcf (or the registry) names it; a window
    of 0 and 1 (inside a call, Sign): the column "1"; None: not known here."""
    if w.maximum_y == 1.0 and not w.gradient:
        return ["1"]
    if w.compose_thread not in ("As Is", "Stacked Val") or w.top != "As Is":
        return None
    values = window_values(w, info)
    if values is None:
        return None
    names: dict[int, str] = dict(R.STATES) if not w.types else {}
    for t in w.types:
        et = R.BY_ID.get(t)
        names |= (info.names.get(t) if info is not None else None) or (et.values if et is not None else {})
    return [names.get(v) or str(v) for v in sorted(values) if v != 0]


def row_labels(w: Window, info: TraceInfo | None) -> list[str]:
    """The labels of the rows a thread-level window shows (none: not known here)."""
    if info is None or w.level != "thread":
        return []
    return [lab for labels in info.tasks for lab in labels if not w.rows or row_kind(lab) in w.rows]


def number_text(h: Histogram, units: str, info: TraceInfo | None) -> str:
    """The widest number a cell of ``h`` is taken to hold, as wxparaver writes it (two decimals; ns times
    are whole but their Average and StDev): a time, the trace's duration -- what a row, and the Average,
    Maximum, Minimum and StDev rows, can hold at most (the Total row can hold more: a column whose total
    is longer than the run is drawn wider, the others' slack makes up for it); a count or a size (not
    bounded here), eight digits."""
    if h.statistic in TIME_STATISTICS and info is not None and info.duration_ns:
        most = info.duration_ns / (1000 if units == US else 1)
        return f"{most:,.2f} {'us' if units == US else 'ns'}"
    return "99,999,999.00"


def table_size(h: Histogram, windows: tuple[Window, ...], info: TraceInfo | None, units: str = US) -> tuple[int, int]:
    """(width, height) of a histogram's window: the shipped size, or for a view rendered for a trace
    one that shows its rows (the .row's objects of the level) and columns (the values the control
    window can show, or the rows again for a communication matrix) without scrolling: as wide as
    wxparaver draws its row labels and every column (its label or its widest number,
    ``text_width.text_px``), when the trace says what they are; else 120 px a column."""
    control = windows[h.control - 1]
    rows = shown_rows(control, info)
    if not rows:
        return WIDTH, SHIPPED_HEIGHT
    labels = row_labels(control, info)
    if h.statistic in COMM_STATISTICS:  # a column per partner: any row of the level
        columns = (info.rows.get(control.level) if info is not None else None) or rows
        names = [lab for task in info.tasks for lab in task] if info is not None and labels else None
        if names is not None and h.hide_cols and control.rows:  # (the launch matrix: CPU rows, stream columns)
            names = [lab for lab in names if row_kind(lab) not in control.rows]
    else:
        names = column_labels(control, info)
        values = window_values(control, info)
        columns = len(names) if names is not None else len(values) if values is not None else 0
    if names is not None and labels:
        number = text_px(number_text(h, units, info), bold=False)
        label_px = max(text_px(lab, bold=True) for lab in [*labels, *STATISTICS_ROWS])
        width = TABLE_CHROME_PX + label_px + sum(max(text_px(n, bold=True), number) for n in names)
    else:
        width = TABLE_LABEL_PX + columns * TABLE_COL_PX if columns else WIDTH
    return (
        max(TABLE_MIN_WIDTH, min(TABLE_MAX_WIDTH, width)),
        max(MIN_HEIGHT, min(MAX_HEIGHT, rows * TABLE_ROW_PX + TABLE_EXTRA_PX)),
    )


def _histogram(h: Histogram, windows: tuple[Window, ...], info: TraceInfo | None, units: str) -> list[str]:
    """A histogram that opens as a table of numbers (Zoom disabled), sized to its rows and columns,
    empty columns hidden but in a communication matrix."""
    comm = h.statistic in COMM_STATISTICS
    control = windows[h.control - 1]
    width, tall = table_size(h, windows, info, units)
    return [
        "< NEW ANALYZER2D >",
        f"Analyzer2D.Name: {h.name}",
        "Analyzer2D.X: 0",
        "Analyzer2D.Y: 0",
        f"Analyzer2D.Width: {width}",
        f"Analyzer2D.Height: {tall}",
        f"Analyzer2D.ControlWindow: {h.control}",
        f"Analyzer2D.DataWindow: {h.data}",
        f"Analyzer2D.Accumulator: {control.level.capitalize() if comm else 'Semantic'}",
        f"Analyzer2D.Statistic: {h.statistic}",
        "Analyzer2D.CalculateAll: True",
        # (a matrix keeps its thread x thread square, unless its rows are a selection)
        f"Analyzer2D.HideCols: {(not comm) if h.hide_cols is None else h.hide_cols}",
        "Analyzer2D.HorizVert: Horizontal",
        "Analyzer2D.Color: True",
        "Analyzer2D.SemanticColor: False",
        "Analyzer2D.Zoom: Disabled",
        "Analyzer2D.SortCols: False",
        "Analyzer2D.SortCriteria: Average",
        "Analyzer2D.AnalysisLimits: Alltrace",
        "Analyzer2D.ComputeYScale: True",
        "Analyzer2D.Minimum: 0",
        "Analyzer2D.Maximum: 20",
        "Analyzer2D.Delta: 1",
        "Analyzer2D.ComputeGradient: True",
        "Analyzer2D.PixelSize: 1",
        "Analyzer2D.ShowOnlyTotals: False",
        "Analyzer2D.ShortHeaderLabels: False",
        "",
    ]


def render(view: View, info: TraceInfo | None = None) -> str:
    """The .cfg text of ``view``; given ``info``, fitted to that trace (ranges, colours, sizes)."""
    lines = [
        "#ParaverCFG",
        "ConfigFile.Version: 3.4",
        f"ConfigFile.NumWindows: {len(view.windows)}",
        "ConfigFile.BeginDescription",
        *view.description.strip().splitlines(),
        "ConfigFile.EndDescription",
        "",
    ]
    for i, w in enumerate(view.windows, 1):
        lines += _window(w, i, view.units, info)
    for h in view.histograms:
        lines += _histogram(h, view.windows, info, view.units)
    return "\n".join(lines) + "\n"

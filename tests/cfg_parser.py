"""A strict reader of Paraver .cfg files as nsys2prv writes them.

Grammar: docs/trace-content.md (the working example loaded by paramedir) and the loader of BSC's
paraver-kernel (api/cfg.cpp, api/paraverlabels.h): windows are counted in file order (1-based),
derived windows and 2D analyzers refer to earlier windows by that number, a filter line is
``window_filter_module KIND COUNT item...`` with COUNT items, a window's semantic functions must be
names the kernel knows (an unknown name makes Paraver drop the window).  The key set and order of
each block mirror what Paraver's own saver writes.  Independent of nsys2prv's generator on purpose.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# Names from paraver-kernel's semantic function factory and histogram statistics.
THREAD_FUNCTIONS = {
    "State As Is",
    "Useful",
    "State Sign",
    "Given State",
    "In State",
    "Not In State",
    "State Record Dur.",
    "Last Evt Type",
    "Last Evt Val",
    "Next Evt Type",
    "Next Evt Val",
    "Avg Next Evt Val",
    "Avg Last Evt Val",
    "Given Evt Val",
    "In Evt Val",
    "Int. Between Evt",
    "Not In Evt Val",
    "In Evt Range",
    "Event Bytes",
    "Last Tag",
    "Comm Size",
    "Comm Recv. Partner",
    "Comm Partner",
    "Last Send Dur.",
    "Next Recv Dur.",
    "Send Bytes in Transit",
    "Send Messages in Transit",
    "Send BandWidth",
    "Recv Bytes in Transit",
    "Recv Messages in Transit",
    "Recv BandWidth",
    "Number Of Receives",
    "Number Of Receive Bytes",
}
EVENT_FUNCTIONS = {
    "Last Evt Type",
    "Last Evt Val",
    "Next Evt Type",
    "Next Evt Val",
    "Avg Next Evt Val",
    "Avg Last Evt Val",
    "Given Evt Val",
    "In Evt Val",
    "Int. Between Evt",
    "Not In Evt Val",
    "In Evt Range",
    "Event Bytes",
}
AGGREGATE = {"Adding", "Adding Sign", "Average", "Maximum", "Minimum", "Activity", "In Activity", "Mode"}
CPU_FUNCTIONS = {"Active Thd", "Active Thd Sign", "Active Thd Val", "Active Thd Val Sign"}
COMPOSE = {
    "As Is",
    "Sign",
    "1-Sign",
    "Mod",
    "Mod+1",
    "Div",
    "Prod",
    "Add",
    "Subs",
    "Select Range",
    "Is In Range",
    "Is Equal",
    "Is Equal (Sign)",
    "Stacked Val",
    "In Stacked Val",
    "Nesting level",
    "Delta",
    "Burst Time",
    "Join Bursts",
}
DERIVED_OPS = {"add", "product", "substract", "divide", "maximum", "minimum"}
FILTER_FUNCTIONS = {"All", "None", "=", "!="}
STATISTICS = {
    "Time",
    "# Bursts",
    "Average value",
    "Average Burst Time",
    "Sum bursts",
    "Maximum",
    "#Sends",
    "#Receives",
    "Bytes sent",
}
UNITS = {"Nanoseconds", "Microseconds", "Milliseconds", "Seconds", "Minutes", "Hours", "Days"}
LEVELS = {"thread", "task", "appl", "workload", "node", "system", "cpu"}

SINGLE_KEYS = [
    "window_name",
    "window_type",
    "window_id",
    "window_position_x",
    "window_position_y",
    "window_width",
    "window_height",
    "window_comm_lines_enabled",
    "window_flags_enabled",
    "window_noncolor_mode",
    "?window_color_mode",
    "?window_custom_color_enabled",
    "?window_custom_color_palette",
    "window_logical_filtered",
    "window_physical_filtered",
    "window_comm_fromto",
    "window_comm_tagsize",
    "window_comm_typeval",
    "window_units",
    "window_maximum_y",
    "window_minimum_y",
    "window_compute_y_max",
    "window_level",
    "window_scale_relative",
    "window_end_time_relative",
    "window_object",
    "*window_object",
    "window_begin_time_relative",
    "window_open",
    "window_drawmode",
    "window_drawmode_rows",
    "window_pixel_size",
    "window_labels_to_draw",
    "window_selected_functions",
    "window_compose_functions",
    "*window_semantic_module",
    "*window_filter_module",
]
DERIVED_KEYS = [
    "window_name",
    "window_type",
    "window_id",
    "window_factors",
    "window_operation",
    "window_identifiers",
    "window_position_x",
    "window_position_y",
    "window_width",
    "window_height",
    "window_comm_lines_enabled",
    "window_flags_enabled",
    "window_noncolor_mode",
    "?window_color_mode",
    "?window_custom_color_enabled",
    "?window_custom_color_palette",
    "window_units",
    "window_maximum_y",
    "window_minimum_y",
    "window_compute_y_max",
    "window_level",
    "window_scale_relative",
    "window_end_time_relative",
    "window_object",
    "window_begin_time_relative",
    "window_open",
    "window_drawmode",
    "window_drawmode_rows",
    "window_pixel_size",
    "window_labels_to_draw",
    "window_selected_functions",
    "window_compose_functions",
    "*window_semantic_module",
]
ANALYZER_KEYS = [
    "Name",
    "X",
    "Y",
    "Width",
    "Height",
    "ControlWindow",
    "DataWindow",
    "Accumulator",
    "Statistic",
    "CalculateAll",
    "HideCols",
    "HorizVert",
    "Color",
    "SemanticColor",
    "Zoom",
    "SortCols",
    "SortCriteria",
    "AnalysisLimits",
    "ComputeYScale",
    "Minimum",
    "Maximum",
    "Delta",
    "ComputeGradient",
    "PixelSize",
    "ShowOnlyTotals",
    "ShortHeaderLabels",
]
SELECTED_SINGLE = [
    "cpu",
    "appl",
    "task",
    "thread",
    "node",
    "system",
    "workload",
    "from_obj",
    "to_obj",
    "tag_msg",
    "size_msg",
    "bw_msg",
    "evt_type",
    "evt_value",
]
SELECTED_DERIVED = ["appl", "task", "node", "system", "workload"]
COMPOSE_LEVELS = [
    "compose_cpu",
    "compose_appl",
    "compose_task",
    "compose_thread",
    "compose_node",
    "compose_system",
    "compose_workload",
    "topcompose1",
    "topcompose2",
]
LOADER_TAGS = {k.lstrip("?*") for k in SINGLE_KEYS + DERIVED_KEYS} | {
    "window_punctual_color_window",
    "window_synchronize",
}
BAR = "#" * 80
FLOAT = re.compile(r"^-?\d+\.\d{12}$")


class CfgError(ValueError):
    pass


@dataclass
class Win:
    number: int
    name: str
    kind: str  # single | composed
    level: str
    functions: dict[str, str]
    compose: dict[str, str]
    types: list[int] = field(default_factory=list)
    type_labels: list[str] | None = None
    values: list[int] = field(default_factory=list)
    tags: list[int] = field(default_factory=list)
    parents: tuple[int, int] | None = None
    operation: str | None = None
    comm_lines: bool = False
    open: bool = False
    semantic: dict[str, tuple[str, list[list[float]]]] = field(default_factory=dict)
    units: str = "Nanoseconds"
    height: int = 0
    maximum_y: float = 0.0
    compute_y_max: bool = False
    gradient: bool = False
    color_mode: str = ""  # window_color_mode ("": code colours)
    palette: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # custom colours (enabled)
    # task (0-based) -> which of its threads the window shows (``window_object thread``; absent: all)
    rows: dict[int, list[bool]] = field(default_factory=dict)


@dataclass
class Analyzer:
    name: str
    control: int
    data: int
    statistic: str
    zoom: bool = False
    height: int = 0
    width: int = 0
    hide_cols: bool = False


@dataclass
class Cfg:
    description: list[str]
    windows: list[Win]
    analyzers: list[Analyzer]


def _fail(where: str, msg: str):
    raise CfgError(f"{where}: {msg}")


def _functions(text: str, where: str) -> list[tuple[str, str]]:
    m = re.fullmatch(r"\{ (\d+), \{ (.*) \} \}", text)
    if not m:
        _fail(where, f"malformed function list {text!r}")
    body = m.group(2).rstrip(", ")
    items = re.findall(r"\{([a-z_0-9]+), ([^{}]+)\}", body)
    if re.sub(r"\{[a-z_0-9]+, [^{}]+\}(, )?", "", body).strip():
        _fail(where, f"stray text in function list {text!r}")
    if int(m.group(1)) != len(items):
        _fail(where, f"function list says {m.group(1)} entries, has {len(items)}")
    return items


def _semantic_module(text: str, where: str) -> tuple[str, str, list[list[float]]]:
    m = re.fullmatch(r"(\w+) (.+?) \{ (\d+), \{ (.*) \} \}", text)
    if not m:
        _fail(where, f"malformed window_semantic_module {text!r}")
    params = [p.split() for p in m.group(4).split(", ")]
    if int(m.group(3)) != len(params):
        _fail(where, "semantic module parameter count does not match")
    out = []
    for p in params:
        if int(p[0]) != len(p) - 1:
            _fail(where, f"semantic module parameter says {p[0]} values, has {len(p) - 1}")
        out.append([float(x) for x in p[1:]])
    return m.group(1), m.group(2), out


def _window(lines: list[str], number: int, header_name: str, previous: list[Win]) -> Win:
    where = f"window {number} ({header_name})"
    kv = []
    for line in lines:
        key, _, val = line.partition(" ")
        kv.append((key, val))
    kind = dict(kv).get("window_type")
    if kind not in ("single", "composed"):
        _fail(where, f"window_type {kind!r}")
    spec = SINGLE_KEYS if kind == "single" else DERIVED_KEYS
    i = 0
    for key in spec:
        bare = key.lstrip("?*")
        if key.startswith("*"):
            while i < len(kv) and kv[i][0] == bare:
                i += 1
        elif key.startswith("?"):
            if i < len(kv) and kv[i][0] == bare:
                i += 1
        else:
            if i >= len(kv) or kv[i][0] != bare:
                _fail(where, f"expected {bare}, found {kv[i][0] if i < len(kv) else 'end of block'}")
            i += 1
    if i != len(kv):
        _fail(where, f"unexpected key {kv[i][0]}")
    d: dict[str, str] = {}
    for k, v in kv:
        d.setdefault(k, v)
    if d["window_name"] != header_name:
        _fail(where, "window_name differs from the block header")
    if d["window_id"] != str(number):
        _fail(where, f"window_id {d['window_id']} but it is window {number} of the file")
    for k in (
        "window_comm_lines_enabled",
        "window_flags_enabled",
        "window_noncolor_mode",
        "window_compute_y_max",
        "window_open",
        "window_logical_filtered",
        "window_physical_filtered",
        "window_comm_fromto",
        "window_comm_tagsize",
        "window_comm_typeval",
    ):
        if k in d and d[k] not in ("true", "false"):
            _fail(where, f"{k} {d[k]!r} (true/false)")
    if "window_color_mode" in d and d["window_color_mode"] not in (
        "window_in_gradient_mode",
        "window_in_null_gradient_mode",
    ):
        _fail(where, f"window_color_mode {d['window_color_mode']!r}")
    for k in (
        "window_maximum_y",
        "window_minimum_y",
        "window_scale_relative",
        "window_end_time_relative",
        "window_begin_time_relative",
    ):
        if not FLOAT.match(d[k]):
            _fail(where, f"{k} {d[k]!r} is not a float with 12 decimals")
    for k in (
        "window_position_x",
        "window_position_y",
        "window_width",
        "window_height",
        "window_pixel_size",
        "window_labels_to_draw",
    ):
        if not d[k].isdigit() or int(d[k]) > 65535:
            _fail(where, f"{k} {d[k]!r} (16-bit unsigned)")
    if d["window_units"] not in UNITS:
        _fail(where, f"window_units {d['window_units']!r} (paraver-kernel's time units)")
    if d.get("window_custom_color_enabled", "false") not in ("true", "false"):
        _fail(where, "window_custom_color_enabled (true/false)")
    palette = {}
    if "window_custom_color_palette" in d:
        items = d["window_custom_color_palette"].split("},{")
        for item in items:
            m = re.fullmatch(r"\{?(\d+):(\d+),(\d+),(\d+)\}?", item)
            if not m or any(int(c) > 255 for c in m.groups()[1:]):
                _fail(where, f"custom colour {item!r} (value:r,g,b)")
            v, r, g, b = map(int, m.groups())
            palette[v] = (r, g, b)
    if d["window_level"] not in LEVELS:
        _fail(where, f"window_level {d['window_level']!r}")
    if d["window_object"] != "appl { 1, { All } }":
        _fail(where, f"window_object {d['window_object']!r}")
    level = d["window_level"]
    rows: dict[int, list[bool]] = {}
    for k, v in kv:  # a selection of a task's threads, as Paraver saves it (numbers: a thread-level window)
        if k != "window_object" or v == d["window_object"]:
            continue
        m = re.fullmatch(r"thread \{ 0, (\d+), (\d+), \{ ([01](?:, [01])*) \} \}", v)
        if not m or level != "thread":
            _fail(where, f"window_object {v!r} (thread {{ 0, task, n, {{ 1/0 per thread }} }} in a thread window)")
        task, n, flags = int(m.group(1)), int(m.group(2)), m.group(3).split(", ")
        if len(flags) != n or task in rows or all(f == "1" for f in flags):
            _fail(where, f"window_object {v!r}: {len(flags)} flags for {n} threads, or a task twice or whole")
        rows[task] = [f == "1" for f in flags]

    sel = _functions(d["window_selected_functions"], where)
    expected_levels = SELECTED_SINGLE if kind == "single" else SELECTED_DERIVED
    if [k for k, _ in sel] != expected_levels:
        _fail(where, f"selected functions levels {[k for k, _ in sel]}")
    functions = dict(sel)
    for lvl, fn in functions.items():
        ok = {"cpu": CPU_FUNCTIONS, "thread": THREAD_FUNCTIONS}.get(
            lvl, AGGREGATE if lvl in ("appl", "task", "node", "system", "workload") else FILTER_FUNCTIONS
        )
        if fn not in ok:
            _fail(where, f"unknown function {fn!r} at {lvl}")
    comp = _functions(d["window_compose_functions"], where)
    if [k for k, _ in comp] != COMPOSE_LEVELS:
        _fail(where, "compose functions levels")
    for lvl, fn in comp:
        if fn not in COMPOSE:
            _fail(where, f"unknown compose function {fn!r} at {lvl}")
    win = Win(
        number,
        header_name,
        kind,
        level,
        functions,
        dict(comp),
        comm_lines=d["window_comm_lines_enabled"] == "true",
        open=d["window_open"] == "true",
        units=d["window_units"],
        height=int(d["window_height"]),
        maximum_y=float(d["window_maximum_y"]),
        compute_y_max=d["window_compute_y_max"] == "true",
        gradient="window_color_mode" in d,
        color_mode=d.get("window_color_mode", ""),
        palette=palette if d.get("window_custom_color_enabled") == "true" else {},
        rows=rows,
    )
    for k, v in kv:
        if k == "window_semantic_module":
            lvl, fn, params = _semantic_module(v, where)
            current = dict(comp).get(lvl) or functions.get(lvl)
            if current != fn:
                _fail(where, f"semantic module for {lvl} names {fn!r}, the function there is {current!r}")
            win.semantic[lvl] = (fn, params)
    if kind == "composed":
        if d["window_operation"] not in DERIVED_OPS:
            _fail(where, f"window_operation {d['window_operation']!r}")
        factors = d["window_factors"].split(" ")
        if len(factors) != 2 or not all(FLOAT.match(f) for f in factors):
            _fail(where, "window_factors needs two floats")
        ids = d["window_identifiers"].split(" ")
        if len(ids) != 2 or not all(x.isdigit() for x in ids):
            _fail(where, "window_identifiers needs two window numbers")
        a, b = int(ids[0]), int(ids[1])
        for p in (a, b):
            if not 1 <= p < number:
                _fail(where, f"window_identifiers {p}: not an earlier window")
            if previous[p - 1].level != level:
                _fail(where, f"parent window {p} is at level {previous[p - 1].level}, this one at {level}")
        win.parents, win.operation = (a, b), d["window_operation"]
        return win

    seen = []
    for k, v in kv:
        if k != "window_filter_module":
            continue
        what, _, rest = v.partition(" ")
        count_s, _, items_s = rest.partition(" ")
        if not count_s.isdigit():
            _fail(where, f"filter {what}: count {count_s!r}")
        count = int(count_s)
        if what.endswith("_label") and not re.fullmatch(r'"[^"]*"( "[^"]*")*', items_s):
            _fail(where, f"filter {what}: labels must be double-quoted, without quotes inside")
        items = shlex.split(items_s) if what.endswith("_label") else items_s.split()
        if count != len(items) or count == 0:
            _fail(where, f"filter {what}: count {count} but {len(items)} items")
        seen.append(what)
        if what == "evt_type_label":
            win.type_labels = items
            continue
        if not all(re.fullmatch(r"\d+", x) for x in items):
            _fail(where, f"filter {what}: non-integer item")
        nums = [int(x) for x in items]
        if what == "evt_type":
            win.types = nums
        elif what == "evt_value":
            win.values = nums
        elif what == "tag_msg":
            win.tags = nums
        else:
            _fail(where, f"filter kind {what!r} not used by nsys2prv views")
        if len(set(nums)) != len(nums):
            _fail(where, f"filter {what}: duplicate item")
    order = [x for x in ("tag_msg", "evt_type", "evt_type_label", "evt_value") if x in seen]
    if seen != order:
        _fail(where, f"filter lines out of order: {seen}")
    if win.type_labels is not None and len(win.type_labels) != len(win.types):
        _fail(where, "evt_type_label count differs from evt_type count")
    for fkind, items in (("evt_type", win.types), ("evt_value", win.values), ("tag_msg", win.tags)):
        if (functions[fkind] in ("=", "!=")) != bool(items):
            _fail(where, f"{{{fkind}, {functions[fkind]}}} but {len(items)} {fkind} filter items")
    if functions["thread"] in EVENT_FUNCTIONS and not win.types:
        _fail(where, f"{functions['thread']} without an event type filter")
    return win


def _analyzer(lines: list[str], windows: list[Win], where: str) -> Analyzer:
    kv = []
    for line in lines:
        m = re.fullmatch(r"Analyzer2D\.(\w+): (.*)", line)
        if not m:
            _fail(where, f"bad analyzer line {line!r}")
        kv.append((m.group(1), m.group(2)))
    if [k for k, _ in kv] != ANALYZER_KEYS:
        _fail(where, f"analyzer keys {[k for k, _ in kv]}")
    d = dict(kv)
    for k in ("ControlWindow", "DataWindow"):
        if not d[k].isdigit() or not 1 <= int(d[k]) <= len(windows):
            _fail(where, f"{k} {d[k]} does not name a window of the file")
    if d["Statistic"] not in STATISTICS:
        _fail(where, f"statistic {d['Statistic']!r}")
    control, data = windows[int(d["ControlWindow"]) - 1], windows[int(d["DataWindow"]) - 1]
    if control.level != data.level:
        _fail(where, "control and data windows at different levels")
    for k in (
        "CalculateAll",
        "HideCols",
        "Color",
        "SemanticColor",
        "SortCols",
        "ComputeYScale",
        "ComputeGradient",
        "ShowOnlyTotals",
        "ShortHeaderLabels",
    ):
        if d[k] not in ("True", "False"):
            _fail(where, f"Analyzer2D.{k} {d[k]!r} (True/False)")
    if d["HorizVert"] not in ("Horizontal", "Vertical") or d["Zoom"] not in ("Enabled", "Disabled"):
        _fail(where, "HorizVert/Zoom")
    if d["AnalysisLimits"] not in ("Alltrace", "Allwindow", "Region"):
        _fail(where, "AnalysisLimits")
    if d["SortCriteria"] not in ("Average", "Total", "Maximum", "Minimum", "Stdev", "Avg/Max"):
        _fail(where, "SortCriteria")
    return Analyzer(
        d["Name"],
        int(d["ControlWindow"]),
        int(d["DataWindow"]),
        d["Statistic"],
        zoom=d["Zoom"] == "Enabled",
        height=int(d["Height"]),
        width=int(d["Width"]),
        hide_cols=d["HideCols"] == "True",
    )


def parse_cfg(text: str, name: str = "cfg") -> Cfg:
    if not text.endswith("\n") or "\r" in text:
        _fail(name, "must end with a newline and use LF line ends")
    lines = text.split("\n")[:-1]
    if lines[:2] != ["#ParaverCFG", "ConfigFile.Version: 3.4"]:
        _fail(name, "header must be '#ParaverCFG' then 'ConfigFile.Version: 3.4'")
    m = re.fullmatch(r"ConfigFile\.NumWindows: (\d+)", lines[2] if len(lines) > 2 else "")
    if not m:
        _fail(name, "third line must be ConfigFile.NumWindows: N")
    if lines[3] != "ConfigFile.BeginDescription" or "ConfigFile.EndDescription" not in lines:
        _fail(name, "BeginDescription/EndDescription missing")
    end = lines.index("ConfigFile.EndDescription")
    description = lines[4:end]
    if not description:
        _fail(name, "empty description")
    for d in description:
        first = d.split(" ", 1)[0]
        if not d.strip() or d.startswith(("<", "#")) or first in LOADER_TAGS or first.startswith("Analyzer2D."):
            _fail(name, f"description line {d!r} would be read as a cfg tag, or is blank")
    i = end + 1
    windows: list[Win] = []
    analyzers: list[Analyzer] = []
    while i < len(lines):
        line = lines[i]
        if line == "":
            i += 1
            continue
        if line == BAR:
            hm = re.fullmatch(r"< NEW DISPLAYING WINDOW (.+) >", lines[i + 1])
            if not hm or lines[i + 2] != BAR:
                _fail(name, f"line {i + 1}: window header must be bar, '< NEW DISPLAYING WINDOW name >', bar")
            if analyzers:
                _fail(name, "windows must come before the analyzers")
            j = i + 3
            while j < len(lines) and lines[j] != "":
                j += 1
            windows.append(_window(lines[i + 3 : j], len(windows) + 1, hm.group(1), windows))
            i = j
            continue
        if line == "< NEW ANALYZER2D >":
            j = i + 1
            while j < len(lines) and lines[j] != "":
                j += 1
            analyzers.append(_analyzer(lines[i + 1 : j], windows, f"{name} analyzer {len(analyzers) + 1}"))
            i = j
            continue
        _fail(name, f"line {i + 1}: unexpected {line!r}")
    if int(m.group(1)) != len(windows):
        _fail(name, f"ConfigFile.NumWindows: {m.group(1)} but {len(windows)} windows")
    if not windows:
        _fail(name, "no window")
    names = [w.name for w in windows]
    if len(set(names)) != len(names):
        _fail(name, "two windows with one name")
    if not analyzers and not any(w.open for w in windows):
        _fail(name, "a timeline view must open at least one window")
    for a in analyzers:
        if (
            a.statistic in ("#Sends", "#Receives", "Bytes sent")
            and not windows[a.control - 1].tags
            and not windows[a.control - 1].comm_lines
        ):
            _fail(name, "communication statistic on a window without communications selected")
    return Cfg(description, windows, analyzers)

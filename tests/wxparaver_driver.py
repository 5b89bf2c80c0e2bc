"""Drive BSC's Paraver GUI (wxparaver, built by scripts/build_wxparaver.sh) under Xvfb: for the GUI
tier (tests/test_wxparaver.py) and scripts/render_views.py.

- ``paraver_home``: a scratch HOME whose ~/.paraver/paraver.xml is wxparaver's own default (written by
  its first start) with the start-up questions switched off, so the user's preferences are neither
  read nor changed and no dialog but a cfg's own appears.
- ``save_images``: wxparaver's ``-i`` mode ("save cfg last window as an image; if it's a timeline,
  also saves its legend"): the pictures are wxparaver's own drawing, not screen grabs.  It saves only
  a cfg's last window; ``split_cfg`` makes one cfg per window an analyst sees.
- ``load_in_gui``: the way a user opens a view (``wxparaver TRACE.prv VIEW.cfg``): waits until every
  window of the cfg is on the screen, a dialog appears (a question, a loading error) or wxparaver
  exits, and says which.  Every dialog wxparaver raises while loading a cfg is modal and comes before
  the cfg's windows are built (paravermain.cpp, DoLoadCFG; the kernel's questions through
  LocalKernel::userMessage), so "all windows there and no dialog" is a final state.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BUILD_HINT = "scripts/build_wxparaver.sh /opt/bsc WXPARAVER_SRC (then PATH=/opt/bsc/bin:$PATH)"

# paraver.xml preferences changed from wxparaver's defaults: no single instance (a second wxparaver
# would hand its files to one already running, the user's own included), no session saved or offered
# back at start-up, the help-contents question answered.
PREFERENCES = {
    "single_instance": "0",
    "session_save_time": "0",
    "prev_session_load": "0",
    "help_contents_question": "1",
}
MAIN_TITLES = {"Paraver", "wxparaver.bin"}  # the main frame and wx's hidden helper windows
# progress windows, which close by themselves (wxProgressDialog titles in wxparaver's source)
WORKING = "(Working...) "  # the title of a window while wxparaver computes it
PROGRESS_TITLES = {"Loading trace...", "Processing trace...", "Computing window...", "Drawing window..."}


def find_wxparaver() -> str | None:
    home = os.environ.get("PARAVER_HOME")
    if home and os.access(Path(home) / "bin" / "wxparaver", os.X_OK):
        return str(Path(home) / "bin" / "wxparaver")
    return shutil.which("wxparaver")


def wxparaver_version(wxparaver: str) -> str:
    """The wxparaver line of the VERSIONS file scripts/build_wxparaver.sh writes beside bin/."""
    path = Path(wxparaver).resolve().parent.parent / "VERSIONS"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("wxparaver "):
                return line.strip()
    return "unknown (no VERSIONS file beside wxparaver)"


class Xvfb:
    """An X server on a free display (``-displayfd``) for the lifetime of the context."""

    def __init__(self, size: str = "1600x1200x24"):
        self.size = size
        self.proc: subprocess.Popen | None = None
        self.display = ""

    def __enter__(self) -> Xvfb:
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", self.size, "-nolisten", "tcp", "-noreset"],
            pass_fds=(w,),
            stderr=subprocess.DEVNULL,
        )
        os.close(w)
        with os.fdopen(r) as f:
            num = f.readline().strip()
        if not num:
            self.proc.kill()
            raise RuntimeError("Xvfb did not start")
        self.display = f":{num}"
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


def paraver_home(scratch: Path, wxparaver: str, display: str) -> Path:
    """A scratch HOME: ~/.paraver/paraver.xml as wxparaver writes it on its first start (``-i`` without
    files: it starts, writes its defaults and closes), with PREFERENCES applied."""
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), DISPLAY=display)
    subprocess.run([wxparaver, "-i"], cwd=scratch, env=env, capture_output=True, timeout=300, check=True)
    xml = home / ".paraver" / "paraver.xml"
    if not xml.exists():
        raise RuntimeError(f"{wxparaver} -i wrote no {xml}")
    text = xml.read_text()
    for key, value in PREFERENCES.items():
        text, n = re.subn(rf"<{key}>[^<]*</{key}>", f"<{key}>{value}</{key}>", text)
        if n != 1:
            raise RuntimeError(f"{xml}: no <{key}> (another wxparaver version?)")
    xml.write_text(text)
    (home / ".paraver" / "paraver_backup.xml").unlink(missing_ok=True)
    return home


# -- cfgs ------------------------------------------------------------------------------------------
def _blocks(text: str) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(header lines, window blocks, analyzer blocks) of a cfg."""
    lines = text.splitlines()
    win_at = [i for i, line in enumerate(lines) if line.startswith("< NEW DISPLAYING WINDOW")]
    ana_at = [i for i, line in enumerate(lines) if line.startswith("< NEW ANALYZER2D")]
    starts = [i - 1 if i and lines[i - 1].startswith("#####") else i for i in win_at]
    ends = starts[1:] + [ana_at[0] if ana_at else len(lines)]
    head = lines[: starts[0]] if starts else lines
    return (
        head,
        [lines[a:b] for a, b in zip(starts, ends)],
        [lines[a:b] for a, b in zip(ana_at, ana_at[1:] + [len(lines)])],
    )


def _value(block: list[str], key: str) -> str:
    return next((x[len(key) :].strip() for x in block if x.startswith(key)), "?")


def shown_windows(text: str) -> list[str]:
    """Names of the windows a cfg puts on the screen: its open timelines, then its 2D analyzers."""
    _, windows, analyzers = _blocks(text)
    return [_value(w, "window_name ") for w in windows if "window_open false" not in w] + [
        _value(a, "Analyzer2D.Name:") for a in analyzers
    ]


def split_cfg(text: str) -> list[tuple[str, str]]:
    """One cfg per window an analyst sees (wxparaver's -i saves only a cfg's last window): for every
    open timeline k the cfg cut after window k (its parents come before it), for every 2D analyzer
    all windows and that analyzer alone.  (label, cfg text) pairs; labels ``wK-NAME`` / ``hJ-NAME``."""
    head, windows, analyzers = _blocks(text)

    def cfg(n_windows: int, extra: list[str]) -> str:
        h = [f"ConfigFile.NumWindows: {n_windows}" if x.startswith("ConfigFile.NumWindows:") else x for x in head]
        return "\n".join(h + [x for w in windows[:n_windows] for x in w] + extra) + "\n"

    out = []
    for k, w in enumerate(windows, 1):
        if "window_open false" not in w:
            out.append((f"w{k}-{_value(w, 'window_name ')}", cfg(k, [])))
    for j, a in enumerate(analyzers, 1):
        out.append((f"h{j}-{_value(a, 'Analyzer2D.Name:')}", cfg(len(windows), a)))
    return out


# -- running wxparaver -----------------------------------------------------------------------------
def _output(proc_out: str) -> list[str]:
    """What wxparaver printed, without GTK's layout assertions (printed on every start under Xvfb)."""
    return [line for line in proc_out.splitlines() if line.strip() and "Gtk-CRITICAL" not in line]


def save_images(wxparaver: str, prv: Path, cfg: Path, dest: Path, env: dict, timeout: float = 600) -> dict:
    """``wxparaver -i PRV CFG`` in a scratch working directory (it writes NAME@TRACE.png and, for a
    timeline, NAME@TRACE.*legend.png there); the images are moved to DEST.<wxparaver's suffix>."""
    with tempfile.TemporaryDirectory(prefix="wxparaver-i-") as work:
        proc = subprocess.run(
            [wxparaver, "-i", str(prv.resolve()), str(cfg.resolve())],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        images = sorted(Path(work).iterdir())
        written = []
        for img in images:
            target = dest.with_name(dest.name + "." + img.name.rsplit("@", 1)[-1].split(".", 1)[1])
            shutil.move(img, target)
            written.append(target)
    return {"exit": proc.returncode, "images": written, "output": _output(proc.stdout + proc.stderr)}


def top_level_windows(display: str) -> dict[str, str]:
    """Title -> window id of the top-level windows on DISPLAY (xwininfo -root -children)."""
    out = subprocess.run(
        ["xwininfo", "-root", "-children"], env=dict(os.environ, DISPLAY=display), capture_output=True, text=True
    ).stdout
    return {title: wid for wid, title in re.findall(r'^\s+(0x[0-9a-f]+) "(.*)":', out, re.M)}


@dataclass
class Loaded:
    """What wxparaver showed after ``wxparaver TRACE CFG``."""

    windows: list[str] = field(default_factory=list)  # titles of the cfg's windows on the screen
    dialogs: list[str] = field(default_factory=list)  # titles of any other window (a question, an error)
    exit: int | None = None  # wxparaver's exit status if it ended (it should stay open)
    output: list[str] = field(default_factory=list)
    screenshot: Path | None = None  # the screen when a dialog was up
    grabbed: Path | None = None  # the window asked for, as on the screen


def load_in_gui(
    wxparaver: str,
    prv: Path,
    cfg: Path,
    env: dict,
    shots: Path | None = None,
    grab: tuple[str, Path] | None = None,
    then: Callable[[dict[str, str], dict], None] | None = None,
    patience: float = 600,
) -> Loaded:
    """Open PRV with CFG as a user does and wait for the final state (see the module's doc); SHOTS:
    where to save the screen if a dialog is up; GRAB (window name, PNG): save that window as it is on
    the screen once everything is drawn; THEN(title -> window id, env): what to do then, before
    wxparaver is ended.  PATIENCE bounds a hang, it is not a speed requirement.
    wxparaver is ended (its process group) before returning."""
    trace = prv.name
    names = shown_windows(cfg.read_text())
    expected = {f"{name} @ {trace}" for name in names}
    pending = set(names)  # a histogram's title until it is computed
    with tempfile.TemporaryDirectory(prefix="wxparaver-gui-") as work:
        log = Path(work) / "out.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [wxparaver, str(prv.resolve()), str(cfg.resolve())],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        res = Loaded()
        deadline = time.monotonic() + patience
        seen: list[str] = []
        try:
            while True:
                ids = top_level_windows(env["DISPLAY"])
                titles = list(ids)
                res.windows = sorted(t for t in titles if t in expected)
                other = sorted(
                    t
                    for t in titles
                    if t and t not in expected | pending | MAIN_TITLES | PROGRESS_TITLES and not t.startswith(WORKING)
                )
                # a dialog is modal: it stays until answered; two looks in a row tell it from a passing window
                res.dialogs, seen = (other if other and other == seen else []), other
                res.exit = proc.poll()
                if res.dialogs and shots is not None:
                    shots.parent.mkdir(parents=True, exist_ok=True)
                    subprocess.run(["import", "-window", "root", str(shots)], env=env, capture_output=True)
                    res.screenshot = shots if shots.exists() else None
                if res.exit is not None or res.dialogs:
                    break
                if set(res.windows) == expected:
                    if grab is not None:
                        wid = ids[f"{grab[0]} @ {trace}"]
                        subprocess.run(["import", "-window", wid, str(grab[1])], env=env, capture_output=True)
                        res.grabbed = grab[1] if grab[1].exists() else None
                    if then is not None:
                        then(ids, env)
                    break
                if time.monotonic() > deadline:
                    res.dialogs.append(f"(nothing after {patience:.0f} s: windows {res.windows} of {sorted(expected)})")
                    break
                time.sleep(0.25)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        res.output = _output(log.read_text(errors="replace"))
    return res


def _xdotool(env: dict, *args: str) -> None:
    subprocess.run(["xdotool", *args], env=env, check=True, capture_output=True)
    time.sleep(0.5)  # the GUI's turn to react


def export_histogram_text(wxparaver: str, prv: Path, cfg: Path, env: dict, dest: Path, patience: float = 600) -> Loaded:
    """Open PRV with CFG (one 2D analyzer) and save the histogram's numbers as a user does: right
    click on the table, Save > Text..., type DEST in the file dialog, Enter.  wxparaver writes the
    table in paramedir's text layout (both call paraver-kernel's Output::dumpHistogram)."""
    name = shown_windows(cfg.read_text())[-1]

    def save(ids: dict[str, str], env: dict) -> None:
        wid = ids[f"{name} @ {prv.name}"]
        _xdotool(env, "mousemove", "--window", wid, "10", "90", "click", "3")  # the first row label: the popup menu
        _xdotool(env, "key", "Up", "Right", "Down", "Down", "Return")  # Save (the last item) > Text...
        deadline = time.monotonic() + patience
        while "Save as..." not in top_level_windows(env["DISPLAY"]):
            if time.monotonic() > deadline:
                return
            time.sleep(0.25)
        _xdotool(env, "windowfocus", top_level_windows(env["DISPLAY"])["Save as..."])
        _xdotool(env, "key", "ctrl+a")
        _xdotool(env, "type", "--delay", "20", str(dest.resolve()))
        _xdotool(env, "key", "Return")
        while not (dest.exists() and re.search(r"\nAvg/Max[^\n]*\n", dest.read_text())) and time.monotonic() < deadline:
            time.sleep(0.25)  # the table, then its statistics: Avg/Max is the last line

    return load_in_gui(wxparaver, prv, cfg, env, then=save, patience=patience)

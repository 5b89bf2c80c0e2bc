"""Paraver's code-colour palette, as paraver-kernel builds it (``api/semanticcolor.cpp``), and the
custom colours our views give the values that palette would draw as black or white.

In code-colour mode Paraver paints value ``v`` with ``colors[v % len(colors)]``: 49 base colours,
expanded to about 32,000 by nudging one component at a time (``CodeColor::expandColors``); value 0
is drawn in the timeline's *zero colour* (black, the background, by default) and value 2 is white
("Not created").  A view's ``window_custom_color_palette`` overrides single values: ``custom_colors``
gives every value a view can show that would read as "no data" (black-ish) or "not created"
(white-ish) a colour of its own.
"""

from __future__ import annotations

from functools import cache

BASE: tuple[tuple[int, int, int], ...] = (
    (117, 195, 255), (0, 0, 255), (255, 255, 255), (255, 0, 0), (255, 0, 174), (179, 0, 0),
    (0, 255, 0), (255, 255, 0), (235, 0, 0), (0, 162, 0), (255, 0, 255), (100, 100, 177),
    (172, 174, 41), (255, 144, 26), (2, 255, 177), (192, 224, 0), (66, 66, 66), (189, 168, 100),
    (95, 200, 0), (203, 60, 69), (0, 109, 255), (200, 61, 68), (200, 66, 0), (10, 66, 40),
    (139, 121, 177), (116, 116, 116), (200, 50, 89), (255, 171, 98), (0, 68, 189), (66, 66, 0),
    (255, 46, 0), (100, 216, 32), (0, 50, 120), (105, 105, 0), (132, 75, 255), (184, 232, 0),
    (0, 109, 112), (189, 168, 100), (132, 75, 75), (255, 75, 75), (255, 20, 0), (130, 30, 30),
    (10, 66, 10), (184, 132, 0), (100, 16, 32), (146, 255, 255), (50, 50, 100), (146, 0, 255),
    (0, 138, 119),
)  # fmt: skip
MAX_COLORS = 32000
BACKGROUND = (0, 0, 0)  # wxparaver's default timeline background and zero colour
IDLE = BASE[0]  # Paraver's own Idle colour (light blue), which the zero colour hides
# Replacements, distinct from each other and readable on black: picked in turn by value.
REPLACEMENTS: tuple[tuple[int, int, int], ...] = (
    (255, 200, 120), (120, 255, 200), (200, 140, 255), (255, 120, 200), (160, 220, 60),
    (80, 200, 255), (255, 230, 60), (230, 120, 60),
)  # fmt: skip
DIM = 70  # a distinct colour (``distinct``) at least this luminous (navy blue is lost on black)
DARK, LIGHT = 80, 220  # black-ish: every component below DARK; white-ish: every one above LIGHT


def luminance(c: tuple[int, int, int]) -> int:
    return (c[0] * 30) // 100 + (c[1] * 59) // 100 + (c[2] * 11) // 100


@cache
def code_colors() -> tuple[tuple[tuple[int, int, int], ...], frozenset[int]]:
    """(the expanded palette, the positions Paraver recolours itself because they are too close to
    the background): a port of ``CodeColor::CodeColor`` + ``expandColors``."""
    colors = list(BASE)
    inserted = set(colors)
    conflicts = set()
    n = len(BASE)
    base = 1
    for _ in range(MAX_COLORS // n // 3):
        base = min(base, len(colors) - 1)
        for comp in range(3):
            for i in range(base, base + n):
                if i > len(colors) - 1:
                    break
                c = list(colors[i])
                c[comp] = (c[comp] + 1) % 256
                t = (c[0], c[1], c[2])
                if t not in inserted:
                    inserted.add(t)
                    if abs(luminance(BACKGROUND) - luminance(t)) < 42:
                        conflicts.add(len(colors))
                    colors.append(t)
        base += n
    return tuple(colors), frozenset(conflicts)


def color_of(value: int) -> tuple[int, int, int]:
    """The colour Paraver's code mode gives ``value`` (value 0: the zero colour)."""
    if value == 0:
        return BACKGROUND
    colors, conflicts = code_colors()
    pos = value % len(colors)
    if pos in conflicts:  # Paraver replaced it by a colour away from the background
        return REPLACEMENTS[pos % len(REPLACEMENTS)]
    return colors[pos]


def unreadable(value: int) -> bool:
    """True when Paraver would draw ``value`` black-ish (like no data) or white-ish (like Not created)."""
    c = color_of(value)
    return max(c) < DARK or min(c) > LIGHT


def custom_colors(values, zero: tuple[int, int, int] | None = None) -> dict[int, tuple[int, int, int]]:
    """Value -> colour for the ``values`` (> 0) Paraver would draw unreadably; ``zero``: a colour for
    value 0 too (a state view's Idle, which is data, not the absence of it)."""
    out = {0: zero} if zero is not None else {}
    for v in sorted({int(v) for v in values if int(v) > 0}):
        if unreadable(v):
            out[v] = REPLACEMENTS[v % len(REPLACEMENTS)]
    return out


GRID = tuple(range(0, 256, 51))  # 6 levels a component: 216 candidates, 51 apart at least


@cache
def distinct(n: int) -> tuple[tuple[int, int, int], ...]:
    """``n`` colours (n <= the readable candidates of GRID) as far apart as a greedy farthest-point
    choice over the grid makes them, none black-ish or white-ish: the first is Paraver's red, each next
    the candidate farthest from those chosen (squared RGB distance, ties to the first in grid order)."""
    candidates = [c for c in ((r, g, b) for r in GRID for g in GRID for b in GRID) if readable_on_black(c)]
    chosen = [(255, 0, 0)]
    gap = {c: sum((x - y) ** 2 for x, y in zip(c, chosen[0], strict=True)) for c in candidates}
    while len(chosen) < min(n, len(candidates)):
        best = max(candidates, key=lambda c: gap[c])
        chosen.append(best)
        for c in candidates:
            gap[c] = min(gap[c], sum((x - y) ** 2 for x, y in zip(c, best, strict=True)))
    return tuple(chosen[:n])


def readable_on_black(c: tuple[int, int, int]) -> bool:
    return luminance(c) >= DIM and min(c) <= LIGHT


def distinct_colors(values) -> dict[int, tuple[int, int, int]]:
    """Value -> a colour of its own for the ``values`` (> 0) of one trace (names: calls, kernels):
    Paraver's code palette gives neighbouring values near-identical colours (two magentas, four reds)."""
    vs = sorted({int(v) for v in values if int(v) > 0})
    return dict(zip(vs, distinct(len(vs)), strict=False)) if len(vs) <= len(distinct(10**6)) else {}

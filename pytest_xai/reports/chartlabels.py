"""Labels for the points of an SVG chart that neither overlap nor leave the chart (pure Python).

The HTML report's Pareto chart names each explainer beside its point; several explainers often
sit close together (similar seconds and scores), and a name written to the right of a point near
the right edge was cut off ("integ").  :func:`place` tries the four corners around each point,
then moves the label down or up until it is free; where none is free, it slides the label along
its line until it fits inside, and :func:`fit` shortens a name longer than the chart is wide.
"""

from __future__ import annotations

from collections.abc import Sequence

CHAR_WIDTH = 0.6  # an average character's width, in units of the font size (sans-serif)


def place(
    points: Sequence[tuple[float, float, str]],
    *,
    width: float,
    height: float,
    left: float = 0,
    top: float = 0,
    font: float = 10,
    gap: float = 7,
) -> list[tuple[float, float, str]]:
    """``(x, y, text-anchor)`` of each label (baseline position) for points ``(x, y, text)``: inside
    ``[left, width] x [top, height]`` (a label no wider than that) and clear of the other labels and
    of every point's marker where there is room."""
    boxes: list[tuple[float, float, float, float]] = [
        (x - gap + 1, y - gap + 1, x + gap - 1, y + gap - 1) for x, y, _ in points
    ]  # the markers
    out = []
    for x, y, text in points:
        w, h = CHAR_WIDTH * font * len(text), font
        corners = [
            (x + gap, y - gap / 2, "start"),
            (x + gap, y + gap / 2 + h, "start"),
            (x - gap, y - gap / 2, "end"),
            (x - gap, y + gap / 2 + h, "end"),
        ]
        candidates = corners + [
            (cx, cy + step * d, a)
            for step in range(1, int(height // h) + 1)
            for d in (h, -h)
            for cx, cy, a in corners[:1] + corners[2:3]
        ]
        chosen = None
        for cx, cy, anchor in candidates:
            box = label_box(cx, cy, w, h, anchor)
            if (
                box[0] >= left
                and box[2] <= width
                and box[1] >= top
                and box[3] <= height
                and not any(overlaps(box, other) for other in boxes)
            ):
                chosen = (cx, cy, anchor)
                break
        if chosen is None:  # crowded beyond help, or too long for either side: slid inside the chart
            chosen = (min(max(x + gap, left), width - w), min(max(y, top + h), height - 2), "start")
        boxes.append(label_box(*chosen[:2], w, h, chosen[2]))
        out.append(chosen)
    return out


def fit(text: str, width: float, font: float = 10) -> str:
    """``text``, cut with an ellipsis to fit ``width``."""
    most = int(width // (CHAR_WIDTH * font))
    return text if len(text) <= most else text[: max(most - 1, 0)] + "\u2026"


def label_box(x: float, y: float, w: float, h: float, anchor: str) -> tuple[float, float, float, float]:
    """The (left, top, right, bottom) box of a label of width ``w`` and height ``h`` at baseline point
    (x, y), anchored at its ``start``, ``middle`` or ``end``."""
    left = {"start": x, "middle": x - w / 2}.get(anchor, x - w)
    return left, y - h, left + w, y + 2  # descenders below the baseline


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Whether two boxes overlap."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

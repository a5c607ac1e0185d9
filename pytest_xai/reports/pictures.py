"""Pictures of the worst example: attribution beside ground truth, as a PNG (matplotlib, optional).

Families whose inputs live on a grid put a ``draw(path, case, attributions, row)`` callable in
``Case.draw``; the plugin calls it for every such test when ``--xai-report`` is given and
writes the PNG next to the report.  Uses matplotlib's object API (no pyplot, no global backend).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def side_by_side_png(
    path: str | Path, panels: list[tuple[str, np.ndarray]], title: str = "", diverging: tuple[bool, ...] = ()
) -> Path:
    """Write 2-D ``panels`` [(label, array), ...] in a row; NaN cells (no data) are drawn grey.

    Signed maps (``diverging[i]`` true) use a blue-white-red scale centred on 0, others viridis;
    each panel has its own colour bar, since attributions and ground truth have different units.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("pictures need matplotlib: pip install 'pytest-xai[plot]'") from exc
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure = Figure(figsize=(3.6 * len(panels), 3.4))
    figure.subplots_adjust(left=0.01, right=0.97, bottom=0.03, top=0.86, wspace=0.08)  # fixed: a layout
    FigureCanvasAgg(figure)  # engine measured every label at each save, 2.3x the drawing's time
    from matplotlib import colormaps

    for k, (label, array) in enumerate(panels):
        axis = figure.add_subplot(1, len(panels), k + 1)
        array = np.asarray(array, dtype=float)
        signed = k < len(diverging) and diverging[k]
        cmap = colormaps["RdBu_r" if signed else "viridis"].with_extremes(bad="0.8")  # NaN: grey
        bound = float(np.nanmax(np.abs(array))) or 1.0
        image = axis.imshow(
            array, cmap=cmap, vmin=-bound if signed else None, vmax=bound if signed else None, interpolation="nearest"
        )
        axis.set_title(label, fontsize=9)
        axis.set_xticks([])
        axis.set_yticks([])
        figure.colorbar(image, ax=axis, shrink=0.8)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.savefig(path, dpi=110)
    return path

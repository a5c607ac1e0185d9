"""Pictures of the worst example of a human-mask check on an image case."""

from __future__ import annotations

import numpy as np

from pytest_xai.case import Case


def draw_worst_image(path, case: Case, attributions: np.ndarray, row: int):
    """Image, attribution and weighted human mask of sample ``row``."""
    from pytest_xai.reports.pictures import side_by_side_png

    panels = [
        ("image", case.inputs[row]),
        ("attribution", attributions[row]),
        ("weighted human mask", case.truth["weighted_mask"][row]),
    ]
    return side_by_side_png(
        path, panels, f"{case.name}, sample {case.meta['ids'][row]}", diverging=(False, True, False)
    )

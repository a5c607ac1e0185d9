"""The HTML report's chart labels stay inside the chart and clear of each other; its score table
heads the check's threshold apart from the score."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_xai.reports import chartlabels, htmlreport
from pytest_xai.reports.record import Record

W, H = 360, 240


def _boxes(points, labels, font=10):
    return [
        chartlabels.label_box(x, y, chartlabels.CHAR_WIDTH * font * len(text), font, anchor)
        for (_, _, text), (x, y, anchor) in zip(points, labels)
    ]


def test_close_points_near_the_right_edge_get_separate_labels_inside():
    """The report's case: integrated_gradients beside feature_occlusion, exact_shapley at the edge."""
    points = [
        (225, 66, "feature_occlusion"),
        (289, 54, "integrated_gradients"),
        (350, 61, "exact_shapley"),
        (70, 234, "zoo_zeros"),
        (93, 207, "random"),
    ]
    boxes = _boxes(points, chartlabels.place(points, width=W, height=H))
    for box in boxes:
        assert 0 <= box[0] and box[2] <= W and 0 <= box[1] and box[3] <= H, box
    assert not any(chartlabels.overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(46, 348), st.floats(14, 204), st.text("abcdefghij_", min_size=1, max_size=20)),
        min_size=1,
        max_size=6,
    )
)
def test_labels_never_overlap_nor_leave_the_chart_when_there_is_room(points):
    boxes = _boxes(points, chartlabels.place(points, width=W, height=H))
    assert all(0 <= b[0] and b[2] <= W and 0 <= b[1] and b[3] <= H for b in boxes)
    assert not any(chartlabels.overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_score_and_threshold_columns_say_what_scale_they_are_on():
    rec = Record(
        nodeid="x::symmetry[c-e]",
        row="symmetry[c]",
        explainer="e",
        status="PASS",
        score=1.0,
        threshold=0.05,
        detail="x" * 400,
        family="tabular",
        category="fidelity",
        check="symmetry",
    )
    doc = {"results": [rec.to_dict()], "summary": {}, "seed": 0}
    text = htmlreport.render(doc)
    assert "score<small>0-1, higher is better</small>" in text
    assert "check threshold<small>on the check's own statistic</small>" in text
    assert '<div class="wide"><table id="scores">' in text and "overflow-wrap:anywhere" in text
    assert "check threshold (on the check" in htmlreport.extra_html(rec)

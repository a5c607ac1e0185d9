"""Pictures of a position: the reduced attribution beside its NGT mask, pieces drawn on both, in
the board's own frame (rank 8 on top).  Needs matplotlib (``pytest-xai[plot]``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_xai.case import Case
from pytest_xai.cases.chess.encoding import from_perspective
from pytest_xai.cases.chess.ngt import reduce_attributions
from pytest_xai.cases.chess.rules import chess_module

_GLYPHS = dict(zip("KQRBNPkqrbnp", "♔♕♖♗♘♙♚♛♜♝♞♟"))


def board_heatmap_png(path: str | Path, fen: str, attribution_8x8, mask_8x8, title: str = "") -> Path:
    """Draw the attribution map beside the NGT mask, pieces on both, as a PNG at ``path``.

    Both maps are in the board's own frame (``M[rank, file]``; use :func:`from_perspective` on
    maps from the encoded frame).  Rank 8 is drawn on top (display only).  Needs matplotlib
    (``pytest-xai[plot]``); no pyplot, no global backend change.
    """
    try:
        from matplotlib import patheffects
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("board pictures need matplotlib: install pytest-xai[plot]") from exc
    chess = chess_module()
    board = chess.Board(fen)
    attribution = np.asarray(attribution_8x8, dtype=float).reshape(8, 8)
    mask = np.asarray(mask_8x8, dtype=float).reshape(8, 8)
    fig = Figure(figsize=(9, 4.8))
    fig.subplots_adjust(left=0.04, right=0.94, bottom=0.07, top=0.84, wspace=0.25)  # fixed: tight_layout
    FigureCanvasAgg(fig)  # measured every label and glyph once more before the save
    for ax, data, name, cmap in (
        (fig.add_subplot(1, 2, 1), attribution, "attribution", "Reds"),
        (fig.add_subplot(1, 2, 2), mask, "NGT mask", "Blues"),
    ):
        image = ax.imshow(data, origin="lower", cmap=cmap, vmin=0, vmax=max(data.max(), 1e-12))
        for square, piece in board.piece_map().items():
            ax.text(
                chess.square_file(square),
                chess.square_rank(square),
                _GLYPHS[piece.symbol()],
                ha="center",
                va="center",
                fontsize=20,
                color="black",
                path_effects=[patheffects.withStroke(linewidth=3, foreground="white")],
            )
        ax.set_xticks(range(8), list("abcdefgh"))
        ax.set_yticks(range(8), [str(r) for r in range(1, 9)])
        ax.set_title(name)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    turn = "white" if board.turn == chess.WHITE else "black"
    fig.suptitle(f"{title}\n{fen} ({turn} to move)" if title else f"{fen} ({turn} to move)", fontsize=10)
    path = Path(path)
    fig.savefig(path, format="png", dpi=90)
    return path


def draw_worst_board(path, case: Case, attributions: np.ndarray, row: int) -> Path:
    """The picture of position ``row``: reduced attribution beside its NGT mask, in the board's frame."""
    fen = case.meta["fens"][row]
    attribution = from_perspective(reduce_attributions(attributions[row : row + 1])[0], fen)
    mask = from_perspective(np.asarray(case.truth["mask"][row], dtype=float), fen)
    return board_heatmap_png(path, fen, attribution, mask, f"{case.name}, position {row}")

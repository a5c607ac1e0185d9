"""Chess near-ground-truth (NGT) family: Mücke & Pfahler, "Check Mate: A Sanity Check for
Trustworthy AI", LWDA 2022 (CEUR-WS Vol-3341).

A position (FEN) is labelled from the point of view of the side to move: 0 = no check, 1 = check
(not mate), 2 = checkmate.  Every position carries three NGT masks (uint64 bitboards, bit s =
square s = 8*rank + file, the layout ``chess.SquareSet(int)`` reads):

- ``mask0`` squares controlled by the enemy (union of ``board.attacks(s)`` over enemy pieces);
- ``mask1`` from/to squares of every legal move (castling is king-from -> king-to, en passant
  contributes the ep target square);
- ``mask2`` pieces essential to the mate: checkers, friendly pieces next to the king, enemy
  pieces guarding the king's flight squares, enemy pieces protecting a checker.

Each class is scored against its own mask (class c against mask c), by the distance between the
explanation reduced to 8x8 (max |A| over the 12 planes, divided by its max) and the mask.

Conventions (our defaults where the paper is silent; ``docs/chess_ngt.md`` says where they
differ from the paper):

- 8x8 arrays: ``M[row, col]`` is square ``8*row + col``: row = rank index (row 0 = rank 1),
  col = file (col 0 = file a).  Only pictures flip rows (rank 8 on top).
- Input encoding, remedy (A) *side-to-move perspective*: 12 binary planes, 0-5 the mover's
  P N B R Q K, 6-11 the opponent's.  When black is to move the board is mirrored
  (``Board.mirror()``: ranks flipped, colours swapped) and so are the masks
  (``SquareSet.mirror()``), so every mask is a function of the input.  :func:`encode` is the one
  function that does this; :func:`from_perspective` undoes it for display.
- Positions come from seeded random playouts (:func:`generate_positions`), not from Lichess.
  Positions with a legal en-passant capture are dropped (ep-ambiguous: the ep right is not in
  the planes but changes mask1 and possibly the label).  Castling rights are not in the planes
  either; they never change the label and only change mask1 outside check, where mask1 is not
  the class' mask.
- The oracle (:class:`ChessOracle`) and a small CNN (:func:`load_cnn`, shipped weights, used
  only above the quality gate) are the models; :func:`ngt` is the check.

python-chess (``chess``, GPL-3.0+) is an optional extra, imported inside the functions that need
it; nothing of it is vendored.

The package, one room per job (each module knows only what its name says):

- ``rules``      labels, the three masks, their invariants, the uint64 <-> 8x8 bit layout;
- ``positions``  the seeded playout generator and the cached positions of the cases;
- ``encoding``   boards <-> the 12 input planes (side-to-move frame), feature names, square groups;
- ``models``     the python-chess oracle, the shipped CNN, its card and quality gate;
- ``csvio``      the published CSV layout, and a user's positions file in the data directory;
- ``ngt``        the 8x8 reduction, the four distances and the ``ngt`` check;
- ``draw``       the board picture of a position;
- this module    the six cases, one function each, assembled from the rooms above.

The specification these modules cite ("Specification n") is the last part of
``docs/chess_ngt.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.cache import Cache
from pytest_xai.case import Case
from pytest_xai.cases.chess.csvio import (
    USER_CSV,
    CsvProblem,
    read_csv,
    user_positions,
    write_csv,
)
from pytest_xai.cases.chess.draw import board_heatmap_png, draw_worst_board
from pytest_xai.cases.chess.encoding import (
    PLANES,
    decode,
    encode,
    feature_names,
    from_perspective,
    square_groups,
)
from pytest_xai.cases.chess.models import (
    CLASS_WARNING,
    CNN_CARD,
    CNN_WEIGHTS,
    DATA,
    QUALITY_GATE,
    ChessOracle,
    cnn,
    cnn_accuracy,
    cnn_card,
    cnn_warnings,
    gated_cnn_card,
    load_cnn,
    report_header,
)
from pytest_xai.cases.chess.ngt import (
    MAX_DISTANCE,
    METRIC_RANGE,
    METRICS,
    distances,
    mask_reference,
    ngt,
    reduce_attributions,
)
from pytest_xai.cases.chess.positions import (
    BETA,
    COLUMNS,
    GAMMA,
    MIN_FULLMOVE,
    N_PER_CLASS,
    case_positions,
    generate_positions,
    position_key,
)
from pytest_xai.cases.chess.rules import (
    CLASSES,
    array_to_mask,
    invariant_violations,
    label_of,
    mask_to_array,
    masks_of,
    reference_masks,
)
from pytest_xai.registry import Family

__all__ = [
    "BETA",
    "BUDGET",
    "CLASSES",
    "CLASS_WARNING",
    "CNN_CARD",
    "CNN_WEIGHTS",
    "COLUMNS",
    "DATA",
    "GAMMA",
    "MAX_DISTANCE",
    "METRICS",
    "METRIC_RANGE",
    "MIN_FULLMOVE",
    "N_EXPLAINED",
    "N_PER_CLASS",
    "PLANES",
    "QUALITY_GATE",
    "SOURCE",
    "USER_CSV",
    "ChessOracle",
    "CsvProblem",
    "array_to_mask",
    "board_heatmap_png",
    "case_positions",
    "chess_cnn_check",
    "chess_cnn_mate",
    "chess_cnn_no_check",
    "chess_oracle_check",
    "chess_oracle_mate",
    "chess_oracle_no_check",
    "cnn",
    "cnn_accuracy",
    "cnn_card",
    "cnn_warnings",
    "decode",
    "distances",
    "draw_worst_board",
    "encode",
    "feature_names",
    "from_perspective",
    "gated_cnn_card",
    "generate_positions",
    "invariant_violations",
    "label_of",
    "load_cnn",
    "mask_reference",
    "mask_to_array",
    "masks_of",
    "ngt",
    "position_key",
    "read_csv",
    "reduce_attributions",
    "reference_masks",
    "report_header",
    "square_groups",
    "user_positions",
    "write_csv",
]

SOURCE = "Mücke & Pfahler 2022, 'Check Mate', LWDA (CEUR-WS Vol-3341)"
FAMILY = Family("chess", source=SOURCE, smoke=("ngt", "chess_oracle_check"), header=report_header, libraries=("chess",))
#: Positions each case explains: the first 16 of its class.  ``ngt`` passes on the mean distance over
#: positions.  Its thresholds were calibrated at 32 positions a class, where the sd of that mean is
#: ~0.02 (~0.11 a position); at 16 it is ~0.03, a seventeenth of the 0.5 margin between the
#: threshold and the random control, so a control's verdict cannot change, and each perturbation
#: explainer's call costs half.  Explainers within ~0.05 of the threshold are there at any size.
N_EXPLAINED = 16
#: Model evaluations a call may spend per position explained (``pytest_xai.engine.budget``): the CNN costs
#: ~0.35 ms a row on one thread, the python-chess oracle ~0.07 ms; 625 and 1,250 evaluations a
#: position keep a perturbation explainer (KernelSHAP, LIME over the 64 squares) within seconds a case.
BUDGET_PER_POSITION = {"cnn": 625, "oracle": 1_250}


def _case(info, label: int, seed: int, cache: Cache, model: Any, predict, torch_model=None, data_dir=None) -> Case:
    rows = user_positions(data_dir) or case_positions(seed, cache)
    sel = np.flatnonzero(rows["label"] == label)[:N_EXPLAINED]
    all_planes = encode(rows["fen"])
    planes, *masks = encode(rows["fen"][sel], *(rows[f"mask{k}"][sel] for k in range(3)))
    truth = {"mask": masks[label], **{f"mask{k}": masks[k] for k in range(3)}}
    meta = {
        "fens": [str(f) for f in rows["fen"][sel]],
        "class": CLASSES[label],
        "mask_type": f"mask{label}",
        "encoding": "side-to-move perspective (remedy A)",
        "seed": seed,
        "groups": square_groups(),
        "budget": BUDGET_PER_POSITION["oracle" if isinstance(model, ChessOracle) else "cnn"] * len(sel),
    }
    return Case(
        info=info,
        inputs=planes,
        predict=predict,
        feature_names=feature_names(),
        model=model,
        target=label,
        background=all_planes,
        baseline=np.zeros((12, 8, 8), dtype=np.float32),
        torch_model=torch_model,
        truth=truth,
        meta=meta,
        draw=draw_worst_board,
    )


def _oracle_case(info, label: int, seed: int, cache: Cache, data_dir) -> Case:
    oracle = ChessOracle()
    return _case(info, label, seed, cache, model=oracle, predict=oracle, data_dir=data_dir)


def _cnn_case(info, label: int, seed: int, cache: Cache, data_dir) -> Case:
    card = gated_cnn_card()
    import torch

    torch.set_num_threads(1)
    model = load_cnn()

    def predict(x) -> np.ndarray:
        with torch.no_grad():
            logits = model(torch.as_tensor(np.asarray(x), dtype=torch.float32))
            return torch.softmax(logits, dim=1).numpy().astype(float)

    case = _case(info, label, seed, cache, model=model, predict=predict, torch_model=model, data_dir=data_dir)
    case.meta["cnn"] = card
    return case


_NGT = {"ngt": {"mask": "mask"}}


@FAMILY.case(category="fidelity", source="§2.1 mask0, oracle §4", checks=_NGT)
def chess_oracle_no_check(info, *, seed, cache, data_dir=None) -> Case:
    """No-check positions, python-chess oracle; NGT = enemy-controlled squares (mask0)."""
    return _oracle_case(info, 0, seed, cache, data_dir)


@FAMILY.case(category="fidelity", source="§2.1 mask1, oracle §4", checks=_NGT)
def chess_oracle_check(info, *, seed, cache, data_dir=None) -> Case:
    """Check positions, python-chess oracle; NGT = from/to squares of legal moves (mask1)."""
    return _oracle_case(info, 1, seed, cache, data_dir)


@FAMILY.case(category="fidelity", source="§2.1 mask2, oracle §4", checks=_NGT)
def chess_oracle_mate(info, *, seed, cache, data_dir=None) -> Case:
    """Checkmate positions, python-chess oracle; NGT = pieces essential to the mate (mask2)."""
    return _oracle_case(info, 2, seed, cache, data_dir)


@FAMILY.case(category="fidelity", source="§2.1 mask0, CNN §3", checks=_NGT, libraries=("chess", "torch"))
def chess_cnn_no_check(info, *, seed, cache, data_dir=None) -> Case:
    """No-check positions, the shipped CNN; NGT = enemy-controlled squares (mask0)."""
    return _cnn_case(info, 0, seed, cache, data_dir)


@FAMILY.case(category="fidelity", source="§2.1 mask1, CNN §3", checks=_NGT, libraries=("chess", "torch"))
def chess_cnn_check(info, *, seed, cache, data_dir=None) -> Case:
    """Check positions, the shipped CNN; NGT = from/to squares of legal moves (mask1)."""
    return _cnn_case(info, 1, seed, cache, data_dir)


@FAMILY.case(category="fidelity", source="§2.1 mask2, CNN §3", checks=_NGT, libraries=("chess", "torch"))
def chess_cnn_mate(info, *, seed, cache, data_dir=None) -> Case:
    """Checkmate positions, the shipped CNN; NGT = pieces essential to the mate (mask2)."""
    return _cnn_case(info, 2, seed, cache, data_dir)

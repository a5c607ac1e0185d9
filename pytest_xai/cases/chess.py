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

Conventions (the spec's defaults, ``/work/shared/reference/chess_ngt.md``):

- 8x8 arrays: ``M[row, col]`` is square ``8*row + col``: row = rank index (row 0 = rank 1),
  col = file (col 0 = file a).  Only pictures flip rows (rank 8 on top).
- Input encoding, remedy (A) *side-to-move perspective*: 12 binary planes, 0-5 the mover's
  P N B R Q K, 6-11 the opponent's.  When black is to move the board is mirrored
  (``Board.mirror()``: ranks flipped, colours swapped) and so are the masks
  (``SquareSet.mirror()``), so every mask is a function of the input.  :func:`encode` is the one
  function that does this; :func:`from_perspective` undoes it for display.
- Positions come from seeded random playouts (:func:`generate_positions`), not from Lichess.

python-chess (``chess``, GPL-3.0+) is an optional extra, imported inside the functions that need
it; nothing of it is vendored.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.cases import register
from pytest_xai.checks import attributions_of, check
from pytest_xai.errors import NotApplicable

SOURCE = "Mücke & Pfahler 2022, 'Check Mate', LWDA (CEUR-WS Vol-3341)"
CLASSES = ("no_check", "check", "checkmate")
PLANES = "PNBRQKpnbrqk"  # default plane order (spec §5): white/us P N B R Q K, black/them p n b r q k
COLUMNS = ("fen", "label", "mask0", "mask1", "mask2")
METRICS = ("correlation", "chebyshev", "euclidean", "cosine")
BETA, GAMMA = 0.5, 0.3  # spec §7: probability of a mating move, then of a checking move
MIN_FULLMOVE = 11  # spec §7: skip the opening, "ten moves" read as ten full moves
QUALITY_GATE = 0.99  # spec §8: the CNN is used only if every class reaches this hold-out accuracy
DATA = Path(__file__).resolve().parent.parent / "data"
CNN_WEIGHTS = DATA / "chess_cnn.pt"
CNN_CARD = DATA / "chess_cnn.json"
_BITS = np.uint64(1) << np.arange(64, dtype=np.uint64)


def _chess():
    """python-chess, or an ImportError that says how to get it."""
    try:
        import chess
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the chess cases need python-chess: install pytest-xai[chess] (pip install chess)"
        ) from exc
    return chess


# --------------------------------------------------------------------------------------------
# Labels and masks


def label_of(board) -> int:
    """0 no check, 1 check, 2 checkmate, for the side to move (a stalemate is 0)."""
    if not board.is_check():
        return 0
    return 1 if any(board.generate_legal_moves()) else 2


def masks_of(board) -> tuple[int, int, int]:
    """(mask0, mask1, mask2) of ``board`` as uint64 ints, per spec §3, from bitboards.

    The fast path: enemy pawn attacks by shifting the pawn bitboard, other pieces through
    ``attacks_mask``/``attackers_mask`` (python-chess' magic-free lookup tables), legal moves
    read straight off the generator.  :func:`reference_masks` is the literal per-square version
    this is tested against.
    """
    chess = _chess()
    us = board.turn
    them = not us
    theirs = board.occupied_co[them]
    ours = board.occupied_co[us]

    # mask0: squares attacked by the enemy (pawns: diagonals only; sliders stop at, and include,
    # the first occupied square; defended enemy-occupied squares are included).
    pawns = board.pawns & theirs
    if them == chess.WHITE:
        m0 = ((pawns & ~chess.BB_FILE_A) << 7 | (pawns & ~chess.BB_FILE_H) << 9) & chess.BB_ALL
    else:
        m0 = (pawns & ~chess.BB_FILE_A) >> 9 | (pawns & ~chess.BB_FILE_H) >> 7
    pieces = theirs & ~pawns
    while pieces:
        low = pieces & -pieces
        m0 |= board.attacks_mask(low.bit_length() - 1)
        pieces ^= low

    # mask1: from and to squares of all legal moves.
    m1 = 0
    for move in board.generate_legal_moves():
        m1 |= chess.BB_SQUARES[move.from_square] | chess.BB_SQUARES[move.to_square]

    # mask2: pieces essential to the mate (meaningful for label 2 only).
    m2 = 0
    king = board.king(us)
    if king is not None:
        checkers = board.attackers_mask(them, king)
        around = chess.BB_KING_ATTACKS[king]
        m2 = checkers | (around & ours)
        squares = (around & ~ours) | checkers
        while squares:
            low = squares & -squares
            m2 |= board.attackers_mask(them, low.bit_length() - 1)
            squares ^= low
    return m0, m1, m2


def reference_masks(board) -> tuple[int, int, int]:
    """The straightforward per-square reading of spec §3 with ``SquareSet``s.

    Slow (a loop over the 64 squares and over neighbour squares); kept as the executable spec
    that :func:`masks_of` is checked against, in the tests and in the benchmark.
    """
    chess = _chess()
    us, them = board.turn, not board.turn
    m0 = chess.SquareSet()
    for square in chess.SQUARES:
        piece = board.piece_at(square)
        if piece is not None and piece.color == them:
            m0 |= board.attacks(square)
    m1 = chess.SquareSet()
    for move in board.legal_moves:
        m1.add(move.from_square)
        m1.add(move.to_square)
    m2 = chess.SquareSet()
    king = board.king(us)
    if king is not None:
        checkers = board.checkers()
        m2 |= checkers
        for square in chess.SquareSet(chess.BB_KING_ATTACKS[king]):
            if board.color_at(square) == us:
                m2.add(square)
            else:
                m2 |= board.attackers(them, square)
        for checker in checkers:
            m2 |= board.attackers(them, checker)
    return int(m0), int(m1), int(m2)


def mask_to_array(masks) -> np.ndarray:
    """uint64 mask(s) -> bool array (..., 8, 8) with ``M[row=rank, col=file]``."""
    arr = np.asarray(masks, dtype=np.uint64)
    bytes_ = arr.astype("<u8").reshape(-1, 1).view(np.uint8)
    bits = np.unpackbits(bytes_, axis=-1, bitorder="little").astype(bool)
    return bits.reshape(arr.shape + (8, 8))


def array_to_mask(array) -> np.ndarray:
    """bool/0-1 array (..., 8, 8) -> uint64 mask(s) (a numpy uint64 scalar for one board)."""
    arr = np.asarray(array).astype(bool).reshape(np.shape(array)[:-2] + (64,))
    return (arr * _BITS).sum(axis=-1, dtype=np.uint64)


# --------------------------------------------------------------------------------------------
# Position generator (spec §7)


def _candidate_checks(board, chess) -> Iterable:
    """Legal moves that may give check: direct checks, discovered checks and specials.

    A superset filter (confirmed by pushing the move) that spares a push for most moves.
    """
    us, them = board.turn, not board.turn
    king = board.king(them)
    if king is None:
        yield from board.generate_legal_moves()
        return
    occ = board.occupied
    diag = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occ]
    line = (chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occ]
            | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occ])
    targets = {
        chess.PAWN: chess.BB_PAWN_ATTACKS[them][king],
        chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
        chess.BISHOP: diag,
        chess.ROOK: line,
        chess.QUEEN: diag | line,
        chess.KING: 0,
    }
    ours = board.occupied_co[us]
    snipers = ours & ((chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens))
                      | ((chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0])
                         & (board.rooks | board.queens)))
    discoverers = 0
    for sniper in chess.scan_forward(snipers):
        between = chess.between(king, sniper) & occ
        if between and not between & (between - 1) and between & ours:
            discoverers |= between
    for move in board.generate_legal_moves():
        piece = board.piece_type_at(move.from_square)
        if (chess.BB_SQUARES[move.to_square] & targets[piece]
                or chess.BB_SQUARES[move.from_square] & discoverers
                or move.promotion or board.is_castling(move) or board.is_en_passant(move)):
            yield move


def _playout(rng: random.Random, beta: float, gamma: float, chess):
    """One seeded game from the initial position; yields (board, label) for every position
    reached and for every mate-in-one found on the way (pushed, then taken back).

    Move choice: with probability ``beta`` a mating move if any, else with probability
    ``gamma`` a checking move if any, else a uniform random legal move; the game stops at
    ``is_game_over()`` (no draw claims).
    """
    board = chess.Board()
    while True:
        over = board.is_game_over(claim_draw=False)
        yield board, (2 if board.is_checkmate() else 1 if board.is_check() else 0)
        if over:
            return
        checks, mates = [], []
        for move in _candidate_checks(board, chess):
            board.push(move)
            if board.is_check():
                checks.append(move)
                if not any(board.generate_legal_moves()):
                    mates.append(move)
                    yield board, 2
            board.pop()
        if mates and rng.random() < beta:
            move = rng.choice(mates)
        elif checks and rng.random() < gamma:
            move = rng.choice(checks)
        else:
            move = rng.choice(list(board.generate_legal_moves()))
        board.push(move)


def position_key(board) -> str:
    """De-duplication key: placement, turn, castling rights, legal ep square (no clocks)."""
    return " ".join(board.fen(en_passant="legal").split()[:4])


def generate_positions(
    n_per_class: int, *, seed: int, beta: float = BETA, gamma: float = GAMMA,
    min_fullmove: int = MIN_FULLMOVE,
) -> dict[str, np.ndarray]:
    """``n_per_class`` positions of each class from seeded mate-seeking random playouts.

    Returns arrays ``fen`` (str), ``label`` (int8) and ``mask0/1/2`` (uint64), ordered by class.
    Rules (spec §7): positions with ``fullmove_number < min_fullmove`` are skipped (the paper
    skips the first ten moves; read as ten full moves = 20 plies); a position of class c is
    accepted with probability min(1, n_min / n_c) over the running counts of candidates seen
    (plus one), which spreads each class over many games, until its quota is full; duplicates on
    :func:`position_key` are dropped; positions with a legal en-passant capture are dropped as
    *ep-ambiguous* (the ep right is not in the 12 planes yet changes mask1 and possibly the
    label, spec §4); every kept position satisfies ``board.is_valid()``.
    """
    chess = _chess()
    if n_per_class < 0:
        raise ValueError(f"n_per_class must be >= 0, got {n_per_class}")
    rng = random.Random(seed)
    seen_keys: set[str] = set()
    counts = [1, 1, 1]
    rows: list[list[tuple[str, int, int, int, int]]] = [[], [], []]
    while min(len(r) for r in rows) < n_per_class:
        for board, label in _playout(rng, beta, gamma, chess):
            if board.fullmove_number < min_fullmove:
                continue
            counts[label] += 1
            if len(rows[label]) >= n_per_class:
                continue
            if rng.random() >= min(counts) / counts[label]:
                continue
            key = position_key(board)
            if key in seen_keys or board.has_legal_en_passant() or not board.is_valid():
                continue
            seen_keys.add(key)
            rows[label].append((board.fen(), label, *masks_of(board)))
    flat = [row for per_class in rows for row in per_class]
    return _rows_to_arrays(flat)


def _rows_to_arrays(rows: Sequence[tuple[str, int, int, int, int]]) -> dict[str, np.ndarray]:
    return {
        "fen": np.array([r[0] for r in rows], dtype=str),
        "label": np.array([r[1] for r in rows], dtype=np.int8),
        "mask0": np.array([r[2] for r in rows], dtype=np.uint64),
        "mask1": np.array([r[3] for r in rows], dtype=np.uint64),
        "mask2": np.array([r[4] for r in rows], dtype=np.uint64),
    }


# --------------------------------------------------------------------------------------------
# Encoding (remedy A: side-to-move perspective)


def _planes_of(board, chess) -> list[int]:
    """12 bitboards of ``board`` seen from the side to move (mirrored when black moves)."""
    us, them = board.turn, not board.turn
    bbs = [board.pieces_mask(pt, us) for pt in chess.PIECE_TYPES]
    bbs += [board.pieces_mask(pt, them) for pt in chess.PIECE_TYPES]
    if us == chess.BLACK:
        bbs = [chess.flip_vertical(bb) for bb in bbs]
    return bbs


def encode(fens: Sequence[str], *masks) -> Any:
    """Planes (n, 12, 8, 8) float32 in the side-to-move frame, and each mask array in that frame.

    ``encode(fens)`` returns the planes; ``encode(fens, mask0, ...)`` returns
    ``(planes, mask0_8x8, ...)`` with the uint64 masks mirrored (``s -> s ^ 56``) for black to
    move exactly as the board is, as bool (n, 8, 8).  Planes 0-5 are the mover's P N B R Q K,
    6-11 the opponent's; ``planes[i, p, rank, file]``.
    """
    chess = _chess()
    boards = [chess.Board(fen) for fen in fens]
    bbs = np.array([_planes_of(b, chess) for b in boards], dtype=np.uint64).reshape(len(boards), 12)
    planes = mask_to_array(bbs).astype(np.float32)
    if not masks:
        return planes
    black = np.array([b.turn == chess.BLACK for b in boards], dtype=bool)
    out = [planes]
    for mask in masks:
        arr = mask_to_array(np.asarray(mask, dtype=np.uint64))
        arr[black] = arr[black, ::-1, :]
        out.append(arr)
    return tuple(out)


def from_perspective(array_8x8: np.ndarray, fen: str) -> np.ndarray:
    """An (…, 8, 8) map in the encoded frame back in the board's own frame (un-mirror for black)."""
    chess = _chess()
    arr = np.asarray(array_8x8)
    return arr[..., ::-1, :] if chess.Board(fen).turn == chess.BLACK else arr


def decode(planes: np.ndarray) -> list:
    """Boards (white = the mover, to move; no castling, no ep) from planes (n, 12, 8, 8).

    A square holds the piece of its largest plane if that value is >= 0.5 (spec §8); ties go to
    the lower plane index.
    """
    chess = _chess()
    bbs = _decode_bitboards(np.asarray(planes, dtype=float))
    return [_board_from_bitboards(row, chess) for row in bbs]


def _decode_bitboards(x: np.ndarray) -> np.ndarray:
    if x.ndim != 4 or x.shape[1:] != (12, 8, 8):
        raise ValueError(f"chess planes must be shaped (n, 12, 8, 8), got {x.shape}")
    flat = x.reshape(len(x), 12, 64)
    best = flat.argmax(axis=1)
    keep = flat.max(axis=1) >= 0.5
    onehot = (best[:, None, :] == np.arange(12)[None, :, None]) & keep[:, None, :]
    return (onehot * _BITS).sum(axis=-1, dtype=np.uint64)


def _board_from_bitboards(bbs: Sequence, chess):
    board = chess.Board(None)
    white = black = 0
    for i, bb in enumerate(int(b) for b in bbs):
        if i < 6:
            white |= bb
        else:
            black |= bb
    kinds = [int(bbs[i]) | int(bbs[i + 6]) for i in range(6)]
    board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings = kinds
    board.occupied_co[chess.WHITE] = white
    board.occupied_co[chess.BLACK] = black
    board.occupied = white | black
    board.promoted = 0
    board.turn = chess.WHITE
    return board


# --------------------------------------------------------------------------------------------
# Models


class ChessOracle:
    """f(planes) = one-hot label computed by python-chess on the decoded board (spec §8).

    The decoded board has the mover as white, to move.  Perturbed planes give boards no game
    reaches (no king, pawns on the back rank, two kings in check); the output is then defined
    without a validity gate: class 0 if the mover has no king, else check = the mover's king is
    attacked, mate = check and no legal move.  ``n_boards`` and ``n_invalid`` (boards failing
    ``is_valid()``) count what was seen; :meth:`reset` zeroes them between explanations.
    """

    def __init__(self) -> None:
        self.n_boards = 0
        self.n_invalid = 0

    def reset(self) -> None:
        self.n_boards = self.n_invalid = 0

    def __call__(self, planes) -> np.ndarray:
        chess = _chess()
        x = np.asarray(planes, dtype=float)
        bbs = _decode_bitboards(x)
        out = np.zeros((len(x), 3))
        for i, row in enumerate(bbs):
            board = _board_from_bitboards(row, chess)
            self.n_boards += 1
            self.n_invalid += not board.is_valid()
            out[i, 0 if board.king(chess.WHITE) is None else label_of(board)] = 1.0
        return out


def cnn(widths: Sequence[int] = (32, 32, 48, 48), hidden: int = 128):
    """The reference CNN (spec §8): four 'same' convolutions with kernels 7, 5, 3, 3, ReLU,
    a flatten-dense head, 3 logits.  Narrower than the paper's 782,851 parameters so the
    shipped weights stay small; see ``scripts/train_chess_cnn.py``.
    """
    import torch.nn as nn

    layers: list = []
    channels = 12
    for width, kernel in zip(widths, (7, 5, 3, 3)):
        layers += [nn.Conv2d(channels, width, kernel, padding=kernel // 2), nn.ReLU()]
        channels = width
    layers += [nn.Flatten(), nn.Linear(channels * 64, hidden), nn.ReLU(), nn.Linear(hidden, 3)]
    return nn.Sequential(*layers)


def load_cnn(path: str | Path = CNN_WEIGHTS):
    """The shipped CNN in eval mode: float16 ``state_dict`` read with ``weights_only=True``."""
    import torch

    model = cnn()
    state = torch.load(path, weights_only=True, map_location="cpu")
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    return model.eval()

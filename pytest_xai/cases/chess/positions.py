"""Seeded positions: mate- and check-seeking random playouts, de-duplicated and class-balanced
(``docs/chess_ngt.md``, Specification 7; the paper samples Lichess games instead, Mücke & Pfahler
2022, §2), and the cached set of positions the cases share.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

import numpy as np

from pytest_xai.cache import Cache
from pytest_xai.cases.chess.rules import chess_module, label_of, masks_of

COLUMNS = ("fen", "label", "mask0", "mask1", "mask2")
BETA, GAMMA = 0.5, 0.3  # Specification 7: probability of a mating move, then of a checking move
MIN_FULLMOVE = 11  # Specification 7: skip the opening, "ten moves" read as ten full moves
N_PER_CLASS = 100  # positions per class generated for the cases: 300 in all, the background


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
    line = (
        chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occ]
        | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occ]
    )
    targets = {
        chess.PAWN: chess.BB_PAWN_ATTACKS[them][king],
        chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
        chess.BISHOP: diag,
        chess.ROOK: line,
        chess.QUEEN: diag | line,
        chess.KING: 0,
    }
    ours = board.occupied_co[us]
    snipers = ours & (
        (chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens))
        | ((chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]) & (board.rooks | board.queens))
    )
    discoverers = 0
    for sniper in chess.scan_forward(snipers):
        between = chess.between(king, sniper) & occ
        if between and not between & (between - 1) and between & ours:
            discoverers |= between
    for move in board.generate_legal_moves():
        piece = board.piece_type_at(move.from_square)
        if (
            chess.BB_SQUARES[move.to_square] & targets[piece]
            or chess.BB_SQUARES[move.from_square] & discoverers
            or move.promotion
            or board.is_castling(move)
            or board.is_en_passant(move)
        ):
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
    n_per_class: int,
    *,
    seed: int,
    beta: float = BETA,
    gamma: float = GAMMA,
    min_fullmove: int = MIN_FULLMOVE,
) -> dict[str, np.ndarray]:
    """``n_per_class`` positions of each class from seeded mate-seeking random playouts.

    Returns arrays ``fen`` (str), ``label`` (int8) and ``mask0/1/2`` (uint64), ordered by class.
    Rules (Specification 7): positions with ``fullmove_number < min_fullmove`` are skipped (the paper
    skips the first ten moves; read as ten full moves = 20 plies); a position of class c is
    accepted with probability min(1, n_min / n_c) over the running counts of candidates seen
    (plus one), which spreads each class over many games, until its quota is full; duplicates on
    :func:`position_key` are dropped; positions with a legal en-passant capture are dropped as
    *ep-ambiguous* (the ep right is not in the 12 planes yet changes mask1 and possibly the
    label, Specification 4); every kept position satisfies ``board.is_valid()``.
    """
    chess = chess_module()
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
    return rows_to_arrays(flat)


def rows_to_arrays(rows: Sequence[tuple[str, int, int, int, int]]) -> dict[str, np.ndarray]:
    """``(fen, label, mask0, mask1, mask2)`` rows as the arrays the cache stores."""
    return {
        "fen": np.array([r[0] for r in rows], dtype=str),
        "label": np.array([r[1] for r in rows], dtype=np.int8),
        "mask0": np.array([r[2] for r in rows], dtype=np.uint64),
        "mask1": np.array([r[3] for r in rows], dtype=np.uint64),
        "mask2": np.array([r[4] for r in rows], dtype=np.uint64),
    }


_POSITIONS: dict[tuple, dict[str, np.ndarray]] = {}


def case_positions(seed: int, cache: Cache, n_per_class: int = N_PER_CLASS) -> dict[str, np.ndarray]:
    """The generated positions the cases use, cached as npz and re-verified on load.

    The entry's builder identity is this module's source hash (``pytest_xai.cache``), so editing
    the generator rebuilds it; a change to the rules (labels, masks) fails ``validate``, which
    recomputes every row's label and masks from its FEN, and rebuilds it too.
    """
    params = {"n_per_class": n_per_class, "seed": seed, "beta": BETA, "gamma": GAMMA, "min_fullmove": MIN_FULLMOVE}

    def build() -> dict[str, np.ndarray]:
        return generate_positions(n_per_class, seed=seed)

    def validate(rows: dict[str, np.ndarray]) -> None:
        chess = chess_module()
        counts = np.bincount(rows["label"], minlength=3).tolist()
        if sorted(rows) != sorted(COLUMNS) or counts != [n_per_class] * 3:
            raise ValueError("chess positions have the wrong keys or class counts")
        for i, fen in enumerate(rows["fen"]):
            board = chess.Board(str(fen))
            got = (label_of(board), *masks_of(board))
            want = tuple(int(rows[c][i]) for c in COLUMNS[1:])
            if got != want:
                raise ValueError(f"row {i} ({fen}) does not match its recomputed label and masks")

    key = (seed, n_per_class, cache.root)
    if key not in _POSITIONS:  # the six cases share one set of positions per process
        _POSITIONS[key] = cache.arrays("chess_positions", params, build, validate)
    return _POSITIONS[key]

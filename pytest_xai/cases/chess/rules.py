"""The rules of chess as the NGT masks read them: labels, the three masks, their invariants and
the uint64 <-> 8x8 bit layout (Mücke & Pfahler 2022, §2.1; ``docs/chess_ngt.md``, Specification
1-4).  Everything here is a function of one ``chess.Board``; python-chess is imported lazily by
:func:`chess_module` so the package imports without the extra.
"""

from __future__ import annotations

import numpy as np

from pytest_xai.extras import install_line

CLASSES = ("no_check", "check", "checkmate")
#: Bit s of a uint64 mask is square s = 8*rank + file (a1 = 0, h8 = 63); Specification 2.
SQUARE_BITS = np.uint64(1) << np.arange(64, dtype=np.uint64)


def chess_module():
    """python-chess, or an ImportError that says how to get it."""
    try:
        import chess
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"the chess cases need python-chess: {install_line('chess')}") from exc
    return chess


def label_of(board) -> int:
    """0 no check, 1 check, 2 checkmate, for the side to move (a stalemate is 0)."""
    if not board.is_check():
        return 0
    return 1 if any(board.generate_legal_moves()) else 2


def masks_of(board) -> tuple[int, int, int]:
    """(mask0, mask1, mask2) of ``board`` as uint64 ints, per Specification 3, from
    bitboards.

    The fast path: enemy pawn attacks by shifting the pawn bitboard, other pieces through
    ``attacks_mask``/``attackers_mask`` (python-chess' magic-free lookup tables), legal moves
    read straight off the generator.  :func:`reference_masks` is the literal per-square version
    this is tested against.
    """
    chess = chess_module()
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
    m1 = _legal_move_squares(board, chess)

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


def _legal_move_squares(board, chess) -> int:
    """Union of from/to squares of the legal moves, by whole bitboards (no Move objects).

    Mirrors python-chess' legality: king steps to squares not attacked with the king lifted;
    other pieces must capture or block a single checker (none may move in double check) and
    pinned pieces stay on their pin line; pawns move as whole bitboards.  En passant and
    castling come from python-chess' own generators.  Boards that are not one-king-per-side
    with no pawn on a back rank take python-chess' generator.
    """
    us, them = board.turn, not board.turn
    ours, theirs, occ = board.occupied_co[us], board.occupied_co[them], board.occupied
    kings = board.kings & ours
    if not kings or kings & (kings - 1) or not board.kings & theirs or board.pawns & chess.BB_BACKRANKS:
        m1 = 0
        for move in board.generate_legal_moves():
            m1 |= chess.BB_SQUARES[move.from_square] | chess.BB_SQUARES[move.to_square]
        return m1
    king = kings.bit_length() - 1
    checkers = board.attackers_mask(them, king)
    lifted = occ ^ kings
    steps = 0
    candidates = chess.BB_KING_ATTACKS[king] & ~ours
    while candidates:
        low = candidates & -candidates
        if not board.attackers_mask(them, low.bit_length() - 1, lifted):
            steps |= low
        candidates ^= low
    frm, to = (kings if steps else 0), steps
    if checkers & (checkers - 1):
        return frm | to  # double check: only the king moves
    target = (chess.between(king, checkers.bit_length() - 1) | checkers) if checkers else ~ours & chess.BB_ALL
    # pins: an enemy slider on a line to the king with exactly one piece, ours, in between
    snipers = theirs & (
        (chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]) & (board.rooks | board.queens)
        | chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens)
    )
    pinned, lines = 0, {}
    while snipers:
        low = snipers & -snipers
        sniper = low.bit_length() - 1
        between = chess.between(king, sniper) & occ
        if between and not between & (between - 1) and between & ours:
            pinned |= between
            lines[between] = chess.ray(king, sniper)
        snipers ^= low
    pieces = ours & ~board.pawns & ~kings
    while pieces:
        low = pieces & -pieces
        reach = board.attacks_mask(low.bit_length() - 1) & target
        if low & pinned:
            reach &= lines[low]
        if reach:
            frm |= low
            to |= reach
        pieces ^= low
    pawns = ours & board.pawns
    free, stuck = pawns & ~pinned, pawns & pinned
    f, t = _pawn_move_squares(free, us, theirs, occ, target, chess)
    frm, to = frm | f, to | t
    while stuck:
        low = stuck & -stuck
        f, t = _pawn_move_squares(low, us, theirs, occ, target & lines[low], chess)
        frm, to = frm | f, to | t
        stuck ^= low
    if board.ep_square is not None:
        for move in board.generate_legal_ep():
            frm |= chess.BB_SQUARES[move.from_square]
            to |= chess.BB_SQUARES[move.to_square]
    if board.castling_rights and not checkers:
        for move in board.generate_castling_moves():
            frm |= chess.BB_SQUARES[move.from_square]
            to |= chess.BB_SQUARES[move.to_square]
    return frm | to


def _pawn_move_squares(pawns: int, us: bool, theirs: int, occ: int, target: int, chess):
    """(from, to) squares of the pushes and captures of ``pawns`` landing on ``target``."""
    if not pawns:
        return 0, 0
    empty = ~occ & chess.BB_ALL
    left, right = pawns & ~chess.BB_FILE_A, pawns & ~chess.BB_FILE_H
    if us == chess.WHITE:
        single = pawns << 8 & empty
        double = (single & chess.BB_RANK_3) << 8 & empty & target
        single &= target
        west, east = left << 7 & theirs & target, right << 9 & theirs & target
        frm = single >> 8 | double >> 16 | west >> 7 | east >> 9
    else:
        single = pawns >> 8 & empty
        double = (single & chess.BB_RANK_6) >> 8 & empty & target
        single &= target
        west, east = left >> 9 & theirs & target, right >> 7 & theirs & target
        frm = single << 8 | double << 16 | west << 9 | east << 7
    return frm, single | double | west | east


def reference_masks(board) -> tuple[int, int, int]:
    """The straightforward per-square reading of Specification 3 with ``SquareSet``s.

    Slow (a loop over the 64 squares and over neighbour squares); kept as the executable spec
    that :func:`masks_of` is checked against, in the tests and in the benchmark.
    """
    chess = chess_module()
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
    return (arr * SQUARE_BITS).sum(axis=-1, dtype=np.uint64)


def invariant_violations(board, masks: tuple[int, int, int] | None = None) -> list[str]:
    """The Specification 4 invariants that ``board`` (with its masks) breaks; [] when all hold."""
    chess = chess_module()
    m0, m1, m2 = masks_of(board) if masks is None else masks
    label = label_of(board)
    king = board.king(board.turn)
    problems = []
    if king is not None and bool(m0 >> king & 1) != (label >= 1):
        problems.append(f"king in mask0 is {bool(m0 >> king & 1)} but label is {label}")
    no_moves = not any(board.generate_legal_moves())
    if (m1 == 0) != no_moves:
        problems.append(f"mask1 empty is {m1 == 0} but 'no legal move' is {no_moves}")
    targets = {move.to_square for move in board.generate_legal_moves()}
    for checker in chess.scan_forward(board.checkers_mask()):
        if bool(m1 >> checker & 1) != (checker in targets):
            problems.append(
                f"checker on {chess.square_name(checker)}: in mask1 is "
                f"{bool(m1 >> checker & 1)}, capturable is {checker in targets}"
            )
    if label == 2 and board.checkers_mask() & ~m2:
        problems.append("a checker is missing from mask2")
    if not board.is_valid():
        problems.append(f"board.is_valid() is false ({board.status()!r})")
    return problems

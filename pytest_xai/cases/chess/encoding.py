"""Boards as model inputs: 12 binary planes in the side-to-move frame (remedy A of
``docs/chess_ngt.md``, Specification 5; the paper's planes, Mücke & Pfahler 2022, §3, carry no
turn bit), the way back to boards for the oracle, and the feature names and square groups of an
input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pytest_xai.cases.chess.rules import SQUARE_BITS, chess_module, mask_to_array

PLANES = "PNBRQKpnbrqk"  # plane order (Specification 5): the mover's P N B R Q K, then the opponent's


def _planes_of(board, chess) -> list[int]:
    """12 bitboards of ``board`` seen from the side to move (mirrored when black moves)."""
    us, them = board.turn, not board.turn
    bbs = [board.pieces_mask(pt, us) for pt in chess.PIECE_TYPES]
    bbs += [board.pieces_mask(pt, them) for pt in chess.PIECE_TYPES]
    if us == chess.BLACK:
        bbs = [chess.flip_vertical(bb) for bb in bbs]
    return bbs


def encode(fens: Iterable[str], *masks) -> Any:
    """Planes (n, 12, 8, 8) float32 in the side-to-move frame, and each mask array in that frame.

    ``encode(fens)`` returns the planes; ``encode(fens, mask0, ...)`` returns
    ``(planes, mask0_8x8, ...)`` with the uint64 masks mirrored (``s -> s ^ 56``) for black to
    move exactly as the board is, as bool (n, 8, 8).  Planes 0-5 are the mover's P N B R Q K,
    6-11 the opponent's; ``planes[i, p, rank, file]``.
    """
    chess = chess_module()
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
    chess = chess_module()
    arr = np.asarray(array_8x8)
    return arr[..., ::-1, :] if chess.Board(fen).turn == chess.BLACK else arr


def decode(planes: np.ndarray) -> list:
    """Boards (white = the mover, to move; no castling, no ep) from planes (n, 12, 8, 8).

    A square holds the piece of its largest plane if that value is >= 0.5 (Specification 8); ties go to
    the lower plane index.
    """
    chess = chess_module()
    bbs = decode_bitboards(np.asarray(planes, dtype=float))
    return [board_from_bitboards(row, chess) for row in bbs]


def decode_bitboards(x: np.ndarray) -> np.ndarray:
    """The 12 bitboards (uint64, one per piece plane) of each (12, 8, 8) position of ``x``; a square
    holds the piece of its strongest plane when that plane is >= 0.5."""
    if x.ndim != 4 or x.shape[1:] != (12, 8, 8):
        raise ValueError(f"chess planes must be shaped (n, 12, 8, 8), got {x.shape}")
    flat = x.reshape(len(x), 12, 64)
    best = flat.argmax(axis=1)
    keep = flat.max(axis=1) >= 0.5
    onehot = (best[:, None, :] == np.arange(12)[None, :, None]) & keep[:, None, :]
    return (onehot * SQUARE_BITS).sum(axis=-1, dtype=np.uint64)


def board_from_bitboards(bbs: Sequence, chess):
    """A ``chess.Board`` holding the pieces of 12 bitboards (white's six planes first)."""
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


def feature_names() -> list[str]:
    """'P@e4' = the mover's pawn on e4, 'p@e4' the opponent's; squares in the mover's frame."""
    files = "abcdefgh"
    return [f"{PLANES[p]}@{files[f]}{r + 1}" for p in range(12) for r in range(8) for f in range(8)]


def square_groups() -> np.ndarray:
    """Feature groups (contract name ``groups``): the 12 planes of a square move together, group
    id = square index 8*rank + file, shaped (12, 8, 8).  Perturbation explainers then occlude or
    sample squares (64 features), the unit the NGT masks are about."""
    return np.broadcast_to(np.arange(64).reshape(8, 8), (12, 8, 8)).copy()

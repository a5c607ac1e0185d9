"""Speed of the three chess NGT masks (Mücke & Pfahler 2022, §2.1): bitboard fast path
(``masks_of``) against the straightforward per-square python-chess reading
(``reference_masks``: ``SquareSet`` and ``board.attacks`` per square, ``board.attackers`` per
neighbour square) on the same generated positions.

    OMP_NUM_THREADS=1 pytest benchmarks/test_bench_chess_masks.py -p no:xai --benchmark-only

On a shared machine add ``--benchmark-timer=time.process_time`` (CPU time of this process).

The fast benchmark also times the reference once more (best of 3) and stores
``positions_per_second`` and ``speedup_vs_reference`` in ``extra_info``.
"""

from __future__ import annotations

import time

import pytest

chess = pytest.importorskip("chess")

from pytest_xai.cases import chess as cc

N_PER_CLASS = 500


@pytest.fixture(scope="module")
def boards():
    rows = cc.generate_positions(N_PER_CLASS, seed=123)
    return [chess.Board(str(fen)) for fen in rows["fen"]]


def all_masks(fn, boards):
    return [fn(board) for board in boards]


def best_of(fn, boards, timer, repeat=3) -> float:
    times = []
    for _ in range(repeat):
        start = timer()
        all_masks(fn, boards)
        times.append(timer() - start)
    return min(times)


def test_fast_and_reference_masks_are_identical(boards):
    assert all_masks(cc.masks_of, boards) == all_masks(cc.reference_masks, boards)


@pytest.mark.benchmark(group="chess-masks")
def test_bench_masks_fast(benchmark, boards):
    masks = benchmark(all_masks, cc.masks_of, boards)
    assert masks == all_masks(cc.reference_masks, boards)
    if benchmark.stats is None:  # --benchmark-disable: ran once as a plain test
        return
    fast = benchmark.stats.stats.min
    reference = best_of(cc.reference_masks, boards, getattr(benchmark, "_timer", time.perf_counter))
    benchmark.extra_info.update(
        positions=len(boards),
        positions_per_second=round(len(boards) / fast),
        speedup_vs_reference=round(reference / fast, 2),
    )
    print(
        f"\nchess masks: {len(boards) / fast:,.0f} positions/s (all three masks), "
        f"{reference / fast:.2f}x the per-square reference"
    )


@pytest.mark.benchmark(group="chess-masks")
def test_bench_masks_reference(benchmark, boards):
    benchmark(all_masks, cc.reference_masks, boards)
    if benchmark.stats is None:
        return
    benchmark.extra_info.update(
        positions=len(boards), positions_per_second=round(len(boards) / benchmark.stats.stats.min)
    )

"""Self-tests of the chess near-ground-truth family (Mücke & Pfahler 2022, "Check Mate")."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

chess = pytest.importorskip("chess")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_xai import NotApplicable, cases
from pytest_xai.cache import Cache
from pytest_xai.cases import chess as cc
from pytest_xai.explainers.baselines import random as random_explainer

# Reconstruction positions (docs/chess_ngt.md, Specification 9): (FEN, label).
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
FOOLS = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
SCHOLARS = "r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4"
BACK_RANK = "3R2k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"
CAPTURABLE = "4k3/8/8/8/8/8/4q3/4K3 w - - 0 1"
NOT_CAPTURABLE = "4k3/8/8/8/8/8/8/r3K3 w - - 0 1"
RECONSTRUCTION = [(START, 0), (FOOLS, 2), (SCHOLARS, 2), (BACK_RANK, 2), (CAPTURABLE, 1), (NOT_CAPTURABLE, 1)]


def sq(name: str) -> int:
    return chess.parse_square(name)


def bits(*names: str) -> int:
    return int(chess.SquareSet([sq(n) for n in names]))


@pytest.fixture(scope="module")
def positions():
    """40 generated positions per class (the same generator the cases use)."""
    return cc.generate_positions(40, seed=7)


@pytest.fixture(scope="module")
def boards(positions):
    return [chess.Board(str(fen)) for fen in positions["fen"]]


# ------------------------------------- reconstruction positions (docs/chess_ngt.md, Specification 9)


@pytest.mark.parametrize(("fen", "label"), RECONSTRUCTION)
def test_reconstruction_position_is_valid_with_its_label_and_invariants(fen, label):
    board = chess.Board(fen)
    assert board.is_valid()
    assert cc.label_of(board) == label
    assert cc.masks_of(board) == cc.reference_masks(board)
    assert cc.invariant_violations(board) == []


@pytest.mark.parametrize("fen", [FOOLS, SCHOLARS, BACK_RANK])
def test_mates_have_empty_mask1(fen):
    assert cc.masks_of(chess.Board(fen))[1] == 0


def test_capturable_checker_is_in_mask1():
    m0, m1, _m2 = cc.masks_of(chess.Board(CAPTURABLE))
    assert m1 >> sq("e2") & 1
    assert m1 == bits("e1", "e2")  # Kxe2 is the only legal move
    assert m0 >> sq("e1") & 1


def test_non_capturable_checker_is_not_in_mask1():
    _m0, m1, _m2 = cc.masks_of(chess.Board(NOT_CAPTURABLE))
    assert not m1 >> sq("a1") & 1
    assert m1 == bits("e1", "d2", "e2", "f2")


def test_start_position_masks_by_hand():
    m0, m1, m2 = cc.masks_of(chess.Board(START))
    # black attacks all of rank 6, its own rank 7 and 8 pieces defended from behind
    assert chess.SquareSet(m0) & chess.SquareSet(chess.BB_RANK_6) == chess.SquareSet(chess.BB_RANK_6)
    assert not m0 >> sq("e1") & 1
    assert m1 == int(
        chess.SquareSet(chess.BB_RANK_2 | chess.BB_RANK_3 | chess.BB_RANK_4) | chess.SquareSet(bits("b1", "g1"))
    )
    assert m2 == bits("d1", "f1", "d2", "e2", "f2")


def test_back_rank_mate_mask2():
    # checker d8, black pawns f7 g7 h7 blocking the king; no white piece guards a flight square
    assert cc.masks_of(chess.Board(BACK_RANK))[2] == bits("d8", "f7", "g7", "h7")


def test_fools_mate_mask2_includes_blockers_and_checker():
    # f2 is empty (f2-f3 was played): a flight square guarded only by the checker itself
    m2 = cc.masks_of(chess.Board(FOOLS))[2]
    assert chess.SquareSet(m2) == chess.SquareSet(bits("h4", "d1", "f1", "d2", "e2"))


@pytest.mark.parametrize("fen", [SCHOLARS, BACK_RANK])
def test_black_to_move_is_encoded_mirrored(fen):
    board = chess.Board(fen)
    masks = cc.masks_of(board)
    planes, *enc = cc.encode([fen], *[[m] for m in masks])
    assert np.array_equal(planes, cc.encode([board.mirror().fen()]))
    for mask, arr in zip(masks, enc):
        assert cc.array_to_mask(arr[0]) == int(chess.SquareSet(mask).mirror())
    king = board.king(chess.BLACK)
    assert planes[0, 5, chess.square_rank(king) ^ 7, chess.square_file(king)] == 1
    assert cc.from_perspective(enc[2][0], fen).tolist() == cc.mask_to_array(masks[2]).tolist()


def test_back_rank_encoding_by_hand():
    planes, _m0, _m1, m2 = cc.encode([BACK_RANK], *[[m] for m in cc.masks_of(chess.Board(BACK_RANK))])
    assert planes[0, 5, 0, 6] == 1  # our (black) king g8 -> g1
    assert planes[0, 9, 0, 3] == 1  # their (white) rook d8 -> d1
    assert planes[0, 0, 1, 5:8].tolist() == [1, 1, 1]  # our pawns f7 g7 h7 -> rank 2
    assert planes.sum() == 6
    assert np.argwhere(m2[0]).tolist() == [[0, 3], [1, 5], [1, 6], [1, 7]]


# ------------------------------------------------- invariants (docs/chess_ngt.md, Specification 4)


def test_generated_classes_are_balanced_valid_and_late(positions, boards):
    assert np.bincount(positions["label"]).tolist() == [40, 40, 40]
    keys = {cc.position_key(b) for b in boards}
    assert len(keys) == len(boards)
    for board, label in zip(boards, positions["label"]):
        assert board.is_valid()
        assert board.fullmove_number > 10
        assert not board.has_legal_en_passant()
        assert cc.label_of(board) == label


def test_generator_is_seeded():
    a, b = cc.generate_positions(3, seed=11), cc.generate_positions(3, seed=11)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["fen"], cc.generate_positions(3, seed=12)["fen"])


def test_stored_masks_are_recomputable(positions, boards):
    for i, board in enumerate(boards):
        assert cc.masks_of(board) == tuple(int(positions[f"mask{k}"][i]) for k in range(3))


def test_king_in_mask0_iff_label_at_least_1(positions, boards):
    for board, label, m0 in zip(boards, positions["label"], positions["mask0"]):
        assert bool(int(m0) >> board.king(board.turn) & 1) == (label >= 1)


def test_mask1_empty_iff_no_legal_moves(positions, boards):
    for board, label, m1 in zip(boards, positions["label"], positions["mask1"]):
        assert (int(m1) == 0) == (board.legal_moves.count() == 0)
        if label == 2:
            assert int(m1) == 0
        if label == 1:
            assert int(m1) != 0


def test_checker_in_mask1_iff_capturable(positions, boards):
    seen = {True: 0, False: 0}
    for board, m1 in zip(boards, positions["mask1"]):
        targets = {move.to_square for move in board.legal_moves}
        for checker in board.checkers():
            assert bool(int(m1) >> checker & 1) == (checker in targets)
            seen[checker in targets] += 1
    assert seen[True] and seen[False]  # both sides of the equivalence occur


def test_mate_checkers_are_in_mask2(positions, boards):
    for board, label, m2 in zip(boards, positions["label"], positions["mask2"]):
        if label == 2:
            assert int(board.checkers()) & ~int(m2) == 0


def test_only_the_side_to_move_can_be_in_check(boards):
    for board in boards:
        enemy_king = board.king(not board.turn)
        assert not board.is_attacked_by(board.turn, enemy_king)


def test_en_passant_only_capture_of_a_checker_is_not_in_mask1():
    # d7-d5 gives check to Ke4; d5 is defended by c6, so only exd6 e.p. removes the checker.
    board = chess.Board("8/8/2p5/3pP3/4K3/8/8/k7 w - d6 0 2")
    assert board.is_check() and board.has_legal_en_passant()
    m1 = cc.masks_of(board)[1]
    assert m1 >> sq("d6") & 1 and not m1 >> sq("d5") & 1
    assert cc.invariant_violations(board) == []  # the invariant reads "to_square equals"


def test_invariant_violations_catch_a_broken_mask():
    board = chess.Board(CAPTURABLE)
    m0, m1, m2 = cc.masks_of(board)
    assert cc.invariant_violations(board, (m0 & ~bits("e1"), m1, m2))
    assert cc.invariant_violations(board, (m0, m1 & ~bits("e2"), m2))
    assert cc.invariant_violations(chess.Board(BACK_RANK), (0, 1, 0))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1).map(lambda seed: cc.generate_positions(1, seed=seed)))
def test_generated_positions_satisfy_invariants_and_fast_masks_match(rows):
    assert rows["label"].tolist() == [0, 1, 2]
    for i, fen in enumerate(rows["fen"]):
        board = chess.Board(str(fen))
        masks = tuple(int(rows[f"mask{k}"][i]) for k in range(3))
        assert masks == cc.reference_masks(board)
        assert cc.invariant_violations(board, masks) == []


def test_fast_masks_match_reference_through_whole_games():
    """Every ply of random games, opening included: castling, en passant, promotions."""
    rng = random.Random(5)
    seen_ep = seen_castle = 0
    for _ in range(6):
        board = chess.Board()
        while not board.is_game_over():
            assert cc.masks_of(board) == cc.reference_masks(board)
            seen_ep += board.has_legal_en_passant()
            seen_castle += any(board.is_castling(m) for m in board.legal_moves)
            board.push(rng.choice(list(board.legal_moves)))
    assert seen_ep and seen_castle


def test_fast_masks_match_reference_on_random_placements():
    """Odd but valid placements (pins, double checks, promotions pending) from a seeded rng."""
    rng = random.Random(9)
    tested = checks = 0
    while tested < 400:
        board = chess.Board(None)
        for color in chess.COLORS:
            board.set_piece_at(rng.randrange(64), chess.Piece(chess.KING, color))
        for _ in range(rng.randrange(2, 12)):
            square = rng.randrange(64)
            if board.piece_at(square) is None:
                board.set_piece_at(square, chess.Piece(rng.randrange(1, 6), rng.random() < 0.5))
        board.turn = rng.random() < 0.5
        if board.is_valid():
            assert cc.masks_of(board) == cc.reference_masks(board), board.fen()
            tested += 1
            checks += board.is_check()
    assert checks > 20


def test_masks_on_a_board_without_king_do_not_crash():
    board = chess.Board("8/8/8/8/8/8/8/4k3 w - - 0 1")
    assert cc.masks_of(board) == cc.reference_masks(board)


# ---------------------------------------------------------------- arrays and encoding


def test_mask_array_orientation_row_is_rank_col_is_file():
    for name, (row, col) in {"a1": (0, 0), "h1": (0, 7), "a8": (7, 0), "h8": (7, 7), "e4": (3, 4)}.items():
        arr = cc.mask_to_array(bits(name))
        assert arr.shape == (8, 8) and np.argwhere(arr).tolist() == [[row, col]]
        assert int(cc.array_to_mask(arr)) == bits(name)
    many = np.array([2**63, 1, 2**64 - 1], dtype=np.uint64)
    assert np.array_equal(cc.array_to_mask(cc.mask_to_array(many)), many)


def test_encode_start_position_planes():
    planes = cc.encode([START])[0]
    assert planes.shape == (12, 8, 8) and planes.dtype == np.float32
    assert planes[0, 1].tolist() == [1] * 8 and planes[6, 6].tolist() == [1] * 8
    assert planes[5, 0, 4] == 1 and planes[11, 7, 4] == 1  # Ke1, ke8
    assert planes.sum() == 32


def test_decode_inverts_encode(positions, boards):
    decoded = cc.decode(cc.encode(positions["fen"]))
    for board, back in zip(boards, decoded):
        frame = board if board.turn == chess.WHITE else board.mirror()
        assert back.piece_map() == frame.piece_map()
        assert back.turn == chess.WHITE


def test_mirror_symmetry_of_encoding_and_masks(positions, boards):
    """Remedy (A): a position and its colour-mirror encode to the same planes and masks."""
    fens = [b.mirror().fen() for b in boards]
    mirrored = [cc.masks_of(b.mirror()) for b in boards]
    a = cc.encode(positions["fen"], positions["mask0"], positions["mask1"], positions["mask2"])
    b = cc.encode(fens, *(np.array([m[k] for m in mirrored], dtype=np.uint64) for k in range(3)))
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


# ---------------------------------------------------------------- oracle


def test_oracle_reproduces_labels(positions):
    oracle = cc.ChessOracle()
    out = oracle(cc.encode(positions["fen"]))
    assert out.shape == (120, 3) and set(np.unique(out)) == {0.0, 1.0}
    assert np.array_equal(out.argmax(1), positions["label"])
    assert oracle.n_boards == 120 and oracle.n_invalid == 0


def test_oracle_fallback_on_invalid_boards():
    oracle = cc.ChessOracle()
    x = cc.encode([CAPTURABLE, CAPTURABLE, BACK_RANK])
    x[0, 5] = 0  # the mover's king removed -> class 0
    x[1, 0, 7, 0] = 1  # a mover's pawn on its 8th rank: still check
    noise = np.random.default_rng(0).uniform(size=(20, 12, 8, 8))  # many kings, pawns anywhere
    out = oracle(np.concatenate([x, noise]))
    assert out[:3].argmax(1).tolist() == [0, 1, 2]
    assert np.allclose(out.sum(1), 1)
    assert oracle.n_boards == 23 and oracle.n_invalid >= 22
    oracle.reset()
    assert oracle.n_boards == oracle.n_invalid == 0


# ---------------------------------------------------------------- CSV


def test_csv_roundtrip(tmp_path, positions):
    path = tmp_path / "pos.csv"
    cc.write_csv(path, positions)
    assert path.read_text().splitlines()[0] == "fen,label,mask0,mask1,mask2"
    back, problems = cc.read_csv(path, strict=True)
    assert problems == []
    assert all(np.array_equal(back[k], positions[k]) for k in positions)
    assert back["mask0"].dtype == np.uint64


def test_csv_headerless_and_reordered_columns(tmp_path):
    masks = cc.masks_of(chess.Board(CAPTURABLE))
    (tmp_path / "a.csv").write_text(f"{CAPTURABLE},1,{masks[0]},{masks[1]},{masks[2]}\n")
    (tmp_path / "b.csv").write_text(
        f"Label,MASK2,mask1,mask0,FEN,extra\n1,{masks[2]},{masks[1]},{masks[0]},{CAPTURABLE},x\n"
    )
    for name in ("a.csv", "b.csv"):
        rows, _problems = cc.read_csv(tmp_path / name, strict=True)
        assert rows["label"].tolist() == [1] and tuple(int(rows[f"mask{k}"][0]) for k in range(3)) == masks


BAD_ROWS = [
    ("not a fen,0,0,0,0", "illegal FEN"),
    ("8/8/8/8/8/8/8/8 w - - 0 1,0,0,0,0", "illegal position"),
    (f"{START},0,1,2", "truncated row: expected 5 fields, got 4"),
    (f"{START},0,-1,0,0", "mask0 is negative"),
    (f"{START},0,0,{2**64},0", "mask1 is >= 2**64"),
    (f"{START},0,0,0,1.5", "mask2 is not a non-negative decimal integer"),
    (f"{START},3,0,0,0", "label must be 0, 1 or 2"),
    (f"{START},1,0,0,0", "label 1 inconsistent with the FEN: python-chess says 0"),
]


@pytest.mark.parametrize(("row", "message"), BAD_ROWS)
def test_csv_bad_row_is_reported_with_its_line(tmp_path, row, message):
    path = tmp_path / "bad.csv"
    good = f"{START},0,{','.join(str(m) for m in cc.masks_of(chess.Board(START)))}"
    path.write_text(f"fen,label,mask0,mask1,mask2\n{good}\n{row}\n\n{good}\n")
    rows, problems = cc.read_csv(path)
    assert len(rows["fen"]) == 2
    assert [(p.row, message in p.message) for p in problems] == [(3, True)]
    assert str(problems[0]).startswith(f"{path}:3: ")
    with pytest.raises(ValueError, match=rf"bad\.csv:3: .*{message[:12]}"):
        cc.read_csv(path, strict=True)


def test_csv_unreadable_files_raise(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("position,class\n")
    with pytest.raises(ValueError, match="empty file"):
        cc.read_csv(tmp_path / "empty.csv")
    with pytest.raises(ValueError, match=r"header\.csv:1: expected a header naming fen"):
        cc.read_csv(tmp_path / "header.csv")


# ---------------------------------------------------------------- distances


def test_reduce_attributions_max_abs_over_planes_normalised():
    a = np.zeros((2, 12, 8, 8))
    a[0, 3, 2, 5] = -4.0
    a[0, 7, 0, 0] = 2.0
    a[0, 1, 0, 0] = 1.0
    out = cc.reduce_attributions(a)
    assert out[0, 2, 5] == 1.0 and out[0, 0, 0] == 0.5 and out[0].sum() == 1.5
    assert not out[1].any()


def test_distances_match_scipy():
    from scipy.spatial import distance

    rng = np.random.default_rng(1)
    maps, masks = rng.uniform(size=(5, 8, 8)), rng.uniform(size=(5, 8, 8)) < 0.3
    for metric, ref in [
        ("correlation", distance.correlation),
        ("cosine", distance.cosine),
        ("chebyshev", distance.chebyshev),
        ("euclidean", lambda u, v: distance.euclidean(u, v) / 8),
    ]:
        d, reasons = cc.distances(maps, masks, metric)
        want = [ref(a.ravel(), m.ravel().astype(float)) for a, m in zip(maps, masks)]
        assert np.allclose(d, want) and (reasons == "").all()


def test_distances_undefined_cases_are_nan_with_reason():
    maps = np.stack([np.eye(8), np.full((8, 8), 0.5), np.eye(8), np.full((8, 8), np.nan), np.zeros((8, 8))])
    masks = np.stack([np.zeros((8, 8)), np.eye(8), np.ones((8, 8)), np.eye(8), np.eye(8)]).astype(bool)
    d, why = cc.distances(maps, masks, "correlation")
    assert np.isnan(d[:4]).all() and d[4] == 1.0  # XB-12: an all-zero map agrees with no mask
    assert why.tolist() == ["empty mask", "constant attribution map", "full mask", "non-finite attribution", ""]
    d, why = cc.distances(maps, masks, "cosine")
    assert why.tolist() == ["empty mask", "", "", "non-finite attribution", ""] and d[4] == 1.0
    d, why = cc.distances(maps, masks, "euclidean")
    assert np.isfinite(d[:3]).all() and np.isclose(d[4], 1 / np.sqrt(8))
    with pytest.raises(ValueError, match="metric must be one of"):
        cc.distances(maps, masks, "manhattan")


# ---------------------------------------------------------------- cases and the ngt check

ORACLE_CASES = ["chess_oracle_no_check", "chess_oracle_check", "chess_oracle_mate"]


def mask_explainer(case):
    """Positive control: the NGT mask itself, broadcast to the 12 planes."""
    return np.broadcast_to(case.truth["mask"][:, None].astype(float), case.inputs.shape).copy()


@pytest.mark.parametrize("name", ORACLE_CASES)
def test_oracle_case_is_consistent(name):
    case = cases.get(name)
    assert case.info.family == "chess" and case.info.category == "fidelity"
    assert case.inputs.shape == (cc.N_EXPLAINED, 12, 8, 8)
    assert np.array_equal(case.predict(case.inputs).argmax(1), np.full(len(case.inputs), case.target))
    assert case.truth["mask"].shape == (cc.N_EXPLAINED, 8, 8)
    assert len(case.feature_names) == 768 and case.feature_names[0] == "P@a1"
    assert case.baseline.shape == (12, 8, 8) and not case.baseline.any()


@pytest.mark.parametrize("metric", ["correlation", "chebyshev", "euclidean"])
@pytest.mark.parametrize("name", ORACLE_CASES)
def test_ngt_passes_the_mask_and_fails_random(name, metric):
    case = cases.get(name)
    good = cc.ngt(mask_explainer(case), case, metric=metric)
    bad = cc.ngt(random_explainer(inputs=case.inputs, seed=0), case, metric=metric)
    assert good.passed and good.value == 1.0 and good.threshold == cc.MAX_DISTANCE[metric]
    assert not bad.passed and bad.value < good.value
    assert bad.worst["fen"] in case.meta["fens"] and "worst row" in bad.detail


def test_ngt_all_undefined_fails_with_reason():
    case = cases.get("chess_oracle_mate")
    score = cc.ngt(np.ones(case.inputs.shape), case)
    assert not score.passed and score.value == 0.0
    assert "undefined" in score.detail and "constant attribution map" in score.detail
    zero = cc.ngt(np.zeros(case.inputs.shape), case)  # XB-12: distance 1 everywhere, not undefined
    assert not zero.passed and zero.params["mean"] == 1.0 and zero.params["n_excluded"] == 0
    # mask1 of a mate is empty: correlation is undefined, counted, never 0
    score = cc.ngt(mask_explainer(case), case, mask="mask1")
    assert not score.passed and score.params["n_excluded"] == cc.N_EXPLAINED


def test_ngt_cosine_needs_an_explicit_threshold():
    case = cases.get("chess_oracle_check")
    with pytest.raises(ValueError, match="no default threshold"):
        cc.ngt(mask_explainer(case), case, metric="cosine")
    assert cc.ngt(mask_explainer(case), case, metric="cosine", max_distance=0.1).passed


def test_ngt_reports_invalid_boards_the_oracle_saw():
    case = cases.get("chess_oracle_check")
    case.model.reset()
    x = case.inputs.copy()
    x[:, 5] = 0  # occlude the mover's king
    case.predict(x)
    score = cc.ngt(mask_explainer(case), case)
    assert score.params["oracle_invalid_boards"] == cc.N_EXPLAINED
    assert case.model.n_boards == 0


def test_ngt_is_registered_as_a_check():
    from pytest_xai.checks import CHECKS

    info = CHECKS["ngt"]
    assert info.marker == "xai_ngt" and info.thresholds == {"max_distance": cc.MAX_DISTANCE["correlation"]}


# ---------------------------------------------------------------- the CNN


def test_cnn_weights_load_safely_and_are_small():
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    card = cc.cnn_card()
    model = cc.load_cnn()
    assert sum(p.numel() for p in model.parameters()) == card["params"]
    assert cc.CNN_WEIGHTS.stat().st_size <= 1_500_000
    kernels = [m.kernel_size for m in model if isinstance(m, torch.nn.Conv2d)]
    assert kernels == [(7, 7), (5, 5), (3, 3), (3, 3)]
    assert set(card["accuracy_per_class"]) == set(cc.CLASSES)


@pytest.mark.parametrize("name", ["chess_cnn_no_check", "chess_cnn_check", "chess_cnn_mate"])
def test_cnn_case_runs_above_the_quality_gate(name):
    pytest.importorskip("torch")
    assert cc.cnn_accuracy(cc.cnn_card()) >= cc.QUALITY_GATE, "the shipped CNN must pass its own gate"
    case = cases.get(name)
    probs = case.predict(case.inputs)
    assert probs.shape == (cc.N_EXPLAINED, 3) and np.allclose(probs.sum(1), 1, atol=1e-5)
    assert (probs.argmax(1) == case.target).mean() >= 0.9
    assert case.torch_model is case.model
    assert cc.ngt(mask_explainer(case), case).passed


def test_cnn_case_below_the_gate_is_not_applicable(tmp_path, monkeypatch):
    """The gate is the paper's: overall (balanced) held-out accuracy >= 0.99, here 0.9467."""
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"accuracy_per_class": {"no_check": 0.99, "check": 0.95, "checkmate": 0.9}}))
    monkeypatch.setattr(cc.models, "CNN_CARD", card)
    with pytest.raises(
        NotApplicable, match=r"model below quality gate: held-out accuracy 0\.9467 < 0\.99 .*check 0\.9500"
    ):
        cc.chess_cnn_check(cases.info("chess_cnn_check"), seed=0, cache=Cache(None))
    assert "below the 0.99 gate" in cc.report_header()


def test_cnn_gate_is_overall_accuracy_and_a_weak_class_is_a_warning(tmp_path, monkeypatch):
    """A class at 0.975 no longer gates the CNN out when the mean is >= 0.99; it is named as a warning."""
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"accuracy_per_class": {"no_check": 0.999, "check": 0.975, "checkmate": 0.998}}))
    monkeypatch.setattr(cc.models, "CNN_CARD", card)
    assert cc.cnn_accuracy(cc.cnn_card()) == pytest.approx(0.990667)
    header = cc.report_header()
    assert "held-out accuracy 0.9907 (passes the 0.99 gate" in header
    assert "WARNING check accuracy 0.9750 < 0.98" in header
    assert cc.cnn_warnings({"accuracy_per_class": {"a": 0.98, "b": 0.99}}) == []


def test_shipped_cnn_header_reports_overall_and_per_class():
    header = cc.report_header()
    card = cc.cnn_card()
    assert f"held-out accuracy {cc.cnn_accuracy(card):.4f} (passes the 0.99 gate" in header
    assert all(f"{k} {v:.4f}" in header for k, v in card["accuracy_per_class"].items())
    assert card["warnings"] == cc.cnn_warnings(card)


# ---------------------------------------------------------------- pictures


def test_board_heatmap_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    case = cases.get("chess_oracle_mate")
    fen = case.meta["fens"][0]
    attribution = cc.from_perspective(cc.reduce_attributions(mask_explainer(case))[0], fen)
    mask = cc.from_perspective(case.truth["mask"][0], fen)
    path = cc.board_heatmap_png(tmp_path / "board.png", fen, attribution, mask, "mask control")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_user_csv_in_the_data_dir_replaces_generated_positions(tmp_path):
    """A user's slice of the published data (DATA_DIR/chess_positions.csv) feeds the cases; bad rows
    are skipped with a warning naming file and line, and masks are re-checked against python-chess."""
    from pytest_xai.cases import chess as family

    rows = family.generate_positions(3, seed=5)
    family.write_csv(tmp_path / family.USER_CSV, rows)
    with open(tmp_path / family.USER_CSV, "a") as fh:
        fh.write("not a fen,0,1,2,3\n")
    with pytest.warns(UserWarning, match=r"chess_positions.csv:11: illegal FEN"):
        picked = family.user_positions(tmp_path, n_per_class=2)
    assert np.bincount(picked["label"]).tolist() == [2, 2, 2]
    assert set(picked["fen"]) <= set(rows["fen"])
    assert family.user_positions(tmp_path / "missing") is None


# ---------------------------------------------------------------- feature groups


def test_chess_cases_declare_square_groups_and_the_contract_passes_them():
    import dataclasses

    from pytest_xai.engine import contract

    case = cases.get("chess_oracle_mate")
    groups = cc.square_groups()
    assert groups.shape == (12, 8, 8) and (groups == groups[:1]).all()
    assert groups[0, 2, 4] == 8 * 2 + 4  # e3: group id = square index

    def explain(inputs, groups):
        return {"attributions": np.broadcast_to(groups, inputs.shape).astype(float)}

    got = contract.run(contract.Explainer("g", "g", explain, ("inputs", "groups")), case, seed=0)
    np.testing.assert_array_equal(got.attributions[0], groups)
    ungrouped = dataclasses.replace(case, meta={})
    assert (
        contract.arguments(contract.Explainer("g", "g", explain, ("inputs", "groups")), ungrouped, 0)["groups"] is None
    )


def test_feature_occlusion_by_squares_empties_whole_squares_and_finds_mates():
    """With the case's square groups, occlusion empties one square at a time (64 oracle calls, not 768)."""
    from pytest_xai.explainers import baselines

    case = cases.get("chess_oracle_mate")
    x = case.inputs[:10]
    out = baselines.feature_occlusion(x, case.predict, case.baseline, case.target, groups=cc.square_groups())
    assert (out == out[:, :1]).all(), "a square's 12 planes share one attribution"
    # a square's attribution is the drop of the mate probability when that square is emptied
    row, (r, f) = 0, np.argwhere(case.truth["mask"][0])[0]
    emptied = x[:1].copy()
    emptied[0, :, r, f] = 0
    assert out[row, 0, r, f] == pytest.approx(1.0 - case.predict(emptied)[0, case.target])
    full = baselines.feature_occlusion(case.inputs, case.predict, case.baseline, case.target, groups=cc.square_groups())
    assert cc.ngt(full, case).passed
    with pytest.raises(ValueError, match=r"groups must be an int array shaped like one input \(12, 8, 8\)"):
        baselines.feature_occlusion(x, case.predict, case.baseline, case.target, groups=np.zeros((8, 8), int))


def test_gradient_explainers_get_verdicts_on_the_cnn_cases():
    """The paper's experiment in miniature (docs/chess_ngt.md): on check positions Guided Grad-CAM on
    the last conv layer is closest to mask1 and passes; saliency and the random floor fail."""
    pytest.importorskip("captum")
    from pytest_xai.engine import contract

    case = cases.get("chess_cnn_check")
    verdicts = {}
    for name in ("guided_gradcam_last_conv", "guided_gradcam_first_conv", "saliency", "random"):
        explanation = contract.run(contract.load(f"pytest_xai.explainers:{name}"), case, seed=0)
        verdicts[name] = cc.ngt(explanation.attributions, case)
    assert verdicts["guided_gradcam_last_conv"].passed
    assert not verdicts["saliency"].passed and not verdicts["random"].passed
    assert verdicts["guided_gradcam_last_conv"].params["mean"] < verdicts["guided_gradcam_first_conv"].params["mean"]


# ---------------------------------------------------------------- the package: cache, build, docs


def _positions_entry_builder(root) -> str:
    (entry,) = root.glob("chess_positions-*.npz")
    with np.load(entry, allow_pickle=False) as data:
        return json.loads(str(data["__pytest_xai__"][()]))["builder"]


def test_positions_cache_entry_is_built_by_the_generator_module(tmp_path, monkeypatch):
    """The entry's builder identity hashes positions.py, where the generator and the cached builder
    live (a package's ``__init__`` source would not cover them): an edit there rebuilds the entry."""
    import hashlib
    import warnings
    from pathlib import Path

    from pytest_xai.cache import CacheWarning
    from pytest_xai.cases.chess import positions

    monkeypatch.setattr(positions, "_POSITIONS", {})
    first = cc.case_positions(11, Cache(tmp_path), n_per_class=2)
    digest = hashlib.sha256(Path(positions.__file__).read_bytes()).hexdigest()[:16]
    assert _positions_entry_builder(tmp_path) == f"pytest_xai.cases.chess.positions@{digest}"
    monkeypatch.setattr(positions, "_POSITIONS", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unchanged generator reads its own entry back
        again = cc.case_positions(11, Cache(tmp_path), n_per_class=2)
    assert again["fen"].tolist() == first["fen"].tolist()

    from pytest_xai import cache as cache_module

    monkeypatch.setitem(cache_module._SOURCE_HASHES, positions.__name__, "edited-source")
    monkeypatch.setattr(positions, "_POSITIONS", {})
    with pytest.warns(CacheWarning, match="built by other code"):
        cc.case_positions(11, Cache(tmp_path), n_per_class=2)
    assert _positions_entry_builder(tmp_path) == "pytest_xai.cases.chess.positions@edited-source"


def test_positions_cache_entry_is_rebuilt_when_the_rules_change(tmp_path, monkeypatch):
    """rules.py is not in the entry's builder identity, but every load recomputes each row's label and
    masks from its FEN: masks that the rules no longer give fail validation and the entry is rebuilt."""
    from pytest_xai.cache import CacheWarning
    from pytest_xai.cases.chess import positions

    monkeypatch.setattr(positions, "_POSITIONS", {})
    cc.case_positions(12, Cache(tmp_path), n_per_class=2)
    monkeypatch.setattr(positions, "_POSITIONS", {})
    monkeypatch.setattr(positions, "masks_of", lambda board: (0, 0, 0))  # "edited" rules
    with pytest.warns(CacheWarning, match=r"does not match its recomputed label and masks"):
        rows = cc.case_positions(12, Cache(tmp_path), n_per_class=2)
    assert not rows["mask0"].any()


def test_positions_explained_are_read_when_the_case_is_built(monkeypatch):
    """scripts/chess_ngt.py sets ``cc.N_EXPLAINED = cc.N_PER_CLASS`` before it builds the cases."""
    monkeypatch.setattr(cc, "N_EXPLAINED", 5)
    case = cases.get("chess_oracle_check", fresh=True)
    assert case.inputs.shape == (5, 12, 8, 8) and len(case.meta["fens"]) == 5
    assert case.truth["mask"].shape == (5, 8, 8)


def test_docs_specification_is_kept_when_the_script_regenerates_the_file():
    """The code cites "docs/chess_ngt.md, Specification n"; scripts/chess_ngt.py writes that file, so the
    specification lives in the script and the committed file ends with it."""
    import importlib.util
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("chess_ngt_script", root / "scripts" / "chess_ngt.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = (root / "docs" / "chess_ngt.md").read_text(encoding="utf-8")
    assert text.endswith(script.WHY + "\n" + script.SPECIFICATION)
    headings = set(re.findall(r"^### Specification (\d+):", script.SPECIFICATION, flags=re.MULTILINE))
    cited = set()
    for path in [*(root / "pytest_xai" / "cases" / "chess").glob("*.py"), Path(__file__)]:
        cited |= set(re.findall(r"Specification\s+(\d+)", path.read_text(encoding="utf-8")))
    assert cited and cited <= headings, f"cited sections without a heading: {sorted(cited - headings)}"

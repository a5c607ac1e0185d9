"""Reproduce the experiment of Mücke & Pfahler 2022 ("Check Mate", §3, tables 2-4) on the shipped CNN.

Every method of the paper (Saliency, Input x Gradient, Feature Permutation, Guided Grad-CAM on the
first and on the last convolution layer, Guided Backprop, Integrated Gradients, Occlusion), run as
the suite runs it (the reference explainers of ``pytest_xai.explainers`` through the contract), on
the ``chess_cnn_*`` cases, plus the ``random`` explainer as the floor.  Each attribution
(n, 12, 8, 8) is reduced to 8x8 by max |A| over the 12 planes, divided by its max (the paper's
reduction, ``pytest_xai.cases.chess.reduce_attributions``), and compared with the class' own NGT
mask by Chebyshev, correlation, cosine and Euclidean distance.  Writes ``docs/chess_ngt.md``.

    OMP_NUM_THREADS=1 python scripts/chess_ngt.py --seeds 0 1      # ~4 min per seed on one core
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from datetime import date
from importlib import metadata
from pathlib import Path

import numpy as np

from pytest_xai import cases
from pytest_xai.cases import chess as cc
from pytest_xai.engine import contract

METHODS = {  # the paper's names (§3) -> our reference explainers
    "Saliency": "saliency",
    "Input × Gradient": "input_x_gradient",
    "Feature Permutation": "feature_permutation",
    "Guided Grad-CAM (first conv)": "guided_gradcam_first_conv",
    "Guided Grad-CAM (last conv)": "guided_gradcam_last_conv",
    "Guided Backprop": "guided_backprop",
    "Integrated Gradients": "integrated_gradients",
    "Occlusion": "occlusion",
    "random (floor)": "random",
}
CASES = {0: "chess_cnn_no_check", 1: "chess_cnn_check", 2: "chess_cnn_mate"}
COLUMNS = ("chebyshev", "correlation", "cosine", "euclidean")
# What the paper says about its tables (§3.1), and the methods that statement names as closest.
PAPER = {
    0: ("Guided Grad-CAM is often closest to the NGT", ("Guided Grad-CAM (first conv)", "Guided Grad-CAM (last conv)")),
    1: ("Guided Grad-CAM is often closest to the NGT", ("Guided Grad-CAM (first conv)", "Guided Grad-CAM (last conv)")),
    2: ("Integrated Gradients is closest, though Guided Grad-CAM performs also very well", ("Integrated Gradients",)),
}
FLOOR = "random (floor)"
WHY = """## Why these numbers differ from the paper's

The numeric cells of the paper's tables 2–4 are not in the copy of the paper this project works
from (its text extraction lost the tables), so each class above is compared with what the paper
states about its table (§3.1), and cell-by-cell comparison is left to whoever holds the PDF: the
rows and columns here are the paper's (its methods, its three class masks, its four distances,
cosine included although the paper dropped it). What differs, and why it can move the numbers:

- **Positions.** Ours come from seeded mate- and check-seeking random playouts
  (`generate_positions`), not from Lichess games between humans (May 2021). Random play leaves
  pieces in places humans rarely put them, and the masks of such boards differ in size and shape.
  Positions with a legal en-passant capture are dropped (the 12 planes cannot show the right).
- **Encoding.** Side-to-move perspective (the board mirrored when black moves, planes 0–5 the
  mover's): the paper's 12 planes carry no turn bit, which leaves mask0 undefined for class 0;
  ours is a function of the input. Attributions are compared in that frame.
- **Model.** A smaller CNN (472,867 parameters, kernels 7, 5, 3, 3, widths 32–48, dense 128;
  the paper's has 782,851 and its exact stack is in an appendix we do not have), trained on
  about 240,000 generated positions for 24 epochs, not 30 million for 400,000 updates. Its
  held-out accuracy (0.992, balanced) is close to the paper's 99.02 %, but a different network
  can attend to different squares, and the methods explain the network, not the rules.
- **Method settings.** The paper names the captum methods but not their settings; ours are the
  suite's reference explainers: Integrated Gradients from the empty board (zeros), 128
  Gauss-Legendre steps; Occlusion of one input element (one plane of one square) set to 0;
  Feature Permutation of one element across the 100 positions of the case; Guided Grad-CAM on
  the output of the first / last `Conv2d` (captum's nearest upsampling is an identity here:
  'same' convolutions keep 8×8); the target is the case's class.
- **Normalisation.** The paper does not say how the reduced map is scaled; ours is divided by its
  maximum (Chebyshev and Euclidean depend on this; correlation and cosine do not), and Euclidean
  is divided by √64 = 8.
- **Cosine.** The paper found cosine distance almost equal to 1 everywhere. Both vectors are
  non-negative after the reduction, so 1 would mean the map puts no weight on any mask square; our
  maps do, so our cosine distances are well below 1. We cannot reproduce that finding and do not
  know the paper's computation behind it.
- **Class 0.** mask0 is mostly empty squares the enemy controls, while gradients and perturbations
  of a 12-plane encoding concentrate on occupied squares; in the run above no method beats random
  noise by correlation on class 0 (the maps are anti-correlated with mask0). The paper's figure 5 shows the same kind of
  disagreement for a no-check position ("radically different attributions from our NGT").
"""
# Written by hand, like WHY, and appended to every regenerated docs/chess_ngt.md: the family's code
# cites its sections as "docs/chess_ngt.md, Specification n".
SPECIFICATION = """## Specification

What the chess family implements, written once and cited by its code as "Specification n"
(`pytest_xai/cases/chess/`). Sources: Mücke & Pfahler, "Check Mate: A Sanity Check for Trustworthy
AI", LWDA 2022 (CEUR-WS Vol-3341), and their data set `smuecke/chess-xai-benchmark` on Kaggle
(CC BY 4.0); no author code is public. The paper's appendix (plane order, exact CNN) was not
available, so where the paper is silent or ambiguous the choice made here is stated as the default.
python-chess (`chess`, GPL-3.0+) computes everything; it is an optional extra and none of it is
vendored. This part is kept in `scripts/chess_ngt.py` (`SPECIFICATION`), which appends it whenever
it regenerates this file.

### Specification 1: task and classes

- Input: a position (FEN). Label, from the point of view of the side to move (`board.turn`):
  **0 = no check, 1 = check (not mate), 2 = checkmate**; 2 if `is_checkmate()`, else 1 if
  `is_check()`, else 0. A stalemate is 0.
- Three near-ground-truth (NGT) masks are computed for every position, whatever its class; each is
  an 8×8 bit mask stored as a uint64 that `chess.SquareSet(int)` reads. Each class is scored
  against its own mask (class c against mask c), as in the paper's experiments (§3).
- "Near" ground truth: a valid explanation, not the only one (the paper, §2.1: mask0 also explains
  class 1 and vice versa).

### Specification 2: squares and bits

- Square s = 8·rank + file, rank 0 = rank "1", file 0 = file "a": a1 = 0, h1 = 7, a2 = 8, h8 = 63;
  bit s of the uint64 is square s.
- 8×8 arrays: `M[row, col]` is bit 8·row + col, row = rank index (row 0 = rank 1), col = file.
  Input planes, attribution maps and masks all use this orientation; only pictures flip it (rank 8
  on top).
- Mirroring the ranks maps s → s XOR 56 (`chess.square_mirror`, `SquareSet.mirror()`);
  `Board.mirror()` also swaps the colours and the side to move.

### Specification 3: the three masks

us = the side to move, them = the other side, k = the square of our king.

- **mask0 (no check): squares controlled by the enemy**, the union of `board.attacks(s)` over the
  squares s holding an enemy piece. Pawns attack their two diagonal squares (no pushes); slider
  rays stop at, and include, the first occupied square; defended enemy-occupied squares are
  included. The paper's prose ("reached or captured on") leaves both points open; neither changes
  whether k is in the mask.
- **mask1 (check): squares of legal moves**, the union of {from, to} over `board.legal_moves`.
  Castling is king-from → king-to (the rook squares are not added); a promotion contributes its
  to-square; en passant contributes the ep target square, not the captured pawn's square.
- **mask2 (checkmate): pieces essential for the mate**, the union of: the checkers
  (`board.checkers()`); our pieces on the king's neighbour squares; every enemy attacker of a
  neighbour square not occupied by us (the guards of the flight squares); every enemy attacker of
  a checker (its protectors). The mated king's own square and the pinners of would-be defenders are
  not included. X-ray through the king does not matter: a slider whose ray passes through k is a
  checker already. mask2 is computable for any position but meaningful only for class 2.
- If you hold a slice of the Kaggle data, put it in the data directory as `chess_positions.csv`:
  the cases then read it and recompute every mask from its FEN; a row whose masks differ is skipped
  with a warning, so a file built with another mask variant shows up at once.

### Specification 4: invariants

Every generated position satisfies these (`invariant_violations` tests them):

- our king is in mask0 exactly when the label is ≥ 1;
- mask1 is empty exactly when there is no legal move (mate or stalemate), so label 2 has an empty
  mask1 and label 1 a non-empty one;
- a checker is in mask1 exactly when some legal move ends on its square (the paper, §2.1: "the
  piece giving check is only highlighted when it can be legally captured");
- for label 2 the checkers are in mask2;
- `board.is_valid()` holds (at most one king attacked, the mover's).

En passant breaks the link between pieces and masks: a pawn that checks by a double push and can
only be taken en passant is capturable, yet not in mask1 (the capture's to-square is the ep
square), and the ep right is not in the 12 planes, so the label itself may depend on it. Positions
with a legal en-passant capture are therefore dropped (*ep-ambiguous*). Castling rights are not in
the planes either; they never change the label and change mask1 only outside check, where mask1 is
not the class' mask.

### Specification 5: input encoding

- The paper (§3): a 12×8×8 binary tensor, one plane per (piece type, colour), 1 where that piece
  stands. Its plane order is in the unavailable appendix.
- The planes carry no side-to-move bit, and mask0 depends on who is to move: for classes 1 and 2
  the side is implied (only the side to move can be in check), for class 0 it is not, so mask0
  would not be a function of the input.
- **Default, remedy A: side-to-move perspective.** When black is to move the board is mirrored
  (`Board.mirror()`), and so are its masks (`SquareSet.mirror()`), so planes 0–5 are always the
  mover's P N B R Q K and 6–11 the opponent's, and every mask is a function of the input.
  Attributions live in that frame; pictures un-mirror them (`from_perspective`).
- Not taken: (B) a 13th constant turn plane (the network must learn a global bit, and the plane
  must be left out of the reduction); (C) the paper's raw encoding with class 0 reported as
  encoding-ambiguous (reproduction only).

### Specification 6: reduction and distances

- Reduction (the paper, §3): a = max over the 12 planes of |A|, the strongest attribution of each
  square, an 8×8 map in the mask's order. The paper does not say how it is scaled; here a is divided
  by its maximum (an all-zero map stays zero), which matters to Chebyshev and Euclidean only.
- Distances between a ∈ [0, 1]^64 and the binary mask m: Chebyshev max |a − m|; correlation
  1 − Pearson (range [0, 2]); cosine 1 − a·m / (‖a‖ ‖m‖), computed but not gated (the paper found it
  ≈ 1 everywhere and dropped it); Euclidean ‖a − m‖₂ / 8 (divided by √64 to lie in [0, 1]).
- Undefined cases: an empty mask (every mask1 of a mate or stalemate) or a full one, a constant map
  (correlation), a zero map (cosine), a non-finite map. The distance is then NaN with a reason, the
  position is left out of that metric's mean and counted; never 0, never a crash.
- Verdict: the mean over the positions where the metric is defined (median and count reported) must
  not exceed a threshold of half the distance of the `random` explainer, so passing means beating
  random noise by a margin: correlation 0.5, Chebyshev 0.48, Euclidean 0.27 (the calibration is in
  the docstring of `ngt`).

### Specification 7: positions

- The paper (§2): Lichess games of May 2021 that end in mate, the first ten moves skipped,
  positions accepted with a probability inversely proportional to their class frequency; 30 million
  positions stored as CSV (FEN, label) with the three masks as uint64.
- Here, offline and seeded (`random.Random(seed)`): random playouts from the initial position,
  stopping at `is_game_over()` (no draw claims). At each move: with probability β = 0.5 a mating
  move if there is one, else with probability γ = 0.3 a checking move if there is one, else a
  uniform legal move. Every mate-in-one found on the way is a class-2 candidate (pushed, then
  taken back); uniform play alone almost never mates.
- Positions before full move 11 are skipped ("ten moves" read as ten full moves, 20 plies).
- Balance: a candidate of class c is accepted with probability min(1, n_min / n_c) over the running
  counts of candidates seen, until the class quota is full.
- De-duplication on (placement, turn, castling rights, legal ep square), clocks ignored;
  ep-ambiguous positions dropped (Specification 4); every kept position is valid.
- The rows (FEN, label, mask0, mask1, mask2) are cached as npz; on every load each row's label and
  masks are recomputed from its FEN and must match, or the entry is rebuilt.

### Specification 8: models

- The paper's CNN (§3): four convolutions with filter widths 7, 5 and 3, centred padding, three
  outputs, 782,851 parameters; weight decay 1e-3; Adam from a learning rate of 1e-3, divided by 10
  four times over 400,000 updates; 99.02 % accuracy on 10,000 hold-out positions. Many stacks have
  that parameter count, so it identifies nothing.
- The shipped CNN: kernels 7, 5, 3, 3, 'same' padding, ReLU, a flatten-dense head, 3 logits,
  narrower than the paper's so the weights stay small (`scripts/train_chess_cnn.py`,
  `pytest_xai/data/README.md`). Its cases run only when its balanced held-out accuracy is ≥ 0.99
  (the paper's figure); otherwise they report "model below quality gate".
- The oracle (suggested by the paper, §4): f(planes) = the one-hot label python-chess computes on
  the decoded board. Decoding: a square holds the piece of its largest plane if that value is
  ≥ 0.5, ties to the lower plane; the mover is white and to move. Perturbed planes give boards no
  game reaches (no king, pawns on a back rank, both kings attacked), so the output has no validity
  gate: class 0 if the mover has no king, else check = the mover's king is attacked, mate = check
  and no legal move. The count of invalid boards the oracle saw is reported with each verdict.
  Only black-box (perturbation) explainers can explain the oracle.

### Specification 9: reconstruction positions

| # | position | FEN | label |
|---|---|---|---|
| 1 | start position | `rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1` | 0 |
| 2 | Fool's mate | `rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3` | 2 |
| 3 | Scholar's mate | `r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4` | 2 |
| 4 | back-rank mate | `3R2k1/5ppp/8/8/8/8/8/6K1 b - - 0 1` | 2 |
| 5 | check, capturable checker | `4k3/8/8/8/8/8/4q3/4K3 w - - 0 1` | 1 |
| 6 | check, checker not capturable | `4k3/8/8/8/8/8/8/r3K3 w - - 0 1` | 1 |

All six are valid; 2–4 have an empty mask1; in 5 the checker (queen e2) is in mask1, in 6 the
checker (rook a1) is not; 3 and 4 have black to move and test the mirroring of Specification 5.
The masks are computed, not listed: `tests/test_chess.py` checks them against Specification 4,
and those of 1, 2 and 4 square by square.
"""


def measure(seeds: list[int]) -> dict:
    """distances[label][method][metric] -> list of per-position values; verdicts and seconds too."""
    out: dict = {"dist": {}, "verdict": {}, "seconds": {}, "n": {}}
    for label, case_name in CASES.items():
        out["dist"][label] = {m: {k: [] for k in COLUMNS} for m in METHODS}
        out["verdict"][label] = {m: [] for m in METHODS}
        out["seconds"][label] = {m: 0.0 for m in METHODS}
        out["n"][label] = 0
        for seed in seeds:
            case = cases.get(case_name, seed=seed)
            out["n"][label] += len(case.inputs)
            for method, name in METHODS.items():
                explainer = contract.load(f"pytest_xai.explainers:{name}")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # captum's notice about hooks on ReLU modules
                    explanation = contract.run(explainer, case, seed=seed)
                out["seconds"][label][method] += explanation.seconds
                maps = cc.reduce_attributions(explanation.attributions)
                for metric in COLUMNS:
                    d, _ = cc.distances(maps, case.truth["mask"], metric)
                    out["dist"][label][method][metric].extend(d.tolist())
                score = cc.ngt(explanation.attributions, case)  # the suite's check, default threshold
                out["verdict"][label][method].append("PASS" if score.passed else "FAIL")
                print(f"{case_name} seed {seed} {name}: {explanation.seconds:.1f} s, {score.detail[:60]}", flush=True)
    return out


def _mean(values: list[float]) -> tuple[float, int]:
    v = np.asarray(values, dtype=float)
    used = ~np.isnan(v)
    return (float(v[used].mean()) if used.any() else float("nan")), int(used.sum())


def render(res: dict, seeds: list[int], command: str, wall: float) -> str:
    card = cc.cnn_card()
    versions = {p: metadata.version(p) for p in ("torch", "captum", "chess", "numpy")}
    lines = [
        "# The chess experiment of Mücke & Pfahler 2022, reproduced on the shipped CNN",
        "",
        f"Generated by `{command}` on {date.today().isoformat()} ({wall / 60:.1f} min on one core of a "
        f"shared 2-core machine; {platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + "). Do not edit by hand: re-run the script.",
        "",
        "What runs: the `chess_cnn_*` cases of the suite (seeds "
        + ", ".join(map(str, seeds))
        + f"; {res['n'][0]} positions per class), the shipped CNN "
        f"(`pytest_xai/data/chess_cnn.pt`, {card['params']:,} parameters, held-out accuracy "
        f"{cc.cnn_accuracy(card):.4f}: "
        + ", ".join(f"{k} {v:.4f}" for k, v in card["accuracy_per_class"].items())
        + "), every method of the paper as the suite's reference explainer, and `random` (seeded "
        "normal noise) as the floor. Each attribution (n, 12, 8, 8) is reduced to 8×8 by max |A| over the "
        "12 planes divided by its max (the paper's reduction), then compared with the class' own NGT mask.",
        "",
        (
            "Distances (lower is closer): Chebyshev max|a − m|; correlation 1 − Pearson (0 … 2); cosine "
            "1 − cos; Euclidean ‖a − m‖₂ / 8 (divided by √64 so it lies in [0, 1]; the paper's ℓ2 is 8× this "
            "if it did not normalise). Means over the positions where the metric is defined (correlation "
            "excludes constant maps and empty masks); `n` is that count for correlation. The best method per "
            "column (random excluded) is in bold. `ngt` is the suite's verdict per seed (correlation ≤ "
            f"{cc.MAX_DISTANCE['correlation']}, half the random distance); `s` the explainer's seconds."
        ),
        "",
    ]
    for label, case_name in CASES.items():
        claim, named = PAPER[label]
        lines += [
            f"## Class {label}: {cc.CLASSES[label]} (`{case_name}`, mask{label}), the paper's table {label + 2}",
            "",
            f"Paper (§3.1): {claim}.",
            "",
        ]
        means = {m: {k: _mean(res["dist"][label][m][k]) for k in COLUMNS} for m in METHODS}
        best = {k: min((means[m][k][0], m) for m in METHODS if m != FLOOR)[1] for k in COLUMNS}
        lines += [
            "| method | Chebyshev | correlation | cosine | Euclidean | n | ngt | s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for m in METHODS:
            cells = []
            for k in COLUMNS:
                value = f"{means[m][k][0]:.3f}"
                cells.append(f"**{value}**" if best[k] == m else value)
            lines.append(
                f"| {m} | "
                + " | ".join(cells)
                + f" | {means[m]['correlation'][1]} | "
                + "/".join(res["verdict"][label][m])
                + f" | {res['seconds'][label][m]:.1f} |"
            )
        ranking = [m for _, m in sorted((means[m]["correlation"][0], m) for m in METHODS if m != FLOOR)]
        floor = means[FLOOR]["correlation"][0]
        beaten = [m for m in ranking if means[m]["correlation"][0] < floor]
        holds = ranking[0] in named
        rank = min(ranking.index(m) for m in named) + 1
        lines += [
            "",
            "Here: closest by correlation "
            + ", ".join(f"{m} ({means[m]['correlation'][0]:.3f})" for m in ranking[:3])
            + f"; {len(beaten)} of {len(ranking)} methods beat the random floor ({floor:.3f}). "
            + (
                "The paper's finding holds."
                if holds
                else f"The paper's finding does not hold: its closest method ranks {rank} of {len(ranking)}."
            ),
            "",
        ]
    return "\n".join(lines) + "\n" + WHY + "\n" + SPECIFICATION


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="suite seeds (positions) to pool")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs" / "chess_ngt.md"))
    args = parser.parse_args()
    cc.N_EXPLAINED = cc.N_PER_CLASS  # every generated position of a class, not the suite's first 16
    start = time.perf_counter()
    res = measure(args.seeds)
    command = "python scripts/chess_ngt.py --seeds " + " ".join(map(str, args.seeds))
    text = render(res, args.seeds, command, time.perf_counter() - start)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Train the reference chess CNN shipped as ``pytest_xai/data/chess_cnn.pt``.

Mücke & Pfahler 2022 ("Check Mate", §3) train a four-layer CNN (kernels 7, 5, 3; 782,851
parameters; Adam, weight decay 1e-3, lr 1e-3 divided by 10 four times) to 99.02 % hold-out
accuracy on 30 M Lichess positions.  Here: positions from the seeded generator of
``pytest_xai.cases.chess`` (same distribution as the cases), the side-to-move encoding of
:func:`pytest_xai.cases.chess.encode`, a narrower net (``chess.cnn``) trained on one CPU thread,
AdamW (decoupled weight decay 1e-3), lr 1e-3 divided by 10 at 50, 70, 85 and 95 % of training,
random a<->h file flips as augmentation (check and mate are symmetric under them; castling, the
only asymmetric rule, never changes the label).  Weights are stored as float16 ``state_dict``
and the hold-out accuracy is measured after that rounding and written to ``chess_cnn.json``.

    OMP_NUM_THREADS=1 python scripts/train_chess_cnn.py            # ~30 min generation, ~12 min training
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

from pytest_xai.cache import Cache
from pytest_xai.cases import chess as cc


def positions(n_per_class: int, seed: int, cache: Cache) -> dict[str, np.ndarray]:
    params = {
        "n_per_class": n_per_class,
        "seed": seed,
        "beta": cc.BETA,
        "gamma": cc.GAMMA,
        "min_fullmove": cc.MIN_FULLMOVE,
    }
    return cache.arrays("chess_train_positions", params, lambda: cc.generate_positions(n_per_class, seed=seed))


def keys(rows: dict[str, np.ndarray]) -> np.ndarray:
    """Position keys (placement, turn, castling, ep; no clocks), as in the generator."""
    return np.array([" ".join(str(fen).split()[:4]) for fen in rows["fen"]])


def accuracy_per_class(model: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> list[float]:
    with torch.no_grad():
        pred = torch.cat([model(torch.from_numpy(x[i : i + 1024])).argmax(1) for i in range(0, len(x), 1024)]).numpy()
    return [float((pred[y == c] == c).mean()) for c in range(3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-per-class", type=int, default=40_000, help="per class and chunk")
    parser.add_argument(
        "--chunks", type=int, default=2, help="training chunks, generated with seeds seed, seed+2, seed+3, ..."
    )
    parser.add_argument("--test-per-class", type=int, default=2_000)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seed", type=int, default=2022)
    parser.add_argument("--cache", default=None, help="directory to cache generated positions")
    parser.add_argument("--out", default=str(cc.CNN_WEIGHTS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    cache = Cache(args.cache)

    t0 = time.perf_counter()
    seeds = [args.seed] + [args.seed + 1 + i for i in range(1, args.chunks)]
    chunks = [positions(args.train_per_class, s, cache) for s in seeds]
    train = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    _, first = np.unique(keys(train), return_index=True)
    train = {k: v[np.sort(first)] for k, v in train.items()}
    test = positions(args.test_per_class, args.seed + 1, cache)  # hold-out: its own seed
    overlap = np.isin(keys(test), keys(train))
    test = {k: v[~overlap] for k, v in test.items()}
    generation_s = time.perf_counter() - t0
    x_train = cc.encode(train["fen"])
    y_train = torch.from_numpy(train["label"].astype(np.int64))
    x_test, y_test = cc.encode(test["fen"]), test["label"].astype(np.int64)
    print(
        f"generated {len(x_train)} train / {len(x_test)} test positions "
        f"({int(overlap.sum())} overlaps dropped) in {generation_s:.0f} s",
        flush=True,
    )

    model = cc.cnn()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-3)
    steps_per_epoch = -(-len(x_train) // args.batch)
    total = args.epochs * steps_per_epoch
    milestones = [int(total * f) for f in (0.5, 0.7, 0.85, 0.95)]
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)
    xt = torch.from_numpy(x_train)
    gen = torch.Generator().manual_seed(args.seed)
    t1 = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(xt), generator=gen)
        total_loss = 0.0
        for i in range(0, len(xt), args.batch):
            idx = order[i : i + args.batch]
            xb = xt[idx]
            flip = torch.rand(len(idx), generator=gen) < 0.5
            xb[flip] = xb[flip].flip(-1)
            loss = torch.nn.functional.cross_entropy(model(xb), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.item() * len(idx)
        model.eval()
        acc = accuracy_per_class(model, x_test, y_test)
        print(
            f"epoch {epoch + 1}/{args.epochs} loss {total_loss / len(xt):.4f} "
            f"test acc {[round(a, 4) for a in acc]} {time.perf_counter() - t1:.0f} s",
            flush=True,
        )
    training_s = time.perf_counter() - t1

    state = {k: v.to(torch.float16) for k, v in model.state_dict().items()}
    out = Path(args.out)
    torch.save(state, out)
    shipped = cc.load_cnn(out)
    acc = accuracy_per_class(shipped, x_test, y_test)
    card = {
        "accuracy_per_class": dict(zip(cc.CLASSES, acc)),
        "accuracy": float(np.mean([a for a in acc])),
        "quality_gate": {"overall_accuracy_at_least": cc.QUALITY_GATE, "class_warning_below": cc.CLASS_WARNING},
        "n_train": len(x_train),
        "n_test_per_class": [int((y_test == c).sum()) for c in range(3)],
        "seed": args.seed,
        "train_seeds": seeds,
        "date": date.today().isoformat(),
        "params": int(n_params),
        "dtype": "float16",
        "size_bytes": out.stat().st_size,
        "epochs": args.epochs,
        "batch": args.batch,
        "positions_seconds": round(generation_s, 1),  # generating, or loading from --cache
        "training_seconds": round(training_s, 1),
        "torch": torch.__version__,
        "encoding": "side-to-move perspective (remedy A), planes PNBRQK us then them, row = rank",
    }
    card["warnings"] = cc.cnn_warnings(card)
    out.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    print(json.dumps(card, indent=2))


if __name__ == "__main__":
    main()

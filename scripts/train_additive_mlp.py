"""Train (or load from the cache) the additive benchmark's MLP and print its R^2 and the per-method
correlations of the captum explainers (Mamalakis, Ebert-Uphoff & Barnes 2022).

    python scripts/train_additive_mlp.py                       # the additive_mlp case defaults
    python scripts/train_additive_mlp.py --d 458 --n-samples 1000000 --recipe paper --epochs 50

Use it to fill a cache directory ahead of a CI run, or to try the full-size (d = 458) benchmark.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.cases import additive
from pytest_xai.explainers import captum as explainers

METHODS = (
    "integrated_gradients",
    "deeplift",
    "occlusion",
    "input_x_gradient",
    "lrp_z",
    "saliency",
    "smoothgrad",
    "guided_backprop",
    "lrp_alpha1beta0",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=additive.MLP_D)
    parser.add_argument("--n-samples", type=int, default=additive.MLP_N)
    parser.add_argument("--epochs", type=int, default=additive.MLP_EPOCHS)
    parser.add_argument("--recipe", choices=("cpu", "paper"), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default=".pytest_cache/d/pytest-xai-additive")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    case = additive.build_mlp_case(
        cases.info("additive_mlp"),
        seed=args.seed,
        cache=Cache(args.cache_dir),
        d=args.d,
        n_samples=args.n_samples,
        epochs=args.epochs,
        recipe=args.recipe,
        min_r2=-math.inf,
    )
    trained = case.meta["training_seconds"]
    print(
        f"test R^2 = {case.meta['test_r2']:.4f}; "
        + (f"trained in {trained:.1f} s" if trained is not None else "loaded from the cache")
        + f"; case built in {time.perf_counter() - start:.1f} s"
    )
    for name in METHODS:
        func = getattr(explainers, name)
        kwargs = {"baseline": case.baseline} if name in ("integrated_gradients", "deeplift", "occlusion") else {}
        heatmaps = func(case.inputs, case.model, **kwargs)
        truths = ("contribution_positive", "contribution_absolute") if name == "lrp_alpha1beta0" else ("contribution",)
        for truth in truths:
            rows, sign = additive.ground_truth(case, truth)
            r = additive.per_sample_correlation(heatmaps, rows).values * sign
            passed = additive.additive_correlation(heatmaps, case, truth=truth).passed
            print(f"{name:22s} {truth:24s} mean r = {float(np.nanmean(r)):+.3f}  {'pass' if passed else 'fail'}")


if __name__ == "__main__":
    main()

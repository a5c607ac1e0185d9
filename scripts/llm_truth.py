"""Write the llm family's explained rows and their exact values at the default seed beside the
shipped weights (``pytest_xai/data/llm_truth.npz``), so that a cold run computes none of them.

Computed from the weights ``scripts/train_llm.py`` shipped, whose digest the file records (a file of
other weights is ignored); run it again after retraining::

    OMP_NUM_THREADS=1 python scripts/llm_truth.py          # about 15 CPU s
"""

from __future__ import annotations

import numpy as np
import torch

from pytest_xai.cases.llm import SHIPPED_SEED, TASKS, TRUTH, _gated, computed_arrays
from pytest_xai.cases.llm.model import weights_digest


def main() -> None:
    torch.set_num_threads(1)
    arrays: dict[str, np.ndarray] = {"weights": np.array(weights_digest())}
    for task in TASKS:
        for name, value in computed_arrays(task, SHIPPED_SEED, _gated(task)[0]).items():
            arrays[f"{task}/{name}"] = value
    np.savez_compressed(TRUTH, **arrays)
    print(f"{TRUTH}: {TRUTH.stat().st_size} bytes, weights {weights_digest()}")


if __name__ == "__main__":
    main()

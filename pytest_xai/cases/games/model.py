"""The games' model: a torch module summing products or minima over subsets of the features."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class SubsetGame(nn.Module):
    """f(x) = sum_k m_k g(x_{T_k}), g the product or the minimum over the subset T_k (float64).

    ``masks`` is (K, d) bool, ``coefficients`` (K,); the coefficients are a (frozen) parameter so
    that captum reads the module's dtype from it."""

    def __init__(self, masks: np.ndarray, coefficients: np.ndarray, kind: str):
        super().__init__()
        if kind not in ("product", "minimum"):
            raise ValueError(f"kind must be 'product' or 'minimum', got {kind!r}")
        self.kind = kind
        self.masks: torch.Tensor
        self.register_buffer("masks", torch.as_tensor(np.asarray(masks, dtype=bool)))
        self.coefficients = nn.Parameter(torch.as_tensor(coefficients, dtype=torch.float64), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)[:, None, :]
        if self.kind == "product":
            terms = torch.where(self.masks, x, torch.ones_like(x)).prod(dim=-1)
        else:
            terms = torch.where(self.masks, x, torch.full_like(x, torch.inf)).amin(dim=-1)
        return terms @ self.coefficients

"""On-disk cache of generated data and trained models, in safe formats only.

Arrays are ``.npz`` read with ``allow_pickle=False``; xgboost models are xgboost JSON; torch
models are ``state_dict`` files read with ``weights_only=True``.  Keys hash the parameters and the
versions of the libraries that produced the entry.  Writes go to a temporary file and are renamed
into place, so concurrent xdist workers never see a half-written entry; an entry that fails to load
or to validate is reported, deleted and rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

import pytest_xai


class CacheWarning(UserWarning):
    """A cache entry was unreadable or invalid and has been rebuilt."""


def _versions(*modules: str) -> dict[str, str]:
    out = {"python": sys.version.split()[0], "numpy": np.__version__, "pytest_xai": pytest_xai.__version__}
    for name in modules:
        module = sys.modules.get(name) or __import__(name)
        out[name] = getattr(module, "__version__", "?")
    return out


class Cache:
    """A directory of cache entries; ``root=None`` disables the disk (everything is rebuilt)."""

    def __init__(self, root: str | os.PathLike | None):
        self.root = Path(root) if root is not None else None
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)

    def path(self, name: str, params: dict, suffix: str, libs: tuple[str, ...] = ()) -> Path | None:
        if self.root is None:
            return None
        blob = json.dumps({"params": params, "versions": _versions(*libs)}, sort_keys=True, default=str)
        digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self.root / f"{name}-{digest}{suffix}"

    def _load_or_build(self, path, load, save, build, validate) -> Any:
        if path is not None and path.exists():
            try:
                obj = load(path)
                validate(obj)
                return obj
            except Exception as exc:  # any failure means the entry cannot be trusted
                warnings.warn(
                    f"pytest-xai: cache entry {path} is unreadable or invalid "
                    f"({type(exc).__name__}: {exc}); rebuilding it",
                    CacheWarning,
                    stacklevel=3,
                )
                path.unlink(missing_ok=True)
        obj = build()
        validate(obj)
        if path is not None:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp" + path.suffix)
            os.close(fd)
            try:
                save(obj, Path(tmp))
                os.replace(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)
        return obj

    def arrays(
        self, name: str, params: dict, build: Callable[[], dict[str, np.ndarray]],
        validate: Callable[[dict], None] = lambda arrays: None,
    ) -> dict[str, np.ndarray]:
        """Named arrays, stored as an uncompressed npz without pickles."""

        def load(path: Path) -> dict[str, np.ndarray]:
            with np.load(path, allow_pickle=False) as data:
                return {key: data[key] for key in data.files}

        def save(arrays: dict, path: Path) -> None:
            with open(path, "wb") as fh:
                np.savez(fh, **arrays)

        return self._load_or_build(self.path(name, params, ".npz"), load, save, build, validate)

    def xgboost(
        self, name: str, params: dict, build: Callable[[], Any], validate: Callable[[Any], None]
    ) -> Any:
        """An xgboost sklearn-API model, stored in xgboost's JSON format."""
        import xgboost

        def load(path: Path) -> Any:
            model = xgboost.XGBRegressor()
            model.load_model(path)
            # One thread: an OpenMP pool started here would deadlock explainers in forked children.
            return model.set_params(n_jobs=1)

        def save(model: Any, path: Path) -> None:
            model.save_model(path)

        path = self.path(name, params, ".json", libs=("xgboost",))
        return self._load_or_build(path, load, save, build, validate)

    def torch_module(
        self, name: str, params: dict, make: Callable[[], Any], train: Callable[[Any], None],
        validate: Callable[[Any], None] = lambda module: None,
    ) -> Any:
        """A torch module built by ``make()``; its trained ``state_dict`` is what is stored."""
        import torch

        def load(path: Path) -> Any:
            module = make()
            module.load_state_dict(torch.load(path, weights_only=True))
            return module.eval()

        def save(module: Any, path: Path) -> None:
            torch.save(module.state_dict(), path)

        def build() -> Any:
            module = make()
            train(module)
            return module.eval()

        path = self.path(name, params, ".pt", libs=("torch",))
        return self._load_or_build(path, load, save, build, validate)

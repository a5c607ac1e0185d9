"""On-disk cache of generated data and trained models, in safe formats only.

Arrays are ``.npz`` read with ``allow_pickle=False``; xgboost models are xgboost JSON; torch
models are ``state_dict`` files read with ``weights_only=True``.  Keys hash the parameters and the
versions of the libraries that produced the entry.  Every entry also carries, inside the file, a
SHA-256 of its content and the identity of the code that built it (the builder's module and the
hash of that module's source); both are verified on load.  An entry that is unreadable, fails
verification or the family's own validation is reported (:class:`CacheWarning`), deleted and
rebuilt, never trusted.  Writes go to a temporary file renamed into place, so concurrent xdist
workers never see a half-written entry; temporary files left by a killed run are swept once they
are an hour old.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import stat
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pytest_xai
from pytest_xai.reports.files import replacing

FORMAT = 3  # of the metadata below; part of every key, so older entries are never read
META = "__pytest_xai__"  # npz array / torch state_dict entry / xgboost attribute holding the metadata
STALE_TMP_SECONDS = 3600.0  # a temporary file older than this belongs to a killed writer


class CacheWarning(UserWarning):
    """A cache entry was unreadable or invalid and has been rebuilt."""


class InvalidEntry(ValueError):
    """A cache entry loaded but its metadata, checksum or builder identity does not match."""


def _versions(*modules: str) -> dict[str, str]:
    out = {"python": sys.version.split()[0], "numpy": np.__version__, "pytest_xai": pytest_xai.__version__}
    for name in modules:
        module = sys.modules.get(name) or __import__(name)
        out[name] = getattr(module, "__version__", "?")
    return out


_SOURCE_HASHES: dict[str, str] = {}


def _source(module: Any) -> bytes:
    """A module's source; for a package (a family such as ``pytest_xai.cases.human``, whose builders
    sit in ``__init__`` and call its submodules) every ``.py`` file under it, each with its path."""
    if getattr(module, "__path__", None) is not None and getattr(module, "__file__", None):
        root = Path(module.__file__).parent
        return b"".join(
            path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
            for path in sorted(root.rglob("*.py"))
        )
    return inspect.getsource(module).encode()


def _module_hash(module_name: str) -> str:
    """SHA-256 (16 hex digits) of a module's source (a package's: all its files), computed once per
    process."""
    if module_name not in _SOURCE_HASHES:
        module = sys.modules.get(module_name)
        try:
            source = _source(module) if module is not None else b""
        except (OSError, TypeError):
            source = b""
        _SOURCE_HASHES[module_name] = hashlib.sha256(source).hexdigest()[:16] if source else "no-source"
    return _SOURCE_HASHES[module_name]


def builder_identity(*functions: Callable) -> str:
    """``module@source-hash`` of the modules defining ``functions``: editing a builder's module (or
    any file of the package whose ``__init__`` defines it) makes its old entries fail
    verification, so they are rebuilt."""
    names = []
    for fn in functions:
        fn = getattr(fn, "func", fn)  # functools.partial
        names.append(getattr(fn, "__module__", None) or "?")
    return ",".join(f"{name}@{_module_hash(name)}" for name in sorted(set(names)))


def _digest_items(items) -> str:
    h = hashlib.sha256()
    for key, kind, shape, data in items:
        h.update(json.dumps([key, kind, list(shape), len(data)]).encode())
        h.update(data)
    return h.hexdigest()


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over names, dtypes, shapes and bytes of ``arrays``."""
    items = []
    for key in sorted(arrays):
        a = np.ascontiguousarray(np.asarray(arrays[key]))
        items.append((key, a.dtype.str, a.shape, a.tobytes()))
    return _digest_items(items)


def _tensors_digest(state: dict) -> str:
    import torch

    items = []
    for key in sorted(state):
        t = state[key]
        if isinstance(t, torch.Tensor):
            flat = t.detach().cpu().contiguous().reshape(-1)
            items.append((key, str(t.dtype), tuple(t.shape), flat.view(torch.uint8).numpy().tobytes()))
        else:
            items.append((key, type(t).__name__, (), repr(t).encode()))
    return _digest_items(items)


def _json_digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _verify(meta_text: Any, digest: Callable[[], str], builder: str, name: str, key: str) -> None:
    """Raise :class:`InvalidEntry` unless the stored metadata matches the content, the builder and
    the key (the digest of the entry's parameters and versions: an entry copied over another's
    file would otherwise pass for it)."""
    if meta_text is None:
        raise InvalidEntry("no pytest-xai metadata (not written by this cache)")
    try:
        meta = json.loads(str(meta_text))
    except ValueError:
        raise InvalidEntry("unreadable metadata") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("name") != name:
        raise InvalidEntry(f"metadata of another entry or format: {meta!r}")
    if meta.get("builder") != builder:
        raise InvalidEntry(f"built by other code ({meta.get('builder')}; the builder is now {builder})")
    if meta.get("key") != key:
        raise InvalidEntry(
            "built for other parameters or library versions (its key digest differs from its file name's)"
        )
    if meta.get("sha256") != digest():
        raise InvalidEntry("content does not match its checksum (modified or corrupted)")


def _meta(name: str, builder: str, digest: str, key: str) -> str:
    return json.dumps(
        {"format": FORMAT, "name": name, "builder": builder, "sha256": digest, "key": key}, sort_keys=True
    )


def unusable(root: str | os.PathLike) -> str | None:
    """Why the folder ``root`` cannot hold the cache, or None: a symbolic link is never followed out
    of the cache folder (issue 41: one planted at ``.pytest_cache/d/xai`` had the models written
    wherever it pointed), and what is not a folder cannot be one."""
    if os.path.islink(root):
        return f"a symbolic link (to {os.readlink(os.fspath(root))}), which the cache does not follow"
    if os.path.lexists(root) and not os.path.isdir(root):
        return "not a folder"
    return None


class Cache:
    """A directory of cache entries; ``root=None`` disables the disk (everything is rebuilt).  A
    root that is a symbolic link is not used (:func:`unusable`): a warning, and no disk."""

    def __init__(self, root: str | os.PathLike | None):
        self.root = Path(root) if root is not None else None
        if self.root is not None and (problem := unusable(self.root)) is not None:
            warnings.warn(
                f"pytest-xai: cache folder {self.root}: {problem}; nothing is cached", CacheWarning, stacklevel=2
            )
            self.root = None
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.sweep()

    def sweep(self, older_than: float = STALE_TMP_SECONDS) -> list[Path]:
        """Delete temporary files older than ``older_than`` seconds (left by a killed writer; younger
        ones may belong to a concurrent xdist worker); returns what was deleted."""
        removed: list[Path] = []
        if self.root is None:
            return removed
        limit = time.time() - older_than
        for tmp in self.root.glob("*.tmp*"):
            try:
                st = tmp.lstat()  # a link is removed as itself, never judged by what it points to
                if (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and st.st_mtime < limit:
                    tmp.unlink()
                    removed.append(tmp)
            except OSError:  # gone already (another worker), or not ours to delete
                pass
        return removed

    @staticmethod
    def key(params: dict, libs: tuple[str, ...] = ()) -> str:
        """SHA-256 of an entry's parameters and library versions: its file name, and its metadata."""
        blob = json.dumps(
            {"params": params, "versions": _versions(*libs), "format": FORMAT}, sort_keys=True, default=str
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def path(self, name: str, params: dict, suffix: str, libs: tuple[str, ...] = ()) -> Path | None:
        if self.root is None:
            return None
        return self.root / f"{name}-{self.key(params, libs)[:16]}{suffix}"

    def _load_or_build(self, path, load, save, build, validate) -> Any:
        """The entry at ``path`` loaded and validated, or built and stored.  One builder an entry: a
        process or thread that wants an entry another is building waits for it (``flock`` on
        ``PATH.lock``, released if the builder dies), then loads it.  Without the lock a cold run
        trained the fooling family's detectors twice, in the explainer's and the judge's workers
        (30 CPU s)."""
        if path is None:
            return self._load_or_build_unlocked(path, load, save, build, validate)
        import fcntl

        try:  # O_NOFOLLOW: a symbolic link planted at the lock is never followed out of the cache
            fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:  # a cache folder that takes no new file, or a planted link: build unlocked
            return self._load_or_build_unlocked(path, load, save, build, validate)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return self._load_or_build_unlocked(path, load, save, build, validate)
        finally:
            os.close(fd)

    def _load_or_build_unlocked(self, path, load, save, build, validate) -> Any:
        if path is not None and os.path.lexists(path):
            try:
                if path.is_symlink():  # never followed out of the cache folder
                    raise InvalidEntry(f"a symbolic link (to {os.readlink(path)}), not followed")
                obj = load(path)
                validate(obj)
                return obj
            except Exception as exc:  # noqa: BLE001 - any failure means the entry cannot be trusted
                warnings.warn(
                    f"pytest-xai: cache entry {path} is unreadable or invalid "
                    f"({type(exc).__name__}: {exc}); rebuilding it",
                    CacheWarning,
                    stacklevel=4,  # the builder that asked for the entry
                )
                path.unlink(missing_ok=True)
        obj = build()
        validate(obj)
        if path is not None:
            with replacing(path) as tmp:
                save(obj, Path(tmp))
        return obj

    def arrays(
        self,
        name: str,
        params: dict,
        build: Callable[[], dict[str, np.ndarray]],
        validate: Callable[[dict], None] = lambda arrays: None,
    ) -> dict[str, np.ndarray]:
        """Named arrays, stored as an uncompressed npz without pickles (plus a metadata string)."""
        builder, key = builder_identity(build), self.key(params)

        def load(path: Path) -> dict[str, np.ndarray]:
            with np.load(path, allow_pickle=False) as data:
                arrays = {key: data[key] for key in data.files}
            meta = arrays.pop(META, None)
            _verify(None if meta is None else meta[()], lambda: arrays_digest(arrays), builder, name, key)
            return arrays

        def save(arrays: dict, path: Path) -> None:
            if META in arrays:
                raise ValueError(f"array name {META!r} is reserved by the cache")
            with open(path, "wb") as fh:
                payload: dict[str, Any] = {**arrays, META: np.array(_meta(name, builder, arrays_digest(arrays), key))}
                np.savez(fh, **payload)

        return self._load_or_build(self.path(name, params, ".npz"), load, save, build, validate)

    def xgboost(self, name: str, params: dict, build: Callable[[], Any], validate: Callable[[Any], None]) -> Any:
        """An xgboost sklearn-API model, stored in xgboost's JSON format (metadata as a booster
        attribute)."""
        import xgboost

        builder, key = builder_identity(build), self.key(params, ("xgboost",))

        def load(path: Path) -> Any:
            doc = json.loads(path.read_text(encoding="utf-8"))
            attributes = doc.get("learner", {}).get("attributes", {}) if isinstance(doc, dict) else {}
            meta = attributes.pop(META, None) if isinstance(attributes, dict) else None
            _verify(meta, lambda: _json_digest(doc), builder, name, key)
            model = xgboost.XGBRegressor()
            model.load_model(path)
            model.get_booster().set_attr(**{META: None})
            # One thread per process (docs/design.md, "Speed rules": contention slowed explainers 25-100x).
            return model.set_params(n_jobs=1)

        def save(model: Any, path: Path) -> None:
            model.save_model(path)
            doc = json.loads(path.read_text(encoding="utf-8"))
            digest = _json_digest(doc)
            doc["learner"].setdefault("attributes", {})[META] = _meta(name, builder, digest, key)
            path.write_text(json.dumps(doc), encoding="utf-8")

        path = self.path(name, params, ".json", libs=("xgboost",))
        return self._load_or_build(path, load, save, build, validate)

    def torch_module(
        self,
        name: str,
        params: dict,
        make: Callable[[], Any],
        train: Callable[[Any], None],
        validate: Callable[[Any], None] = lambda module: None,
    ) -> Any:
        """A torch module built by ``make()``; its trained ``state_dict`` is what is stored (plus a
        metadata string entry)."""
        import torch

        builder, key = builder_identity(make, train), self.key(params, ("torch",))

        def load(path: Path) -> Any:
            state = torch.load(path, weights_only=True)
            if not isinstance(state, dict):
                raise InvalidEntry(f"expected a state_dict, got {type(state).__name__}")
            meta = state.pop(META, None)
            _verify(meta, lambda: _tensors_digest(state), builder, name, key)
            module = make()
            module.load_state_dict(state)
            return module.eval()

        def save(module: Any, path: Path) -> None:
            state = module.state_dict()
            state[META] = _meta(name, builder, _tensors_digest(state), key)
            torch.save(state, path)

        def build() -> Any:
            module = make()
            train(module)
            return module.eval()

        path = self.path(name, params, ".pt", libs=("torch",))
        return self._load_or_build(path, load, save, build, validate)


#: The no-op cache: every entry is built (and validated) each time, nothing is stored.  Builders
#: receive it when there is no disk cache, so none of them tests for a missing cache.
NO_CACHE = Cache(None)

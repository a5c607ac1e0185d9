"""The public benchmark's file formats: a loader for a local copy of Mohseni & Ragan's benchmark
(``SinaMohseni/ML-Interpretability-Evaluation-Benchmark``; nothing is downloaded or shipped) and
the parsers of its two text annotation formats, which the synthetic texts are read back through.

:func:`load_images` and :func:`load_texts` skip and count malformed files by default
(``strict=False``: report the count of malformed files without crashing, ``docs/human.md``
"Loader"); ``strict=True`` raises :class:`BenchmarkFormatError` naming the file (and line or key).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


class BenchmarkFormatError(ValueError):
    """A benchmark file does not have the expected format; the message names the file."""


@dataclass(frozen=True)
class ImageRecord:
    """One annotated image: ``image`` RGB uint8 (H, W, 3), ``weighted`` float32 in [0, 1] (H, W),
    ``segmentation`` bool (H, W) or None when the copy has no object mask for this image."""

    id: str
    subject: str
    image: np.ndarray
    weighted: np.ndarray
    segmentation: np.ndarray | None
    paths: tuple[Path, ...]


@dataclass(frozen=True)
class TextRecord:
    """One annotated text: whitespace tokens and one human weight per token.

    ``source`` is ``"20news"`` (word-level annotation expanded to every occurrence) or ``"imdb"``
    (position-exact annotation); ``problems`` lists annotations that could not be applied
    (a stored token that differs from the text at its index, or a word that never occurs).
    """

    id: str
    label: str
    source: str
    tokens: tuple[str, ...]
    weights: np.ndarray
    problems: tuple[str, ...] = ()
    path: Path | None = None


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass
class Loaded:
    """What a loader found: the records, and every file it skipped with the reason."""

    records: list = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    def _problem(self, strict: bool, path: Path, reason: str) -> None:
        if strict:
            raise BenchmarkFormatError(f"{path}: {reason}")
        self.skipped.append(Skipped(Path(path), reason))


def _norm(name: str) -> str:
    """Folder spellings of different commits compare equal: 'human attention mask' ==
    'human_attention_mask' == 'Human-Attention-Mask'."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


_IMAGE_ROLES = {
    "original": {"org_img", "org_imgs", "original_images", "original_image", "org_images"},
    "weighted": {"human_attention_mask", "human_attention_masks"},
    "segmentation": {
        "object_segmentation_mask",
        "object_segmentation_masks",
        "segmentation_mask",
        "segmentation_masks",
    },
}


def _image_root(root: Path) -> tuple[Path, dict[str, Path]]:
    """The folder holding the image role folders (``root``, ``root/Image``, ``root/Image/ImageNet``
    or ``root/ImageNet``) and the folder of each role; unknown folders are ignored."""
    for candidate in (root, root / "Image", root / "Image" / "ImageNet", root / "ImageNet"):
        if not candidate.is_dir():
            continue
        roles: dict[str, Path] = {}
        for child in sorted(candidate.iterdir()):
            if not child.is_dir():
                continue
            for role, spellings in _IMAGE_ROLES.items():
                if _norm(child.name) in spellings:
                    if role in roles:
                        raise BenchmarkFormatError(
                            f"{candidate}: two folders hold the {role} images ({roles[role].name!r} and "
                            f"{child.name!r}); keep one spelling"
                        )
                    roles[role] = child
        if roles:
            return candidate, roles
    raise FileNotFoundError(
        f"{root}: no benchmark image folders found; expected org_img/ (or 'original images'), "
        f"human_attention_mask/ and object_segmentation_mask/ under {root}, {root}/Image or "
        f"{root}/Image/ImageNet"
    )


def _files_by_id(folder: Path | None, loaded: Loaded, strict: bool) -> dict[str, Path]:
    if folder is None:
        return {}
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        if path.stem in found:
            loaded._problem(
                strict, path, f"a second file for image id {path.stem!r} (first: {found[path.stem].name}); ignored"
            )
            continue
        found[path.stem] = path
    return found


def _open_image(path: Path, mode: str) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            return np.asarray(img.convert(mode))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise BenchmarkFormatError(f"{path}: not a readable image ({type(exc).__name__}: {exc})") from None


def decode_weighted(gray: np.ndarray) -> np.ndarray:
    """A weighted mask stored as 8-bit gray (0-255, JPEG in the benchmark) -> float32 in [0, 1]."""
    return (np.asarray(gray, dtype=np.float32) / np.float32(255.0)).clip(0.0, 1.0)


def load_images(root, *, strict: bool = False) -> Loaded:
    """Image records of a local copy of the benchmark (never downloaded, never resized).

    Reads ``org_img/`` (or ``original images``/``original_images``), ``human_attention_mask/``
    (JPEG, 0-255 -> [0, 1]) and ``object_segmentation_mask/`` (gray > 127 -> object) under
    ``root``, ``root/Image`` or ``root/Image/ImageNet``; other folders (overlays, LIME outputs) are
    ignored.  An id is the file stem (``cat4``), its subject the stem without trailing digits.
    Unreadable files, missing weighted masks and H x W disagreements are skipped and counted
    (``strict=False``, the default) or raised as :class:`BenchmarkFormatError` (``strict=True``).
    """
    root = Path(root)
    _, roles = _image_root(root)
    loaded = Loaded()
    originals = _files_by_id(roles.get("original"), loaded, strict)
    weighted = _files_by_id(roles.get("weighted"), loaded, strict)
    segmentation = _files_by_id(roles.get("segmentation"), loaded, strict)
    if not originals:
        raise FileNotFoundError(f"{root}: found no original images (org_img/ or 'original images')")
    for orphan in sorted((set(weighted) | set(segmentation)) - set(originals)):
        path = weighted.get(orphan) or segmentation[orphan]
        loaded._problem(strict, path, f"mask for {orphan!r} has no original image")
    for key, path in originals.items():
        if key not in weighted:
            loaded._problem(strict, path, f"no human-attention mask for {key!r}")
            continue
        paths = (path, weighted[key]) + ((segmentation[key],) if key in segmentation else ())
        try:
            image = _open_image(path, "RGB")
            h = decode_weighted(_open_image(weighted[key], "L"))
            s = _open_image(segmentation[key], "L") > 127 if key in segmentation else None
        except BenchmarkFormatError as exc:
            if strict:
                raise
            loaded.skipped.append(Skipped(path, str(exc)))
            continue
        sizes = {p.name: a.shape[:2] for p, a in zip(paths, (image, h, s)) if a is not None}
        if len(set(sizes.values())) > 1:
            listing = ", ".join(f"{name} is {hw[0]}x{hw[1]}" for name, hw in sizes.items())
            loaded._problem(strict, path, f"image and masks differ in H x W ({listing}); nothing is resized")
            continue
        loaded.records.append(ImageRecord(key, re.sub(r"\d+$", "", key), image, h, s, paths))
    return loaded


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _read_json(path: Path) -> Any:
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark, as some editors write, is dropped
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BenchmarkFormatError(
            f"{path}: not UTF-8 text ({exc.reason} at line {line}, byte {exc.start}); save it as UTF-8"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise BenchmarkFormatError(f"{path}: JSON nested too deeply to be an annotation file") from None
    except ValueError as exc:  # e.g. an integer of more than sys.get_int_max_str_digits() digits
        raise BenchmarkFormatError(f"{path}: invalid JSON ({exc})") from None


def _read_text(path: Path) -> str:
    raw = _read_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # 20 Newsgroups articles are often latin-1


def _weight(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise BenchmarkFormatError(f"{where}: weight {value!r} is not a number in [0, 1]")
    return float(value)


def _match_form(token: str) -> str:
    """The form under which 20 Newsgroups words are matched: lower case, outer punctuation off."""
    return re.sub(r"^\W+|\W+$", "", token.lower())


def parse_newsgroups(obj: Any, article: str, *, label: str, where: str = "<json>") -> TextRecord:
    """A 20 Newsgroups annotation ``{"article": id, "words": [[word, weight], ...]}`` applied to
    the article text.

    The benchmark annotates words, not positions, so a word's weight applies to *every*
    occurrence of it in the article (matched case-insensitively, ignoring surrounding punctuation;
    the largest weight wins when a word is listed twice).  This is the format's inherent
    ambiguity: an annotator who marked one "cell" is credited with all of them.
    """
    if not isinstance(obj, dict) or "article" not in obj or "words" not in obj:
        raise BenchmarkFormatError(f"{where}: expected an object with keys 'article' and 'words'")
    if not isinstance(obj["words"], list):
        raise BenchmarkFormatError(f"{where}: 'words' must be a list of [word, weight] pairs")
    table: dict[str, float] = {}
    for i, pair in enumerate(obj["words"]):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)):
            raise BenchmarkFormatError(f"{where}: words[{i}] = {pair!r} is not a [word, weight] pair")
        form = _match_form(pair[0])
        table[form] = max(table.get(form, 0.0), _weight(pair[1], f"{where}: words[{i}]"))
    tokens = tuple(article.split())
    forms = [_match_form(t) for t in tokens]
    weights = np.array([table.get(f, 0.0) for f in forms])
    unmatched = sorted(set(table) - set(forms))
    problems = tuple(f"word {w!r} does not occur in the article" for w in unmatched)
    return TextRecord(str(obj["article"]), label, "20news", tokens, weights, problems)


def parse_imdb(
    obj: Any, review: str, *, id: str, label: str, where: str = "<json>", index_base: int | str = "auto"
) -> TextRecord:
    """An IMDB annotation ``{"<index>": [token, weight], ...}`` applied, position-exact, to the
    whitespace split of the review.

    Every stored token is checked against the token at its index; a mismatch (or an index past the
    end) is not applied and is listed in ``problems``.  The public files observed index from 1
    (``"1": ["This", ...]`` for a review starting "This"); ``index_base="auto"`` picks whichever of
    0 and 1 matches more stored tokens (1 on a tie).
    """
    if not isinstance(obj, dict):
        raise BenchmarkFormatError(f"{where}: expected an object keyed by token index")
    entries = []
    for key, value in obj.items():
        if not re.fullmatch(r"\d+", str(key)):
            raise BenchmarkFormatError(f"{where}: key {key!r} is not a token index")
        if not (isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str)):
            raise BenchmarkFormatError(f"{where}: key {key!r}: {value!r} is not a [token, weight] pair")
        entries.append((int(key), value[0], _weight(value[1], f"{where}: key {key!r}")))
    tokens = tuple(review.split())

    def matches(base: int) -> int:
        return sum(0 <= i - base < len(tokens) and tokens[i - base] == tok for i, tok, _ in entries)

    if index_base == "auto":
        index_base = 0 if matches(0) > matches(1) else 1
    elif index_base not in (0, 1):
        raise ValueError(f"index_base must be 0, 1 or 'auto', got {index_base!r}")
    weights = np.zeros(len(tokens))
    problems = []
    for i, tok, w in sorted(entries):
        pos = i - index_base
        if not 0 <= pos < len(tokens):
            problems.append(f"key {i}: index past the end of the review ({len(tokens)} tokens)")
        elif tokens[pos] != tok:
            problems.append(f"key {i}: stored token {tok!r} but the review has {tokens[pos]!r}")
        else:
            weights[pos] = w
    return TextRecord(str(id), label, "imdb", tokens, weights, tuple(problems))


def _text_root(root: Path) -> Path:
    for candidate in (root, root / "Text"):
        if candidate.is_dir() and any(
            _norm(c.name) in ("20news_group", "imdb") for c in candidate.iterdir() if c.is_dir()
        ):
            return candidate
    raise FileNotFoundError(
        f"{root}: no benchmark text folders found; expected 20news_group/ or IMDB/ under {root} or {root}/Text"
    )


def _child(folder: Path, *spellings: str) -> Path | None:
    if not folder.is_dir():
        return None
    for child in sorted(folder.iterdir()):
        if child.is_dir() and _norm(child.name) in spellings:
            return child
    return None


def _newsgroups_index(newsgroups: Path) -> dict[tuple[str, str], Path]:
    """(topic, article id) -> file, over any layout of a 20 Newsgroups copy (``20news-bydate-*/``
    or ``20_newsgroups/``): files named by their id inside a folder named by their topic."""
    index: dict[tuple[str, str], Path] = {}
    for path in sorted(newsgroups.rglob("*")):
        if path.is_file():
            index.setdefault((path.parent.name, path.stem if path.suffix == ".txt" else path.name), path)
    return index


def load_texts(root, *, newsgroups=None, strict: bool = False, index_base: int | str = "auto") -> Loaded:
    """Text records of a local copy of the benchmark.

    - ``20news_group/human_attention/<topic>/<article-id>.json``: the article text is not in the
      benchmark, so these need ``newsgroups``, the user's own 20 Newsgroups copy; without it each
      is skipped with that reason.
    - ``IMDB/human_attention/<label>/<id>.json`` with the review in
      ``IMDB/org_reviews/<label>_val/<id>.txt`` (or ``<label>/``).

    Unknown folders are ignored.  Malformed JSON (reported with line and column), schema errors
    (with the key) and missing texts are skipped and counted (``strict=False``, the default) or
    raised as :class:`BenchmarkFormatError` (``strict=True``).  Stored IMDB tokens that disagree
    with the review are not errors: they are listed in each record's ``problems``.
    """
    base = _text_root(Path(root))
    loaded = Loaded()
    index = _newsgroups_index(Path(newsgroups)) if newsgroups is not None else None
    news_root, imdb = _child(base, "20news_group"), _child(base, "imdb")
    news = _child(news_root, "human_attention") if news_root else None
    annotations = _child(imdb, "human_attention") if imdb else None
    reviews = _child(imdb, "org_reviews") if imdb else None
    jobs = []
    for kind, folder in (("20news", news), ("imdb", annotations)):
        if folder is None:
            continue
        for label_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
            jobs += [(kind, label_dir.name, p) for p in sorted(label_dir.glob("*.json"))]
    if not jobs:
        raise FileNotFoundError(
            f"{base}: no annotation files (*.json) under 20news_group/human_attention/ or IMDB/human_attention/"
        )
    for kind, label, path in jobs:
        try:
            if kind == "20news":
                if index is None:
                    loaded.skipped.append(
                        Skipped(
                            path,
                            "the article text is not part of the benchmark; pass newsgroups=<your 20 Newsgroups copy>",
                        )
                    )
                    continue
                article = index.get((label, path.stem))
                if article is None:
                    raise BenchmarkFormatError(f"{path}: article {label}/{path.stem} not found under {newsgroups}")
                record = parse_newsgroups(_read_json(path), _read_text(article), label=label, where=str(path))
            else:
                assert imdb is not None  # imdb jobs come from its human_attention folder
                review = None
                for folder_name in (f"{label}_val", label):
                    candidate = reviews / folder_name / f"{path.stem}.txt" if reviews else None
                    if candidate is not None and candidate.is_file():
                        review = candidate
                        break
                if review is None:
                    raise BenchmarkFormatError(
                        f"{path}: no review text {label}_val/{path.stem}.txt under {reviews or imdb / 'org_reviews'}"
                    )
                record = parse_imdb(
                    _read_json(path),
                    _read_text(review),
                    id=path.stem,
                    label=label,
                    where=str(path),
                    index_base=index_base,
                )
        except BenchmarkFormatError as exc:
            if strict:
                raise
            loaded.skipped.append(Skipped(path, str(exc)))
            continue
        loaded.records.append(
            TextRecord(record.id, record.label, record.source, record.tokens, record.weights, record.problems, path)
        )
    return loaded

"""The CSV interchange format of the published data set (Mücke & Pfahler 2022, §2 and §2.1):
``fen,label,mask0,mask1,mask2`` with the masks as uint64 decimal integers; reading with row-level
problems, writing, and a user's file in the data directory replacing the generated positions.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_xai.cases.chess.positions import COLUMNS, N_PER_CLASS, rows_to_arrays
from pytest_xai.cases.chess.rules import CLASSES, chess_module, label_of, masks_of


@dataclass(frozen=True)
class CsvProblem:
    """A row of a positions CSV that was not read, and why (``row`` is the 1-based line)."""

    path: str
    row: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.row}: {self.message}"


def write_csv(path: str | Path, positions: dict[str, np.ndarray]) -> None:
    """Write positions with the header ``fen,label,mask0,mask1,mask2``, masks in decimal."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        for i in range(len(positions["fen"])):
            writer.writerow(
                [positions["fen"][i], int(positions["label"][i])] + [int(positions[f"mask{k}"][i]) for k in range(3)]
            )


def _parse_mask(text: str) -> int:
    text = text.strip()
    if text.startswith("-") and text[1:].isdigit():
        raise ValueError(f"is negative ({text})")
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"is not a non-negative decimal integer ({text!r})")
    value = int(text)
    if value >= 2**64:
        raise ValueError(f"is >= 2**64 ({text})")
    return value


def _parse_row(fields: list[str], chess) -> tuple[str, int, int, int, int]:
    """One data row -> (fen, label, m0, m1, m2), or ValueError listing everything wrong."""
    errors = []
    fen = fields[0].strip()
    board = None
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        errors.append(f"illegal FEN {fen!r} ({exc})")
    else:
        if not board.is_valid():
            errors.append(f"illegal position {fen!r} ({board.status()!r})")
    label = None
    if fields[1].strip() in ("0", "1", "2"):
        label = int(fields[1])
    else:
        errors.append(f"label must be 0, 1 or 2, got {fields[1]!r}")
    masks = []
    for k, text in enumerate(fields[2:5]):
        try:
            masks.append(_parse_mask(text))
        except ValueError as exc:
            errors.append(f"mask{k} {exc}")
    if board is not None and label is not None and not errors:
        actual = label_of(board)
        if actual != label:
            errors.append(f"label {label} inconsistent with the FEN: python-chess says {actual} ({CLASSES[actual]})")
    if errors or board is None or label is None:  # board and label are None only with errors
        raise ValueError("; ".join(errors))
    return (board.fen(), label, *masks)


def read_csv(path: str | Path, *, strict: bool = False) -> tuple[dict[str, np.ndarray], list[CsvProblem]]:
    """Read a positions CSV: returns (positions, problems).

    Layout: a header naming ``fen, label, mask0, mask1, mask2`` (any order and case, extra
    columns ignored), or no header at all (then the columns are in that order, recognised by a
    label 0/1/2 in the second field of line 1).  Masks are uint64 decimal integers, bit s =
    square s.  Every row is checked: parsable and valid FEN, label in {0, 1, 2} and equal to what
    python-chess computes, masks integers in [0, 2**64), exactly the header's number of fields.
    Blank lines are skipped.  A bad row is skipped and reported as a :class:`CsvProblem`
    (``file:line: what``); with ``strict=True`` the first one raises ``ValueError`` instead.
    A file that cannot be read as UTF-8 CSV raises :class:`pytest_xai.reports.files.DataFileError` (a
    ``ValueError``) naming the file and line.
    The masks are read as given, not recomputed (a dataset may use another mask variant).
    """
    import itertools

    from pytest_xai.reports.files import DataFileError, csv_records

    chess = chess_module()
    path = Path(path)
    rows: list[tuple[str, int, int, int, int]] = []
    problems: list[CsvProblem] = []
    records = csv_records(path, f"expected a positions CSV with the columns {','.join(COLUMNS)}")
    first_line, first = next(((line, r) for line, r in records if r), (None, None))
    if first is None:
        raise DataFileError(f"{path}: empty file, expected a header {','.join(COLUMNS)}")
    names = [name.strip().lower() for name in first]
    if all(c in names for c in COLUMNS):
        columns, width, pending = [names.index(c) for c in COLUMNS], len(names), []
    elif len(first) >= 2 and first[1].strip() in ("0", "1", "2"):
        columns, width, pending = list(range(5)), 5, [(first_line, first)]
    else:
        raise DataFileError(
            f"{path}:{first_line}: expected a header naming "
            f"{', '.join(COLUMNS)} or a first data row, got {first!r:.200}"
        )
    for line, fields in itertools.chain(pending, records):
        if not fields:
            continue
        try:
            if len(fields) != width:
                kind = "truncated row" if len(fields) < width else "too many fields"
                raise ValueError(f"{kind}: expected {width} fields, got {len(fields)}")
            rows.append(_parse_row([fields[c] for c in columns], chess))
        except ValueError as exc:
            problem = CsvProblem(str(path), line, str(exc))
            if strict:
                raise DataFileError(str(problem)) from None
            problems.append(problem)
    return rows_to_arrays(rows), problems


USER_CSV = "chess_positions.csv"  # looked for in --xai-data-dir / ini xai_data_dir


def user_positions(data_dir, n_per_class: int = N_PER_CLASS) -> dict[str, np.ndarray] | None:
    """The first ``n_per_class`` valid rows per class of the user's ``DATA_DIR/chess_positions.csv``
    (the published layout, e.g. a slice of the Kaggle data), or None when there is no such file.

    Bad rows are skipped and reported in a warning naming file and line; masks are recomputed from
    each FEN and must match the file's, so a mislabelled file cannot pass silently.
    """
    import warnings

    path = Path(data_dir) / USER_CSV if data_dir else None
    if path is None or not path.is_file():
        return None
    rows, problems = read_csv(path)
    mismatched = [
        i
        for i, fen in enumerate(rows["fen"])
        if tuple(int(rows[c][i]) for c in COLUMNS[2:]) != masks_of(chess_module().Board(str(fen)))
    ]
    if problems or mismatched:
        shown = [str(p) for p in problems[:3]] + [
            f"{path}: row {i + 1}: masks differ from python-chess's" for i in mismatched[:3]
        ]
        warnings.warn(
            f"pytest-xai: {len(problems) + len(mismatched)} rows of {path} skipped: " + "; ".join(shown), stacklevel=2
        )
    keep = np.ones(len(rows["fen"]), dtype=bool)
    keep[mismatched] = False
    picked = np.concatenate([np.flatnonzero(keep & (rows["label"] == c))[:n_per_class] for c in range(3)])
    if any(np.sum(rows["label"][picked] == c) == 0 for c in range(3)):
        from pytest_xai.reports.files import DataFileError

        raise DataFileError(f"{path}: needs at least one valid position of each class (no check, check, mate)")
    return {k: v[picked] for k, v in rows.items()}

"""Users' data files that are not what they should be give one message naming the file and the
line, never a raw ``_csv.Error`` or ``UnicodeDecodeError`` (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_xai.cases import fooling, human
from pytest_xai.reports.files import DataFileError, csv_records

TINY = Path(__file__).parent / "data" / "compas_tiny.csv"
LONG = "x" * 140_000  # over csv.field_size_limit() (131,072)


def test_csv_records_number_lines_from_where_a_record_starts(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\n\n1,"two\nlines"\n3,4\n')
    assert list(csv_records(path)) == [(1, ["a", "b"]), (2, []), (3, ["1", "two\nlines"]), (5, ["3", "4"])]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'a,b\n1,2\n"' + LONG.encode() + b"\n", r"x\.csv, line 3: a field is longer than 131,072 characters"),
        (b'a,b\n1,2\n3,"' + b"y\n" * 70_000, r"x\.csv, line 3: a field .* \(read up to line \d+\).* never closed"),
        (b"a,b\n1,2\n3,\xff\n", r"x\.csv: not a UTF-8 text file \(invalid start byte at line 3\)"),
    ],
)
def test_csv_records_errors_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=message) as raised:
        list(csv_records(path, "do this"))
    assert str(raised.value).endswith("; do this") and raised.value.__suppress_context__


def test_unreadable_csv_is_a_data_file_error(tmp_path):
    with pytest.raises(DataFileError, match="cannot be read"):
        list(csv_records(tmp_path))  # a directory


# ------------------------------------------------------------------------------------ chess CSV


@pytest.fixture(scope="module")
def chess_family():
    pytest.importorskip("chess")
    from pytest_xai.cases import chess as family

    return family


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ('"' + LONG + "\n", r"chess_positions\.csv, line 3: a field is longer than 131,072 characters"),
        (LONG + "\n", r"chess_positions\.csv, line 3: a field is longer"),
    ],
)
def test_chess_csv_with_an_oversized_field(tmp_path, chess_family, tail, message):
    path = tmp_path / chess_family.USER_CSV
    rows = chess_family.generate_positions(1, seed=3)
    chess_family.write_csv(path, rows)
    text = path.read_text().splitlines()
    path.write_text("\n".join(text[:2]) + "\n" + tail)
    for strict in (False, True):
        with pytest.raises(DataFileError, match=message):
            chess_family.read_csv(path, strict=strict)
    with pytest.raises(DataFileError, match=message):
        chess_family.user_positions(tmp_path)


def test_chess_csv_that_is_not_utf8_or_has_a_bom(tmp_path, chess_family):
    path = tmp_path / chess_family.USER_CSV
    chess_family.write_csv(path, chess_family.generate_positions(1, seed=3))
    good = path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + good)  # Excel's "CSV UTF-8": the header is still recognised
    rows, problems = chess_family.read_csv(path)
    assert len(rows["fen"]) == 3 and not problems
    lines = good.split(b"\n")
    path.write_bytes(b"\n".join(lines[:2] + [lines[2].replace(b"/", b"\xe9/", 1)] + lines[3:]))
    with pytest.raises(DataFileError, match=r"chess_positions\.csv: not a UTF-8 text file .*at line 3"):
        chess_family.read_csv(path)


# ------------------------------------------------------------------------------------ COMPAS CSV


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines[:2] + ['"' + LONG] + lines[2:], r"line 3: a field is longer than 131,072 characters"),
        (
            lambda lines: lines[:2] + [lines[2].replace(",41,", ",nan,", 1)] + lines[3:],
            r"line 3, column 'age': 'nan' is not a number",
        ),
        (
            lambda lines: lines[:2] + [lines[2].replace(",41,", ",inf,", 1)] + lines[3:],
            r"line 3, column 'age': 'inf' is not a number",
        ),
    ],
)
def test_compas_csv_errors_name_file_and_line(tmp_path, edit, message):
    path = tmp_path / fooling.COMPAS_FILE
    path.write_text("\n".join(edit(TINY.read_text().splitlines())) + "\n")
    with pytest.raises(DataFileError, match=message) as raised:
        fooling.load_compas(path, min_rows=1)
    assert str(path) in str(raised.value) and "propublica" in str(raised.value)


def test_compas_csv_in_latin1_names_the_line(tmp_path):
    path = tmp_path / fooling.COMPAS_FILE
    lines = TINY.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:4] + [lines[4].replace(b"Male", b"M\xe4le", 1)] + lines[5:]))
    with pytest.raises(DataFileError, match=r"compas-scores-two-years\.csv: not a UTF-8 text file .*at line 5"):
        fooling.load_compas(path, min_rows=1)


# ------------------------------------------------------------------------------ human benchmark


def imdb_copy(root: Path, annotation: bytes) -> Path:
    (root / "IMDB" / "human_attention" / "pos").mkdir(parents=True)
    (root / "IMDB" / "org_reviews" / "pos_val").mkdir(parents=True)
    (root / "IMDB" / "org_reviews" / "pos_val" / "1.txt").write_text("a good film")
    path = root / "IMDB" / "human_attention" / "pos" / "1.json"
    path.write_bytes(annotation)
    return path


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (b"[" * 100_000, "JSON nested too deeply"),
        (b'{"1": ["a", ' + b"1" * 5000 + b"]}", r"invalid JSON \(Exceeds the limit"),
        (b'{"1": ["a", 0.5],\n "2": ["g\xf6od", 1]}', r"not UTF-8 text \(invalid start byte at line 2"),
    ],
)
def test_human_annotation_files_that_are_not_json(tmp_path, annotation, message):
    path = imdb_copy(tmp_path, annotation)
    loaded = human.load_texts(tmp_path)  # skipped and counted, the load goes on
    assert loaded.records == [] and [s.path for s in loaded.skipped] == [path]
    assert str(path) in loaded.skipped[0].reason
    with pytest.raises(human.BenchmarkFormatError, match=message):
        human.load_texts(tmp_path, strict=True)


def test_human_annotation_with_a_bom_and_a_folder_named_like_an_annotation(tmp_path):
    path = imdb_copy(tmp_path, b"\xef\xbb\xbf" + json.dumps({"1": ["a", 0.5], "2": ["good", 1]}).encode())
    (record,) = human.load_texts(tmp_path).records
    assert record.weights.tolist() == [0.5, 1.0, 0.0]
    folder = path.with_name("2.json")
    folder.mkdir()  # globbed as an annotation; before: a raw IsADirectoryError ended the load
    (tmp_path / "IMDB" / "org_reviews" / "pos_val" / "2.txt").write_text("another film")
    loaded = human.load_texts(tmp_path)
    assert len(loaded.records) == 1 and [s.path for s in loaded.skipped] == [folder]
    with pytest.raises(human.BenchmarkFormatError, match=r"2\.json: cannot be read \(Is a directory\)"):
        human.load_texts(tmp_path, strict=True)

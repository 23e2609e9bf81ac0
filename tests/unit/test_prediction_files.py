"""Every predictions-file format a user has, and every refusal, on small files written by the tests."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.scoring.predictions import columns_spec, describe, read_prediction_file

pytestmark = pytest.mark.unit

REQUIRED = ("query_id", "predicted_state")
OPTIONAL = ("predicted_peak_mib",)
ROWS = [("query-1", "within_margin"), ("query-2", "memory_failure")]
CSV = "query_id,predicted_state\nquery-1,within_margin\nquery-2,memory_failure\n"


def read(path, optional=()):
    columns = read_prediction_file(path, REQUIRED, optional)
    return {name: values.to_pylist() for name, values in columns.items()}


EXPECTED = {"query_id": ["query-1", "query-2"], "predicted_state": ["within_margin", "memory_failure"]}


def jsonl() -> bytes:
    return "".join(json.dumps(dict(zip(REQUIRED, row))) + "\n" for row in ROWS).encode()


def zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("p.csv", CSV.encode()),
        ("p.csv", b"\xef\xbb\xbf" + CSV.replace("\n", "\r\n").encode()),  # BOM and Windows line ends
        ("p.csv", b" query_id , predicted_state\n\nquery-1,within_margin\nquery-2,memory_failure\n"),
        ("p.jsonl", jsonl()),
        ("p.csv.gz", gzip.compress(CSV.encode())),
        ("p.csv.bz2", bz2.compress(CSV.encode())),
        ("p.jsonl.zst", zstd(jsonl())),
        ("predictions", CSV.encode()),  # no extension: recognised from the bytes
        ("p.txt.gz", gzip.compress(jsonl())),
    ],
    ids=["csv", "bom-crlf", "spaces-blank-line", "jsonl", "gzip", "bzip2", "zstd", "no-extension", "gzip-jsonl"],
)
def test_every_accepted_text_format(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    columns = read(path)
    columns["query_id"] = [v.strip() for v in columns["query_id"]]
    assert columns == EXPECTED


def test_parquet_with_a_class_label_column_is_decoded_with_its_names(tmp_path):
    import datasets

    features = datasets.Features(
        {"query_id": datasets.Value("string"), "predicted_state": datasets.ClassLabel(names=list(EXPECTED_NAMES))}
    )
    dataset = datasets.Dataset.from_dict({"query_id": ["query-1", "query-2"], "predicted_state": [0, 2]}, features)
    dataset.to_parquet(str(tmp_path / "p.parquet"))
    assert read(tmp_path / "p.parquet") == EXPECTED


EXPECTED_NAMES = ("within_margin", "above_margin", "memory_failure")


def test_parquet_numbers_are_read_as_their_text(tmp_path):
    table = pa.table({"query_id": ["q"], "predicted_state": ["within_margin"], "predicted_peak_mib": [1.5]})
    pq.write_table(table, tmp_path / "p.parquet")
    assert read(tmp_path / "p.parquet", OPTIONAL)["predicted_peak_mib"] == ["1.5"]


def test_an_optional_column_may_be_absent_or_blank(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("query_id,predicted_state,predicted_peak_mib\nq1,within_margin,\nq2,above_margin,39000\n")
    assert read(path, OPTIONAL)["predicted_peak_mib"] == ["", "39000"]
    path.write_text(CSV)
    assert "predicted_peak_mib" not in read(path, OPTIONAL)


def test_standard_input(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CSV.encode())))
    assert read("-") == EXPECTED
    assert describe("-") == "standard input" and describe("p.csv") == "p.csv"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("p.csv", b"", "is empty (expected the header query_id,predicted_state)"),
        ("p.csv", b"query_id,predicted_state\n", "has a header but no prediction rows"),
        ("p.csv", CSV.encode("utf-16"), "is UTF-16 text; accepted: CSV"),
        ("p.csv", "query_id,predicted_state\nq1,wíthin\n".encode("latin-1"), "text that is not UTF-8"),
        ("p.csv", b"query_id;predicted_state\nq1;within_margin\n", "separated by ';' (semicolons), not commas"),
        ("p.json", b'[{"query_id": "q"}]', "a JSON array, not JSON Lines"),
        ("p.xlsx", b"PK\x03\x04rest", "a ZIP archive"),
        (
            "p.csv",
            b"query_id\nq1\n",
            "must have exactly the columns query_id,predicted_state (found 'query_id'; missing",
        ),
        ("p.csv", b"query_id,predicted_state,x\nq,w,1\n", "must have exactly the columns"),
        ("p.csv", b"query_id,query_id,predicted_state\nq,q,w\n", "must have exactly the columns"),
        ("p.csv", b"query_id,predicted_state\nq1\n", "data row 1 (line 2) has 1 cell where the header has 2"),
        ("p.parquet", b"query_id,predicted_state\nq,w\n", "text, although it is named .parquet"),
        ("p.csv.gz", b"\x1f\x8bnot gzip at all", "is not valid gzip data"),
        ("p.bin", b"\x00\x00\x07\x08" * 100, "is binary data"),
        ("p.jsonl", b'{"query_id": "q", "predicted_state": "w"}\n{"query_id": ', "line 2 is not valid JSON"),
    ],
)
def test_refusals_are_one_line_naming_what_was_seen(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        read(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"predictions file {path}")


def test_a_required_value_may_not_be_missing(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"query_id": "q1", "predicted_state": "within_margin"}\n{"query_id": "q2"}\n')
    with pytest.raises(InputError, match=r"1 row\(s\) have no predicted_state"):
        read(path)


def test_a_directory_or_a_missing_file(tmp_path):
    with pytest.raises(InputError, match="is a directory, not a file"):
        read(tmp_path)
    with pytest.raises(InputError, match="predictions file .*missing.csv does not exist"):
        read(tmp_path / "missing.csv")


def test_columns_spec_names_the_optional_columns():
    assert columns_spec(REQUIRED, OPTIONAL) == "query_id,predicted_state[,predicted_peak_mib]"

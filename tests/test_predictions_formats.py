"""Prediction files in every format a user has: the same predictions give byte-identical score files; what is not
one of the accepted formats is refused in one line that names what was seen, never raw bytes.

Formats are written the way users write them: ``datasets.Dataset.to_json`` / ``to_parquet`` (also with a
``ClassLabel`` column), pandas, gzip/bz2/zstd compression, and standard input.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.followup import USER_METHOD, score_study, study_rows
from rlvrambench_hf.scoring.predictions import read_prediction_file
from rlvrambench_hf.transfer import load_transfer_tables, read_predictions, reference_predictions

from conftest import cli_env

LABELS = ["within_margin", "above_margin", "memory_failure"]


@pytest.fixture(scope="module")
def rows(snapshot: Path) -> dict[str, list[str]]:
    tables = load_transfer_tables(snapshot)
    table = reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    return {
        "query_id": table.column("query_id").to_pylist(),
        "predicted_state": table.column("predicted_state").to_pylist(),
    }


def csv_bytes(rows: dict[str, list[str]], newline: str = "\n", bom: bool = False) -> bytes:
    lines = ["query_id,predicted_state", *(f"{q},{s}" for q, s in zip(rows["query_id"], rows["predicted_state"]))]
    return ("\ufeff" if bom else "").encode() + (newline.join(lines) + newline).encode("utf-8")


@pytest.fixture(scope="module")
def files(rows, tmp_path_factory) -> dict[str, Path]:
    """The same predictions in every accepted format."""
    import datasets

    folder = tmp_path_factory.mktemp("formats")
    plain = csv_bytes(rows)
    written = {
        "p.csv": plain,
        "bom-crlf.csv": csv_bytes(rows, "\r\n", bom=True),
        "p.csv.gz": gzip.compress(plain),
        "p.csv.bz2": bz2.compress(plain),
        "misnamed.txt": gzip.compress(plain),  # the magic bytes decide, not the name
    }
    for name, data in written.items():
        (folder / name).write_bytes(data)
    with pa.CompressedOutputStream(str(folder / "p.csv.zst"), "zstd") as stream:
        stream.write(plain)
    dataset = datasets.Dataset.from_dict(rows)
    dataset.to_json(str(folder / "p.jsonl"))
    dataset.to_parquet(str(folder / "p.parquet"))
    labelled = dataset.cast_column("predicted_state", datasets.ClassLabel(names=LABELS))
    labelled.to_parquet(str(folder / "classlabel.parquet"))
    with pa.CompressedOutputStream(str(folder / "p.jsonl.gz"), "gzip") as stream:
        stream.write((folder / "p.jsonl").read_bytes())
    dataset.to_pandas().to_json(folder / "pandas.jsonl", orient="records", lines=True)
    return {p.name: p for p in folder.iterdir()}


def evaluate_cli(snapshot: Path, predictions: str, output: Path, stdin: bytes | None = None):
    return subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "evaluate", "--predictions", predictions]
        + ["--output", str(output)],
        input=stdin,
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )


def test_every_format_gives_byte_identical_score_files(snapshot, files, tmp_path):
    outputs = {}
    for name, path in sorted(files.items()):
        result = evaluate_cli(snapshot, str(path), tmp_path / f"{name}.json")
        assert result.returncode == 0, (name, result.stderr)
        outputs[name] = (tmp_path / f"{name}.json").read_bytes()
    for name, path in (("stdin.csv", files["bom-crlf.csv"]), ("stdin.parquet", files["p.parquet"])):
        result = evaluate_cli(snapshot, "-", tmp_path / f"{name}.json", stdin=path.read_bytes())
        assert result.returncode == 0, (name, result.stderr)
        outputs[name] = (tmp_path / f"{name}.json").read_bytes()
    reference = outputs["p.csv"]
    assert json.loads(reference)["overall"]["correct_three_state"] == 352
    assert {name: data == reference for name, data in outputs.items()} == dict.fromkeys(outputs, True)
    assert len(outputs) == 13


def refused(snapshot: Path, work: Path, data: bytes, name: str) -> str:
    path = work / name
    path.write_bytes(data)
    output = work / "out.json"
    result = evaluate_cli(snapshot, str(path), output)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.decode("utf-8").strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], result.stderr
    assert lines[0].isascii() and lines[0].isprintable() and len(lines[0]) - len(str(path)) < 240, lines[0]
    assert "\\x" not in lines[0]
    assert not output.exists()
    return lines[0]


@pytest.mark.parametrize(
    ("name", "make", "seen"),
    [
        ("utf16.csv", lambda b: b.decode().encode("utf-16"), "is UTF-16 text; accepted: CSV (UTF-8)"),
        ("utf16le.csv", lambda b: b.decode().encode("utf-16-le"), "is UTF-16 text; accepted:"),
        ("utf32.csv", lambda b: b.decode().encode("utf-32"), "is UTF-32 text; accepted:"),
        ("random.csv", lambda b: os.urandom(4096), "is binary data; accepted:"),
        ("random.csv.gz", lambda b: gzip.compress(os.urandom(4096)), "is gzip-compressed binary data; accepted:"),
        ("sheet.xlsx", lambda b: b"PK\x03\x04" + os.urandom(200), "is a ZIP archive (e.g. an .xlsx or .ods"),
        ("semicolons.csv", lambda b: b.replace(b",", b";"), "is separated by ';' (semicolons), not commas"),
        ("tabs.tsv", lambda b: b.replace(b",", b"\t"), "is separated by tabs, not commas"),
        ("array.json", lambda b: b'[{"query_id": "q", "predicted_state": "within_margin"}]', "is a JSON array"),
        ("latin1.csv", lambda b: b + "é\n".encode("latin-1"), "not UTF-8"),
        ("broken.csv.gz", lambda b: gzip.compress(b)[:200], "not valid gzip data"),
        ("fake.parquet", lambda b: b, "is text, although it is named .parquet"),
    ],
)
def test_other_formats_are_refused_in_one_line_without_raw_bytes(snapshot, rows, tmp_path, name, make, seen):
    line = refused(snapshot, tmp_path, make(csv_bytes(rows)), name)
    assert seen in line, line
    assert name in line


def test_json_lines_with_a_number_or_a_missing_key(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"query_id": "q1", "predicted_state": "within_margin"}\n{"query_id": "q2"}\n')
    with pytest.raises(InputError, match=r"p.jsonl: 1 row\(s\) have no predicted_state"):
        read_prediction_file(path, ("query_id", "predicted_state"))
    path.write_text('{"query_id": "q1", "predicted_state": "within_margin", "confidence": 0.9}\n')
    with pytest.raises(InputError, match=r"must have exactly the columns query_id,predicted_state \(found "):
        read_prediction_file(path, ("query_id", "predicted_state"))
    path.write_text('{"query_id": "q1", "predicted_state": ["within_margin"]}\n')
    with pytest.raises(InputError, match="column predicted_state holds list<item: string> values"):
        read_prediction_file(path, ("query_id", "predicted_state"))


def test_parquet_columns_are_read_as_text(tmp_path):
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "predicted_state": pa.array(["within_margin", "memory_failure"]).dictionary_encode(),  # pandas category
            "query_id": pa.array(["a", "b"], pa.large_string()),
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")
    ids, states = read_predictions(tmp_path / "p.parquet")
    assert ids.to_pylist() == ["a", "b"] and states.to_pylist() == ["within_margin", "memory_failure"]
    pq.write_table(table.set_column(1, "query_id", pa.array([None, "b"], pa.string())), tmp_path / "p.parquet")
    with pytest.raises(InputError, match=r"1 row\(s\) have no query_id"):
        read_predictions(tmp_path / "p.parquet")
    pq.write_table(table.select(["query_id"]), tmp_path / "p.parquet")
    with pytest.raises(InputError, match="missing predicted_state"):
        read_predictions(tmp_path / "p.parquet")


def test_followup_predictions_in_other_formats_score_like_csv(snapshot, tmp_path):
    import datasets

    ids = [r["configuration_id"] for r in study_rows("larger_model", snapshot)]
    states = ["within_margin" if "4gpu" in c else "memory_failure" for c in ids]
    peaks = [None if i % 2 else 40000.5 for i in range(len(ids))]
    csv = "configuration_id,predicted_state,predicted_peak_mib\n" + "".join(
        f"{c},{s},{'' if p is None else p}\n" for c, s, p in zip(ids, states, peaks)
    )
    (tmp_path / "p.csv").write_text(csv)
    dataset = datasets.Dataset.from_dict(
        {"configuration_id": ids, "predicted_state": states, "predicted_peak_mib": peaks}
    )
    dataset.to_json(str(tmp_path / "p.jsonl"))
    dataset.to_parquet(str(tmp_path / "p.parquet"))
    (tmp_path / "p.csv.zst").write_bytes(b"")
    with pa.CompressedOutputStream(str(tmp_path / "p.csv.zst"), "zstd") as stream:
        stream.write(csv.encode())
    expected = score_study("larger_model", snapshot, predictions=tmp_path / "p.csv")
    assert expected["resolved_subset_metrics"][USER_METHOD]["correct_three_state"] == 4
    for name in ("p.jsonl", "p.parquet", "p.csv.zst"):
        assert score_study("larger_model", snapshot, predictions=tmp_path / name) == expected, name


def test_followup_predictions_from_standard_input(snapshot, tmp_path):
    ids = [r["configuration_id"] for r in study_rows("larger_model", snapshot)]
    csv = "configuration_id,predicted_state\n" + "".join(f"{c},within_margin\n" for c in ids)
    result = subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "followup", "score"]
        + ["--study", "larger_model", "--predictions", "-", "--output", str(tmp_path / "s.json")],
        input=gzip.compress(csv.encode()),
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["approvals"][USER_METHOD]["full_panel_approved_configurations"] == 12
    bad = subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "followup", "score"]
        + ["--study", "larger_model", "--predictions", "-"],
        input=csv.replace("within_margin", "Within_Margin").encode(),
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert bad.returncode == 2 and b"predictions from standard input" in bad.stderr

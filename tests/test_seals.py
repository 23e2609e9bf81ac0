"""The release's seals against the real data: every recorded digest is declared and checked, a changed sealed
file is one line naming the seal, the file and both digests in `verify`, `estimate prospective` and `followup
score`, and a sealed file the release does not carry is "listed but absent"."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from rlvrambench_hf.data.schema.seals import SEALS
from rlvrambench_hf.data.sealed import ABSENT, DIFFERS, MATCHES, check_seals, seal_findings
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.errors import IntegrityError

from conftest import invoke
from test_release_diff import failed_checks, writable_copy

PREDICTIONS = "benchmark/estimation/predictions.json"
FREEZE = "benchmark/estimation/prediction_freeze.json"
HOST_PREDICTIONS = "benchmark/host_capacity/predictions.json"
STUDY_FREEZE = "benchmark/host_capacity/study_freeze.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_digest_of_a_release_file_recorded_in_a_json_is_checked_by_a_declared_seal(snapshot):
    """Independently: every 64-hex string of every JSON that is the SHA-256 of a release file, except the manifests
    (checked as manifests), is covered by a finding of the declared seals."""
    files = {sha256(p): p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()}
    manifests = {"benchmark/manifest.json", "benchmark/decision/results/manifest.json"}
    manifests.add("benchmark/estimation/results/output_manifest.json")
    recorded = set()
    for path in snapshot.rglob("*.json"):
        rel = path.relative_to(snapshot).as_posix()
        for digest in set(re.findall(r"[0-9a-f]{64}", path.read_text())):
            if digest in files and rel not in manifests:
                recorded.add((rel, files[digest]))
    checked = {(f.seal, f.file) for f in seal_findings(open_source(snapshot)) if f.status == MATCHES}
    assert recorded <= checked
    assert {seal for seal, _ in recorded} == set(SEALS)


def test_the_published_release_matches_its_seals(snapshot):
    findings = seal_findings(open_source(snapshot))
    assert {f.status for f in findings} == {MATCHES, ABSENT}
    outputs = {(f.seal, f.file): f.status for f in findings if f.outputs}
    assert outputs == {
        (FREEZE, "benchmark/estimation/fitted_model.json"): ABSENT,
        (FREEZE, PREDICTIONS): MATCHES,
        (FREEZE, "benchmark/estimation/retrospective.json"): ABSENT,
        (STUDY_FREEZE, "benchmark/host_capacity/matrix.csv"): MATCHES,
        (STUDY_FREEZE, HOST_PREDICTIONS): MATCHES,
        (STUDY_FREEZE, "benchmark/host_capacity/targets.csv"): MATCHES,
    }
    absent = {f.file for f in findings if f.status == ABSENT}
    assert "memory_tuner/estimation_baselines.py" in absent and "data/gsm8k/train.parquet" in absent
    r = invoke("--source", str(snapshot), "verify")
    assert r.returncode == 0
    listed = [line for line in r.stdout.splitlines() if line.startswith("seal") and " absent " in line]
    assert listed and all("listed by the seal but absent from this revision" in line for line in listed)


@pytest.fixture
def one_byte_more(snapshot, tmp_path) -> tuple[Path, str, str]:
    """A copy of the release with one byte added to the estimator comparison's sealed predictions.json."""
    release = writable_copy(snapshot, tmp_path / "release")
    path = release / PREDICTIONS
    expected = sha256(path)
    path.write_bytes(path.read_bytes() + b"\n")
    return release, expected, sha256(path)


def test_one_byte_added_to_predictions_fails_estimate_prospective_naming_the_seal(one_byte_more, tmp_path):
    release, expected, found = one_byte_more
    out = tmp_path / "p.json"
    r = invoke("--source", str(release), "estimate", "prospective", "--output", str(out))
    assert r.returncode == 2 and not out.exists()
    (line,) = r.stderr.strip().splitlines()
    assert f"seal {FREEZE}: {PREDICTIONS} has SHA-256 {found}, sealed as {expected}" in line


def test_one_byte_added_to_predictions_fails_verify_and_followup_score_naming_the_seal(one_byte_more):
    release, expected, found = one_byte_more
    r = invoke("--source", str(release), "verify")
    assert r.returncode == 2
    (row,) = failed_checks(r.stdout)
    assert row[:3] == ["seal", f"{FREEZE}: {PREDICTIONS}", "failed"]
    assert row[3] == f"seal {FREEZE}: {PREDICTIONS} has SHA-256 {found}, sealed as {expected}"
    assert r.stderr.strip().splitlines() == [f"rlvrambench: error: verification failed: {row[3]}"]  # alone, whole
    r = invoke("--source", str(release), "followup", "score", "--study", "larger_model")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"seal {FREEZE}: {PREDICTIONS} has SHA-256 {found}, sealed as {expected}" in r.stderr
    assert invoke("--source", str(release), "followup", "score", "--study", "expanded_host").returncode == 0


def test_the_expanded_host_study_is_scored_under_its_own_freeze(snapshot, tmp_path):
    release = writable_copy(snapshot, tmp_path / "release")
    path = release / HOST_PREDICTIONS
    expected = sha256(path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data, indent=1))  # same content, other bytes: still not the sealed file
    with pytest.raises(IntegrityError, match=f"seal {STUDY_FREEZE}: {HOST_PREDICTIONS} has SHA-256 [0-9a-f]{{64}}, "):
        check_seals(open_source(release), [STUDY_FREEZE])
    r = invoke("--source", str(release), "followup", "score", "--study", "expanded_host")
    assert r.returncode == 2 and f"sealed as {expected}" in r.stderr


def test_a_sealed_file_removed_is_listed_but_absent_not_corrupted(snapshot, tmp_path):
    release = writable_copy(snapshot, tmp_path / "release")
    (release / HOST_PREDICTIONS).unlink()
    findings = {(f.seal, f.file): f for f in check_seals(open_source(release), [STUDY_FREEZE])}
    assert findings[STUDY_FREEZE, HOST_PREDICTIONS].status == ABSENT
    assert DIFFERS not in {f.status for f in findings.values()}

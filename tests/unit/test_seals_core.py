"""The seals of the mini release checked by the package: every declared seal holds, a byte changed in a sealed file
is one line naming the seal, the file and both digests (in ``check_seals``, ``verify``, the estimator comparison and
the follow-up study scored under that seal), a removed file is listed but absent, and a seal that cannot be read
says what is wrong with it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rlvrambench_hf.cli import main
from rlvrambench_hf.data.schema.seals import ESTIMATION_SEALS, SEALS, SEALS_OF_CONFIG, get_seal
from rlvrambench_hf.data.sealed import ABSENT, DIFFERS, MATCHES, UNREADABLE, check_seals, seal_findings
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.verify import FAILED, verify_source
from rlvrambench_hf.errors import IntegrityError, UnknownConfigError
from rlvrambench_hf.estimation.api import AMENDMENT, PROTOCOL, load_inputs
from rlvrambench_hf.followup.api import score_study

pytestmark = pytest.mark.unit

FREEZE = "benchmark/estimation/prediction_freeze.json"
STUDY_FREEZE, HOST_PROTOCOL = "benchmark/host_capacity/study_freeze.json", "benchmark/host_capacity/protocol.json"
HOST_PREDICTIONS = "benchmark/host_capacity/predictions.json"  # in no manifest: only the study freeze guards it
TARGETS = "benchmark/estimation/targets.csv"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_byte_more(root: Path, relpath: str) -> tuple[str, str]:
    """Append a newline to a file; its digest before and after."""
    path = root / relpath
    before = sha256(path)
    path.write_bytes(path.read_bytes() + b"\n")
    return before, sha256(path)


def test_every_declared_seal_holds_on_the_mini_release(shared_mini):
    findings = seal_findings(open_source(shared_mini.root))
    assert {f.seal for f in findings} == set(SEALS) and {f.status for f in findings} == {MATCHES, ABSENT}
    outputs = {(f.seal, f.file): f.status for f in findings if f.outputs}
    assert outputs == {
        (FREEZE, "benchmark/estimation/fitted_model.json"): ABSENT,
        (FREEZE, "benchmark/estimation/predictions.json"): ABSENT,
        (FREEZE, "benchmark/estimation/retrospective.json"): ABSENT,
        (STUDY_FREEZE, "benchmark/host_capacity/matrix.csv"): MATCHES,
        (STUDY_FREEZE, HOST_PREDICTIONS): MATCHES,
        (STUDY_FREEZE, "benchmark/host_capacity/targets.csv"): MATCHES,
    }
    chained = {(f.seal, f.file) for f in findings if f.file in SEALS}  # seals that record other seals
    assert chained == {
        (AMENDMENT, PROTOCOL),
        (FREEZE, PROTOCOL),
        (FREEZE, AMENDMENT),
        (HOST_PROTOCOL, FREEZE),
        (HOST_PROTOCOL, PROTOCOL),
        (STUDY_FREEZE, HOST_PROTOCOL),
        (STUDY_FREEZE, FREEZE),
        ("benchmark/decision/amendment-01.json", "benchmark/decision/protocol.json"),
        ("benchmark/decision/submission.json", "benchmark/decision/protocol.json"),
        ("benchmark/decision/results/collection_summary.json", "benchmark/decision/protocol.json"),
    }
    assert check_seals(open_source(shared_mini.root)) == findings


def test_a_byte_changed_in_a_sealed_file_is_one_line_naming_the_seal_the_file_and_both_digests(mini):
    expected, found = one_byte_more(mini.root, HOST_PREDICTIONS)
    source = open_source(mini.root)
    with pytest.raises(IntegrityError) as caught:
        check_seals(source, [STUDY_FREEZE])
    line = f"seal {STUDY_FREEZE}: {HOST_PREDICTIONS} has SHA-256 {found}, sealed as {expected}"
    assert str(caught.value) == line and caught.value.path == HOST_PREDICTIONS
    (failed,) = [c for c in verify_source(source) if c.status == FAILED]  # the file is in no manifest
    assert (failed.kind, failed.subject, failed.detail) == ("seal", f"{STUDY_FREEZE}: {HOST_PREDICTIONS}", line)


def test_verify_exits_2_with_the_seal_line_alone(mini, capsys):
    expected, found = one_byte_more(mini.root, HOST_PREDICTIONS)
    assert main(["--source", str(mini.root), "verify"]) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert error == (  # both digests whole: the check's subject is left out, the seal line names it
        f"rlvrambench: error: verification failed: seal {STUDY_FREEZE}: {HOST_PREDICTIONS} has SHA-256 {found}, "
        f"sealed as {expected}"
    )


def test_each_follow_up_study_is_scored_under_its_own_seals(mini):
    assert SEALS_OF_CONFIG["expanded_host_configurations"] == (STUDY_FREEZE, HOST_PROTOCOL)
    one_byte_more(mini.root, HOST_PREDICTIONS)
    with pytest.raises(IntegrityError, match=f"^seal {STUDY_FREEZE}: {HOST_PREDICTIONS} has SHA-256 "):
        score_study("expanded_host", mini.root)
    assert score_study("larger_model", mini.root)["planned_configurations"] == 4  # its freeze does not record it


def test_a_sealed_input_changed_stops_the_comparison_and_the_larger_model_study(mini):
    expected, found = one_byte_more(mini.root, TARGETS)
    with pytest.raises(IntegrityError, match=f"^seal {PROTOCOL}: {TARGETS} has SHA-256 {found}, sealed as "):
        load_inputs(mini.root)
    with pytest.raises(IntegrityError, match=f"^seal {FREEZE}: {TARGETS} has SHA-256 {found}, sealed as "):
        score_study("larger_model", mini.root)  # the prediction freeze records the inputs it was computed from
    assert score_study("expanded_host", mini.root)["planned_configurations"] == 3
    differing = [f for f in seal_findings(open_source(mini.root), ESTIMATION_SEALS) if f.status == DIFFERS]
    assert [(f.seal, f.expected, f.found) for f in differing] == [
        (PROTOCOL, expected, found),
        (AMENDMENT, expected, found),
        (FREEZE, expected, found),
    ]


def test_an_edited_protocol_breaks_every_seal_that_records_it(mini):
    path = mini.root / PROTOCOL
    path.write_text(path.read_text().replace("estimation-1.0", "estimation-1.1"))
    differing = {f.seal for f in seal_findings(open_source(mini.root)) if f.status == DIFFERS}
    assert differing == {AMENDMENT, FREEZE, HOST_PROTOCOL}


def test_a_removed_sealed_file_is_listed_but_absent_not_corrupted(mini):
    (mini.root / HOST_PREDICTIONS).unlink()
    findings = {f.file: f for f in check_seals(open_source(mini.root), [STUDY_FREEZE])}
    assert findings[HOST_PREDICTIONS].status == ABSENT and findings[HOST_PREDICTIONS].found is None
    assert (
        findings[HOST_PREDICTIONS].message
        == f"seal {STUDY_FREEZE}: {HOST_PREDICTIONS} is listed but absent from this revision"
    )
    assert DIFFERS not in {f.status for f in findings.values()}


def test_a_seal_the_revision_lacks_seals_nothing(mini):
    (mini.root / STUDY_FREEZE).unlink()
    findings = seal_findings(open_source(mini.root))
    assert STUDY_FREEZE not in {f.seal for f in findings} and HOST_PROTOCOL in {f.seal for f in findings}
    assert score_study("expanded_host", mini.root)["planned_configurations"] == 3


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d.update(files_sha256="abc"), "member 'files_sha256' is not a mapping of file names to SHA-256"),
        (
            lambda d: d["files_sha256"].update({"matrix.csv": "not-a-digest"}),
            "member 'files_sha256' records 'not-a-digest' for 'matrix.csv', not a SHA-256 digest",
        ),
        (lambda d: d.update(protocol_sha256=7), "member 'protocol_sha256' records 7 for"),
    ],
)
def test_a_seal_that_cannot_be_read_says_what_is_wrong(mini, edit, problem):
    path = mini.root / STUDY_FREEZE
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    (unreadable,) = [f for f in seal_findings(open_source(mini.root), [STUDY_FREEZE]) if f.status == UNREADABLE]
    assert unreadable.message.startswith(f"seal {STUDY_FREEZE}: {problem}")
    with pytest.raises(IntegrityError, match=f"^seal {STUDY_FREEZE}: {problem}"):
        check_seals(open_source(mini.root), [STUDY_FREEZE])


def test_a_seal_that_is_not_a_json_object_is_refused(mini):
    (mini.root / STUDY_FREEZE).write_text("[1, 2]")
    (finding,) = seal_findings(open_source(mini.root), [STUDY_FREEZE])
    assert (finding.status, finding.message) == (UNREADABLE, f"seal {STUDY_FREEZE}: not a JSON object")


def test_seals_are_declared_once_by_path():
    assert get_seal(FREEZE).digests[0].outputs and get_seal(FREEZE).digests[0].folder == "benchmark/estimation"
    with pytest.raises(UnknownConfigError, match="^no seal 'x.json'; seals: benchmark/estimation/prediction_freeze"):
        get_seal("x.json")

"""`release diff` on copies of the real release: every table compared, the changes that move the metrics first,
exit status 1 when anything differs; and the cross-table checks of `verify` and `release verify` for the same edit.

The expected queries are found here with the csv module, independently of the package's relations.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.release.diff import diff_releases
from rlvrambench_hf.release.verify import verify_release

from conftest import invoke

OUTCOMES, RESULTS = "benchmark/outcomes.csv", "benchmark/configuration_results.csv"
TRANSFER = "benchmark/transfer_configurations.csv"  # repeats the labels; no seal records its digest


def writable_copy(snapshot: Path, dest: Path) -> Path:
    shutil.copytree(snapshot, dest)
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def queries_targeting(snapshot: Path) -> dict[str, list[tuple[str, str]]]:
    """Target configuration → its (query, task) pairs, read with the csv module."""
    out: dict[str, list[tuple[str, str]]] = {}
    with open(snapshot / "benchmark" / "queries.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            out.setdefault(row["target_configuration_id"], []).append((row["query_id"], row["task_id"]))
    return out


def relabel(release: Path, relpath: str, configuration: str, old: str, new: str) -> None:
    """Change one configuration's observed_state in ``relpath`` and record the file's new digest in its manifest."""
    path = release / relpath
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    state, key = rows[0].index("observed_state"), rows[0].index("configuration_id")
    (row,) = [r for r in rows[1:] if r[key] == configuration]
    assert row[state] == old
    row[state] = new
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    manifest = release / "benchmark" / "manifest.json"
    data = json.loads(manifest.read_text())
    content = path.read_bytes()
    data["files"][Path(relpath).name] = {"sha256": hashlib.sha256(content).hexdigest(), "size_bytes": len(content)}
    manifest.write_text(json.dumps(data, indent=2) + "\n")


def donors(snapshot: Path) -> dict[str, str]:
    """Donor configuration → an admission candidate it is the donor of (from the protocol, with the json module)."""
    protocol = json.loads((snapshot / "benchmark" / "decision" / "protocol.json").read_text())
    return {d["configuration_id"]: c for case in protocol["cases"] for c, d in case["donors"].items()}


def within_margin_targets(snapshot: Path) -> list[str]:
    """Within-margin transfer targets, the most asked about first."""
    with open(snapshot / OUTCOMES, newline="", encoding="utf-8") as handle:
        within = {r["configuration_id"] for r in csv.DictReader(handle) if r["observed_state"] == "within_margin"}
    by_target = queries_targeting(snapshot)
    return sorted(within & set(by_target), key=lambda c: (-len(by_target[c]), c))


@pytest.fixture(scope="module")
def target(snapshot: Path) -> tuple[str, list[tuple[str, str]]]:
    """A within-margin transfer target that several queries ask about and no admission candidate has as donor."""
    configuration = next(c for c in within_margin_targets(snapshot) if c not in donors(snapshot))
    return configuration, queries_targeting(snapshot)[configuration]


def failed_checks(stdout: str) -> list[list[str]]:
    """The failed rows of `verify`'s table, as cells."""
    rows = [re.split(r"\s{2,}", line) for line in stdout.splitlines()]
    return [r for r in rows if len(r) >= 3 and r[2] == "failed"]


@pytest.fixture(scope="module")
def relabelled(snapshot: Path, tmp_path_factory, target) -> Path:
    """A copy of the release where one transfer target's label moves to memory_failure in outcomes.csv only."""
    release = writable_copy(snapshot, tmp_path_factory.mktemp("diff") / "relabelled")
    relabel(release, OUTCOMES, target[0], "within_margin", "memory_failure")
    return release


def test_one_label_edited_in_outcomes_names_the_configuration_and_the_queries_it_touches(snapshot, relabelled, target):
    configuration, queries = target
    r = invoke("release", "diff", str(snapshot), str(relabelled))
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    headline = next(line for line in lines if line.startswith("what moves the metrics: "))
    tasks = {task for _, task in queries}
    assert f"transfer labels change for {len(queries)} queries in {len(tasks)} task" in headline
    assert "1 configuration changed label" in headline and "admission unaffected" in headline
    (row,) = [line.split() for line in lines if line.startswith(configuration)]
    assert row == [configuration, "label", "outcomes.observed_state", "within_margin", "memory_failure", "outcomes"]
    (listed,) = [line for line in lines if line.startswith("transfer queries whose target label changed")]
    assert sorted(listed.split(": ", 1)[1].split("; ")) == sorted(q for q, _ in queries)

    r = invoke("release", "diff", str(snapshot), str(relabelled), "--json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["changed"] is True
    impact = report["impact"]
    assert impact["configurations"] == [
        {
            "configuration_id": configuration,
            "kind": "label",
            "origin": "outcomes.observed_state",
            "old": "within_margin",
            "new": "memory_failure",
            "tables": ["outcomes"],
        }
    ]
    assert impact["transfer"]["label_queries"] == sorted(q for q, _ in queries)
    assert impact["transfer"]["label_tasks"] == sorted(tasks)
    assert impact["admission"]["candidates"] == []
    assert impact["estimation"]["folds"] == ["granite33", "phi4", "qwen25"]  # a pool configuration: every fold
    changed = {c["config"]: c for c in report["configs"] if c["status"] == "changed"}
    assert list(changed) == ["outcomes"]  # a supporting table: compared too
    assert {c["config"] for c in report["configs"]} == set(REGISTRY)


def test_verify_lists_the_tables_that_repeat_an_edited_label_and_the_seals_of_its_file(relabelled, target):
    r = invoke("--source", str(relabelled), "verify")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    failed = failed_checks(r.stdout)
    relations = sorted(row[1] for row in failed if row[0] == "relation")
    assert relations == [
        "all_configurations copies 13 columns from outcomes (by configuration_id)",
        "transfer_configurations copies 13 columns from outcomes (by configuration_id)",
    ]
    seals = [row for row in failed if row[0] == "seal"]  # the estimation seals record outcomes.csv's digest
    assert {row[1].split(": ")[0] for row in seals} == {
        "benchmark/estimation/protocol.json",
        "benchmark/estimation/amendment-01.json",
        "benchmark/estimation/prediction_freeze.json",
    }
    assert all(f"{OUTCOMES} has SHA-256" in row[3] and "sealed as af05cd91" in row[3] for row in seals)
    assert len(failed) == len(relations) + len(seals)


def test_the_same_edit_in_only_one_table_that_repeats_it_fails_verify_in_one_line(snapshot, tmp_path, target):
    release = writable_copy(snapshot, tmp_path / "one-copy")
    relabel(release, TRANSFER, target[0], "within_margin", "memory_failure")
    r = invoke("--source", str(release), "verify")
    assert r.returncode == 2
    (error,) = r.stderr.strip().splitlines()
    assert error == (  # the detail names table, column, key and both values; the relation's long name is left out
        f"rlvrambench: error: verification failed: transfer_configurations ({TRANSFER}), row "
        f"configuration_id={target[0]!r}: has observed_state 'memory_failure', but outcomes "
        "(benchmark/outcomes.csv) has observed_state 'within_margin'"
    )
    assert len(failed_checks(r.stdout)) == 1


def test_a_donor_label_change_touches_its_admission_candidate(snapshot, tmp_path):
    configuration, candidate = next((c, d) for c, d in donors(snapshot).items() if c in within_margin_targets(snapshot))
    release = writable_copy(snapshot, tmp_path / "donor")
    relabel(release, OUTCOMES, configuration, "within_margin", "above_margin")
    impact = diff_releases(open_source(snapshot), open_source(release)).impact
    assert candidate in impact.admission["donor_changed"] and impact.admission["records_changed"] == []
    assert "admission: " in impact.headline() and "admission unaffected" not in impact.headline()


def test_an_edit_of_a_copy_alone_is_reported_as_the_copy(snapshot, tmp_path, target):
    release = writable_copy(snapshot, tmp_path / "copy-only")
    relabel(release, RESULTS, target[0], "within_margin", "memory_failure")
    result = diff_releases(open_source(snapshot), open_source(release))
    (entry,) = result.impact.configurations
    assert (entry["origin"], entry["tables"]) == ("outcomes.observed_state", ["all_configurations"])
    assert result.impact.transfer["label_queries"] == []  # the transfer metric reads outcomes.csv, unchanged
    assert "transfer unaffected" in result.impact.headline()


def test_release_verify_checks_the_relations_of_a_built_release(snapshot, tmp_path, target):
    from rlvrambench_hf.release.build import build_release

    built = build_release(tmp_path / "built", "1.1.0", snapshot).folder
    assert verify_release(built, croissant=False).problems == []
    relabel(built, RESULTS, target[0], "within_margin", "memory_failure")
    record = json.loads((built / "release.json").read_text())
    content = (built / RESULTS).read_bytes()
    record["files"][RESULTS] = {"sha256": hashlib.sha256(content).hexdigest(), "size_bytes": len(content)}
    (built / "release.json").write_text(json.dumps(record, indent=2))
    problems = verify_release(built, croissant=False).problems
    relation = [p for p in problems if p.startswith("all_configurations copies 13 columns from outcomes")]
    assert len(relation) == 1 and target[0] in relation[0] and "'memory_failure'" in relation[0]


def test_identical_releases_exit_0(snapshot):
    r = invoke("release", "diff", str(snapshot), str(snapshot))
    assert r.returncode == 0 and r.stdout.rstrip().endswith("no differences")

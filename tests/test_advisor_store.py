"""The advisor's store: the release context built once and read back by later runs, keyed by the release.

A warm store answers exactly as a fresh build (the JSON answer of every target, byte for byte) without building; an
entry is rebuilt when a file the context was read from changes, appears or goes away, when it is corrupted (a
flipped byte, a truncated file, another kind, a payload naming anything but the package's classes, numpy and
pyarrow), or when it is another user's; a store that cannot be written costs a rebuild, never an error; and a
corrupted release file is refused exactly as without the store. The release's measured workloads and levels are
kept alike, and VERL's packaged trainer config parsed once per content: a changed config is parsed again, never
served stale.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import Plans, advise, store
from rlvrambench_hf.advisor.assess import context as context_module
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import IntegrityError

from conftest import cli_env, run_cli


def as_command(call, *args):
    """``call(*args)`` as a command of the command line runs it: what it keeps is written when it succeeds (a Python
    call outside a command keeps nothing)."""
    from rlvrambench_hf.data.tables.kept import written_on_success

    with written_on_success():
        return call(*args)


@pytest.fixture
def entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty store folder of this test."""
    folder = tmp_path / "store"
    folder.mkdir()
    monkeypatch.setattr(store, "folder", lambda: folder)
    return folder


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The sources the context was built from (not read from the store) in this test."""
    built: list[object] = []
    real = context_module.build_context

    def counted(source):
        built.append(source)
        return real(source)

    monkeypatch.setattr(context_module, "build_context", counted)
    return built


@pytest.fixture
def release(tmp_path: Path, snapshot: Path) -> Path:
    """A writable copy of the release."""
    copy = tmp_path / "release"
    shutil.copytree(snapshot, copy, copy_function=shutil.copyfile)
    return copy


def answers(source: Path, context: object) -> str:
    plans = load_table("estimation_targets", source, decode=True)
    return json.dumps(document(advise(Plans(plans, ["targets.csv"] * plans.num_rows), context=context)))


def the_entry(folder: Path) -> Path:
    (entry,) = folder.glob("context-*")
    return entry


def test_a_warm_store_answers_as_a_fresh_build_without_building(snapshot, entries, builds) -> None:
    fresh = context_module.load_context(snapshot, stored=False)
    first = context_module.load_context(snapshot)  # built and stored
    assert len(builds) == 2 and the_entry(entries).stat().st_size > 100_000
    second = context_module.load_context(snapshot)  # read back
    assert len(builds) == 2, "the stored context was not used"
    assert answers(snapshot, fresh) == answers(snapshot, first) == answers(snapshot, second)
    assert second.inputs.source.identity == fresh.inputs.source.identity  # the live source, not a stored copy
    header = the_entry(entries).read_bytes().split(b"\n")[1]
    files = json.loads(header)["files"]
    assert files["benchmark/stage_measurements.csv"] and files["benchmark/manifest.json"]  # the key reads them
    assert (
        "benchmark/estimation/retrospective.json" in files and files["benchmark/estimation/retrospective.json"] is None
    )


@pytest.mark.parametrize(
    "damage",
    [
        "flipped byte",
        "truncated",
        "another kind",
        "header not JSON",
        "foreign payload",
        "another user's",
        "writable by others",
    ],
)
def test_a_damaged_or_foreign_entry_is_never_trusted_and_is_rewritten(
    snapshot, entries, builds, tmp_path, damage
) -> None:
    context_module.load_context(snapshot)
    entry = the_entry(entries)
    data = entry.read_bytes()
    head, header, payload = data.split(b"\n", 2)
    witness = tmp_path / "ran"
    if damage == "flipped byte":
        middle = len(payload) // 2
        flipped = payload[:middle] + bytes([payload[middle] ^ 1]) + payload[middle + 1 :]
        entry.write_bytes(b"\n".join([head, header, flipped]))
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "another kind":
        entry.write_bytes(data.replace(b"store context", b"store fit", 1))
    elif damage == "header not JSON":
        entry.write_bytes(b"\n".join([head, b"{not json", payload]))
    elif damage == "foreign payload":  # a payload that would run code, with a matching digest: refused, never run
        evil = pickle.dumps(_Runs(str(witness)), protocol=5)
        fields = json.loads(header)
        store.write_entry(entry.name, "context", {k: v for k, v in fields.items() if k != "payload_sha256"}, evil)
    elif damage == "writable by others":
        entry.chmod(0o666)
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(entry, os.geteuid() + 1, -1)
    context_module.load_context(snapshot)
    assert len(builds) == 2 and not witness.exists(), "a damaged entry was used"
    assert store.read_entry(entry.name, "context") is not None  # rewritten whole, as this user's file
    assert the_entry(entries).stat().st_uid == os.geteuid() and the_entry(entries).stat().st_mode & 0o777 == 0o644
    context_module.load_context(snapshot)
    assert len(builds) == 2


class _Runs:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_changed_release_file_is_read_afresh_and_corruption_is_refused_as_without_the_store(
    release, entries, builds
) -> None:
    context_module.load_context(release)
    stages = release / "benchmark" / "stage_measurements.csv"
    stages.write_bytes(stages.read_bytes())  # rewritten with the same bytes: its times moved, its digest did not
    context_module.load_context(release)
    assert len(builds) == 1
    card = release / "README.md"
    card.write_text(card.read_text() + "\n")  # a file the context read changed: built again
    context_module.load_context(release)
    context_module.load_context(release)
    assert len(builds) == 2
    sealed = release / "benchmark.py"  # absent when stored; a seal records its digest
    sealed.write_text("")
    with pytest.raises(IntegrityError, match="benchmark.py"):
        context_module.load_context(release)
    sealed.unlink()
    context_module.load_context(release)
    assert len(builds) == 3
    stages.write_bytes(stages.read_bytes().replace(b"rollout", b"rollouT", 1))  # no longer its published digest
    with pytest.raises(IntegrityError, match="stage_measurements.csv does not match its published SHA-256"):
        context_module.load_context(release)


def test_a_store_that_cannot_be_written_costs_a_rebuild_not_an_error(snapshot, tmp_path, monkeypatch, builds) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(store, "folder", lambda: blocker / "store")  # under a file: nothing can be created
    fresh = context_module.load_context(snapshot, stored=False)
    assert answers(snapshot, context_module.load_context(snapshot)) == answers(snapshot, fresh)
    context_module.load_context(snapshot)
    assert len(builds) == 3


def test_the_command_line_keeps_the_store_under_hf_home_and_answers_alike(snapshot, tmp_path) -> None:
    home = tmp_path / "hf"
    argv = ["--source", str(snapshot), "advise", "--planned", str(snapshot / "benchmark/estimation/targets.csv")]
    outputs = []
    for run in range(2):  # built and stored, then read back (damaged entries: the tests above)
        output = tmp_path / f"answer-{run}.json"
        result = run_cli(*argv, "--output", str(output), env=cli_env(HF_HOME=str(home)))
        assert result.returncode == 0, result.stderr
        outputs.append(output.read_text())
        folder = home / "assets" / "rlvrambench_hf" / "advisor" / "default"
        assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["context", "fit", "measured"]
    assert outputs[0] == outputs[1]
    unwritable = tmp_path / "file"
    unwritable.write_text("")
    result = run_cli(*argv, env=cli_env(HF_HOME=str(unwritable / "hf")))
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_measured_levels_are_stored_and_read_afresh_when_a_file_they_were_read_from_changes(
    release, entries, monkeypatch
) -> None:
    from rlvrambench_hf.advisor.read import measured as measured_module
    from rlvrambench_hf.data.sources.resolve import open_source

    built: list[object] = []
    real = measured_module._measured
    monkeypatch.setattr(measured_module, "_measured", lambda source: built.append(source) or real(source))
    fresh = real(open_source(release))
    first = as_command(measured_module.load_measured, release)
    (entry,) = entries.glob("measured-*")
    second = as_command(measured_module.load_measured, release)
    assert len(built) == 1, "the stored levels were not used"
    for found in (first, second):
        assert (found.workloads, found.legacy, found.models, found.families) == (
            fresh.workloads, fresh.legacy, fresh.models, fresh.families
        )  # fmt: skip
        assert found.levels.equals(fresh.levels) and found.levels.num_rows > 0
    data = entry.read_bytes()
    head, header, payload = data.split(b"\n", 2)
    middle = len(payload) // 2
    flipped = payload[:middle] + bytes([payload[middle] ^ 1]) + payload[middle + 1 :]
    entry.write_bytes(b"\n".join([head, header, flipped]))
    as_command(measured_module.load_measured, release)
    assert len(built) == 2, "a damaged entry was used"
    configurations = release / "benchmark" / "configurations.csv"
    configurations.write_bytes(configurations.read_bytes())  # the same bytes: still the stored levels
    as_command(measured_module.load_measured, release)
    assert len(built) == 2
    card = release / "README.md"
    card.write_text(card.read_text() + "\n")
    as_command(measured_module.load_measured, release)
    assert len(built) == 3
    configurations.write_bytes(configurations.read_bytes().replace(b"gsm8k", b"gsm8K", 1))
    with pytest.raises(IntegrityError, match="configurations.csv does not match its published SHA-256"):
        as_command(measured_module.load_measured, release)


PACKAGED = "verl/trainer/config/_generated_ppo_trainer.yaml"


def test_verl_packaged_config_is_parsed_once_per_content_and_never_served_stale(entries, tmp_path, monkeypatch) -> None:
    from rlvrambench_hf.advisor.read.verl import config

    site = tmp_path / "site"
    packaged = site / PACKAGED
    packaged.parent.mkdir(parents=True)
    (site / "verl" / "__init__.py").write_text('raise ImportError("never imported")\n')
    packaged.write_text("defaults:\n  - actor\ndata:\n  max_prompt_length: 512\n  train_batch_size: 1024\n")
    monkeypatch.syspath_prepend(str(site))
    parsed: list[str] = []
    real = config.parse_structured
    monkeypatch.setattr(config, "parse_structured", lambda text, *rest: parsed.append(text) or real(text, *rest))
    expected = ({"data": {"max_prompt_length": 512, "train_batch_size": 1024}}, str(packaged))
    assert as_command(config.installed_defaults) == expected
    assert as_command(config.installed_defaults) == expected and len(parsed) == 1, "the stored tree was not used"
    (entry,) = entries.glob("verl-config-*")
    packaged.write_text(packaged.read_text().replace("512", "768"))  # the same size: its content decides
    changed = as_command(config.installed_defaults)
    assert changed is not None and changed[0]["data"]["max_prompt_length"] == 768 and len(parsed) == 2
    head, header, _ = entry.read_bytes().split(b"\n", 2)
    witness = tmp_path / "ran"
    fields = json.loads(header)
    evil = pickle.dumps(_Runs(str(witness)), protocol=5)  # a payload that would run code, with a matching digest
    store.write_entry(entry.name, "verl-config", {k: v for k, v in fields.items() if k != "payload_sha256"}, evil)
    packaged.write_text(packaged.read_text().replace("768", "512"))
    assert as_command(config.installed_defaults) == expected and len(parsed) == 3 and not witness.exists()
    assert as_command(config.installed_defaults) == expected and len(parsed) == 3  # rewritten whole, and read back


def test_the_installed_verl_version_is_kept_while_the_places_it_is_looked_for_are_unchanged(
    entries, tmp_path, monkeypatch
) -> None:
    import shutil

    from rlvrambench_hf.advisor.read.verl import versions

    looked: list[str | None] = []
    real = versions._metadata_version
    monkeypatch.setattr(versions, "_metadata_version", lambda: looked.append(real()) or looked[-1])

    def site(name: str, version: str) -> Path:
        metadata = tmp_path / name / f"verl-{version}.dist-info" / "METADATA"
        metadata.parent.mkdir(parents=True)
        metadata.write_text(f"Metadata-Version: 2.1\nName: verl\nVersion: {version}\n")
        return metadata

    later = site("later", "0.9.1")
    monkeypatch.syspath_prepend(str(tmp_path / "later"))
    version = versions.installed_version
    assert as_command(version) == as_command(version) == "0.9.1" and len(looked) == 1
    later.write_text(later.read_text().replace("0.9.1", "0.8.0"))  # edited in place
    assert as_command(versions.installed_version) == "0.8.0" and len(looked) == 2
    site("earlier", "0.7.1")
    monkeypatch.syspath_prepend(str(tmp_path / "earlier"))  # found first, as importlib.metadata finds it
    version = versions.installed_version
    assert as_command(version) == as_command(version) == "0.7.1" and len(looked) == 3
    shutil.rmtree(tmp_path / "earlier" / "verl-0.7.1.dist-info")
    (tmp_path / "earlier" / "unrelated.txt").write_text("")  # a folder's other files do not matter
    assert as_command(versions.installed_version) == "0.8.0" and len(looked) == 4
    (tmp_path / "earlier" / "another.txt").write_text("")
    assert as_command(versions.installed_version) == "0.8.0" and len(looked) == 4

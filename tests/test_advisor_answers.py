"""The answers of the advisor on the release's own records: measurement first, floors, changes, distance, sweeps.

Every measured configuration of the release is planned from its own settings (the 212 of ``configurations.csv``,
the 12 larger-model targets, the 6 expanded-host targets) and must come back with its own record; the physical
floors are checked against every record the release measured as completing; the changes of rejected
configurations against the release's grid.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from rlvrambench_hf.advisor import Hardware, Plans, advise
from rlvrambench_hf.advisor.assess.changes import MOVES
from rlvrambench_hf.advisor.assess.context import load_context
from rlvrambench_hf.advisor.assess.floors import FLOORS, floors
from rlvrambench_hf.advisor.assess.predict import SettingArrays, feature_columns, predict
from rlvrambench_hf.advisor.assess.records import DEFINING_SETTINGS
from rlvrambench_hf.advisor.output.document import configuration, document
from rlvrambench_hf.advisor.output.sweep import sweep_table, verdict_lines, write_sweep
from rlvrambench_hf.advisor.plan.arrays import take
from rlvrambench_hf.data.schema.pins import RELEASE_STACK
from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.estimation.features import feature_matrix

from conftest import cli_env, run_cli


@pytest.fixture(scope="module")
def context(snapshot: Path):
    return load_context(snapshot)


def plans_of_table(name: str, snapshot: Path) -> Plans:
    table = load_table(name, snapshot, decode=True)
    return Plans(table, [f"{name} row {i + 1}" for i in range(table.num_rows)])


@pytest.fixture(scope="module")
def configurations(snapshot: Path, context) -> tuple[pa.Table, dict]:
    """The 212 configurations planned from their own settings, and their answers as JSON."""
    plans = plans_of_table("configurations", snapshot)
    return load_table("outcomes", snapshot, decode=True), document(advise(plans, context=context))


def test_the_defining_settings_give_134_configurations_whose_repeats_agree(snapshot: Path) -> None:
    table = load_table("all_configurations", snapshot, decode=True).to_pylist()
    groups: dict[tuple, set] = {}
    for row in table:
        groups.setdefault(tuple(row[s] for s in DEFINING_SETTINGS), set()).add(row["observed_state"])
    assert len(groups) == 134
    repeated = [labels - {"not_repeated"} for labels in groups.values()]
    assert all(len(labels) <= 1 for labels in repeated)
    assert sum(len(v) for v in groups.values() if len(v) > 1) == 12  # single-process calibrations beside a label


def test_each_of_the_212_configurations_finds_its_own_record_and_label(configurations) -> None:
    outcomes, advice = configurations
    truth = {r["configuration_id"]: r["observed_state"] for r in outcomes.to_pylist()}
    assert len(advice["configurations"]) == 212
    for c in advice["configurations"]:
        mine = [r for r in c["measured"] if r["table"] == "all_configurations"]
        own = [r for r in mine if r["configuration_id"] == c["configuration_id"]]
        assert own and own[0]["observed_state"] == truth[c["configuration_id"]], c["configuration_id"]
        assert own[0]["match"] == "exact" and c["verdict"]["basis"] == "measured"
        repeated = {r["observed_state"] for r in mine} - {"not_repeated"}
        assert c["verdict"]["state"] in repeated | {"unresolved"}
        if truth[c["configuration_id"]] != "not_repeated":
            assert c["verdict"]["state"] == truth[c["configuration_id"]]
            assert len(own[0]["eligible_seeds"]) == 3


def test_a_measured_model_without_release_metadata_keeps_its_records_and_gets_sizes(configurations) -> None:
    """Qwen2.5-1.5B-Instruct has no entry in the release's model metadata: its measured records answer it, and its
    sizes (from the config.json facts the package ships, offline and with nothing cached) give the floors and the
    references' and the model's predictions beside them."""
    _, advice = configurations
    small = [c for c in advice["configurations"] if c["model_id"] == "Qwen/Qwen2.5-1.5B-Instruct"]
    assert len(small) == 13
    for c in small:
        assert c["measured"] and c["verdict"]["basis"] == "measured" and c["predictions"] is not None
        by_check = {f["check"]: f["holds"] for f in c["floors"]}
        assert by_check["generation_weights"] is True and by_check["sequence_length"] is True
        assert c["predicted_peak_mib"] > 0 and c["phases"]


@pytest.mark.parametrize(
    ("targets", "records"),
    [("estimation_targets", "larger_model_configurations"), ("expanded_host_targets", "expanded_host_configurations")],
)
def test_the_follow_up_targets_come_back_measured(snapshot: Path, context, targets: str, records: str) -> None:
    outcomes = {r["configuration_id"]: r for r in load_table(records, snapshot, decode=True).to_pylist()}
    advice = document(advise(plans_of_table(targets, snapshot), context=context))
    assert len(advice["configurations"]) == len(outcomes) in (12, 6)
    for c in advice["configurations"]:
        (own,) = [r for r in c["measured"] if r["table"] == records and r["configuration_id"] == c["configuration_id"]]
        truth = outcomes[c["configuration_id"]]
        assert own["observed_state"] == truth["observed_state"]
        assert own["eligible_seeds"] == sorted(int(s) for s in truth["eligible_seeds"] or [])
        assert own["evidence"]["known_memory_failure"] == truth["known_memory_failure"]
        assert c["verdict"]["basis"] == "measured"
        if truth["observed_state"] == "unresolved":
            assert c["verdict"]["state"] in ("unresolved", "memory_failure")
            assert c["configuration_id"] in c["verdict"]["sentence"]
        else:
            assert c["verdict"]["state"] == truth["observed_state"]


def test_the_two_follow_ups_of_one_setting_are_shown_together(snapshot: Path, context) -> None:
    advice = document(advise(plans_of_table("expanded_host_targets", snapshot), context=context))
    first = advice["configurations"][0]  # host gsm8k c2 on 2 GPUs = est gsm8k c2 on 2 GPUs
    assert {r["table"] for r in first["measured"]} == {"larger_model_configurations", "expanded_host_configurations"}
    assert first["measured_agree"] is True and first["verdict"]["state"] == "memory_failure"
    assert "donor_copy predicts within_margin" in first["verdict"]["sentence"]  # the references disagree: said


def test_the_release_stack_is_what_every_table_that_records_it_holds(snapshot: Path) -> None:
    """RELEASE_STACK fills the algorithm and adaptation of the records that do not say them: every table that does
    say them holds exactly those values (a release that measures another stack must change the declaration)."""
    seen = Counter()
    for spec in REGISTRY.values():
        for name in set(RELEASE_STACK) & set(spec.column_names):
            values = {str(v).upper() for v in load_table(spec.name, snapshot).column(name).to_pylist()}
            assert values == {RELEASE_STACK[name].upper()}, (spec.name, name, values)
            seen[name] += 1
    assert seen["algorithm"] >= 5 and seen["adaptation"] >= 4, seen


@pytest.mark.parametrize(("setting", "value", "stack"), [("adaptation", "none", "full fine-tuning"),
                                                          ("algorithm", "GAE", "algorithm GAE")])  # fmt: skip
def test_a_run_of_another_stack_is_never_answered_by_grpo_lora_records(
    snapshot: Path, context, setting: str, value: str, stack: str
) -> None:
    """A measured GRPO+LoRA configuration planned as full fine-tuning or with GAE matches no record (the release
    measured neither), shows the GRPO+LoRA records as near matches naming the setting, and is answered by its own
    physics: on two 40 GB A100s neither fits."""
    table = load_table("configurations", snapshot, decode=True)
    ids = table.column("configuration_id").to_pylist()
    fits, fails = ids.index("cfg-338d9224eb9d2f3a"), ids.index("cfg-1432bb8a4d9c3b8c")  # within, above margin
    plans = take(table, np.array([fits, fails]))
    plans = plans.set_column(plans.schema.get_field_index(setting), setting, pa.array([value, value]))
    within, above = document(advise(Plans(plans, ["a", "b"]), context=context))["configurations"]
    for c in (within, above):
        assert c["measured"] is None and c["verdict"]["basis"] != "measured"
        assert c["near_matches"] and all(n["setting"] == setting for n in c["near_matches"][:2])
    # answered by the stack's own physics (16 B per parameter, or a second trained model), never by the records
    for c in (within, above):
        assert c["verdict"]["basis"] == "predicted" and c["predicted_peak_mib"], c["verdict"]
        assert c["verdict"]["state"] in ("above_margin", "memory_failure"), c["verdict"]
        assert "stack_not_measured" in {p["part"] for p in c["band"]["parts"]}


def test_floors_hold_for_every_record_the_release_measured_as_completing(context) -> None:
    checked = Counter()
    for table in context.records.index.tables:
        found = floors(SettingArrays.of(table.settings, context.metadata))
        for i, record in enumerate(table.records):
            completing = record["observed_state"] in ("within_margin", "above_margin") or record["completed_peaks_mib"]
            if not completing:
                continue
            for name in FLOORS:
                if found.known[name][i]:
                    checked[name] += 1
                    assert found.holds[name][i], (table.name, record["configuration_id"], name)
    assert all(checked[name] >= 150 for name in FLOORS), checked


def test_weights_that_cannot_fit_the_budget_are_a_memory_failure_by_floor(snapshot: Path, context) -> None:
    """A 14B-sized model (the Qwen2.5-7B counts doubled) at TP 1 and utilization 0.6: the bf16 weights need more
    than vLLM's 24,576 MiB, whatever the methods predict."""
    plan = load_table("estimation_targets", snapshot, decode=True).slice(1, 1)  # 7B gsm8k c2, 4 GPUs
    big = {
        k: (v * 2 if isinstance(v, int) and k.endswith("elements") else v)
        for k, v in context.metadata["Qwen/Qwen2.5-7B-Instruct"].items()
    }
    big["model_id"] = "acme/qwen-14b-like"
    plan = plan.set_column(plan.schema.get_field_index("model_id"), "model_id", pa.array(["acme/qwen-14b-like"]))
    answers = advise(Plans(plan, ["14b"]), context=context.with_metadata({"acme/qwen-14b-like": big}))
    c = configuration(answers, 0)
    assert c["measured"] is None and c["verdict"] == {**c["verdict"], "state": "memory_failure", "basis": "floor"}
    weights = next(f for f in c["floors"] if f["check"] == "generation_weights")
    assert weights["holds"] is False and weights["available_mib"] == 0.6 * 40960
    assert weights["required_mib"] == 2 * big["floating_checkpoint_elements"] / 2**20
    assert "vLLM's budget" in weights["arithmetic"] and "generation_weights" in c["verdict"]["sentence"]
    assert c["predictions"]["component_regression"]["predicted_state"] is not None  # still shown beside it


def test_a_rejected_configuration_gets_a_change_a_measurement_supports(configurations, context) -> None:
    _, advice = configurations
    records = [r for r in context.records.records if r["table"] == "all_configurations"]
    settings = {r["configuration_id"]: r for r in load_table("configurations", context.inputs.source).to_pylist()}
    within = [settings[r["configuration_id"]] for r in records if r["observed_state"] == "within_margin"]
    expected = 0
    for c in advice["configurations"]:
        if c["verdict"]["state"] not in ("above_margin", "memory_failure"):
            continue
        mine = settings[c["configuration_id"]]
        supporting = [w for w in within if _single_move(mine, w)]
        if not supporting:
            continue
        expected += 1
        measured = [ch for ch in c["changes"] if ch["basis"] == "measured"]
        assert measured, c["configuration_id"]
        ids = {w["configuration_id"] for w in supporting}
        assert any(ch["supporting_configuration"]["configuration_id"] in ids for ch in measured)
        assert all(ch["resulting_state"] == "within_margin" for ch in c["changes"])
    assert expected >= 10


def test_every_change_applied_and_asked_again_gives_the_state_it_claims(
    snapshot: Path, configurations, context
) -> None:
    """A change is a claim about another plan: apply each change offered to the rejected configurations and to the
    follow-up targets, ask again, and the answer must be the state the change gave, on a measured basis where the
    change said measured."""
    answers = [c for c in configurations[1]["configurations"]]
    for targets in ("estimation_targets", "expanded_host_targets"):
        answers += document(advise(plans_of_table(targets, snapshot), context=context))["configurations"]
    changed, claims = [], []
    for c in answers:
        for change in c["changes"] or []:
            settings = {k: v for k, v in c["settings"].items() if k != "configuration_id"}
            changed.append({**settings, change["setting"]: change["to"]})
            claims.append(change)
    assert len(claims) >= 100
    plans = Plans(pa.Table.from_pylist(changed), [f"change {i + 1}" for i in range(len(changed))])
    again = document(advise(plans, context=context))["configurations"]
    for claim, answer in zip(claims, again):
        assert answer["verdict"]["state"] == claim["resulting_state"], (claim, answer["verdict"])
        if claim["basis"] == "measured":
            assert answer["verdict"]["basis"] == "measured", (claim, answer["verdict"])


def _single_move(plan: dict, record: dict) -> bool:
    """The record differs from the plan in exactly one setting, along a move the advisor makes."""
    differ = [s for s in DEFINING_SETTINGS if plan[s] != record[s]]
    if len(differ) != 1 or differ[0] not in MOVES:
        return False
    direction, mine, theirs = MOVES[differ[0]][1], plan[differ[0]], record[differ[0]]
    return {"down": theirs < mine, "up": theirs > mine, "on": theirs and not mine, "other": True}[direction]


def test_vectorised_features_equal_the_estimators_features(context) -> None:
    rows = list(context.fitted.training.rows)
    table = load_table("configurations", context.inputs.source)
    arrays = SettingArrays.of(table, context.metadata)
    features, ok = feature_columns(arrays)
    ids = table.column("configuration_id").to_pylist()
    by_id = {r["configuration_id"]: i for i, r in enumerate(rows)}
    mine = np.array([features[ids.index(r["configuration_id"])] for r in rows])
    assert np.array_equal(mine, feature_matrix(rows, context.metadata)) and len(by_id) == 90
    assert ok.sum() == sum(m in context.metadata for m in table.column("model_id").to_pylist())
    predictions = predict(arrays, context.fitted, context.parameters)
    references = context.fitted.predict(context.fitted.training)
    for method in ("donor_copy", "component_regression", "logistic"):
        theirs = [r["predicted_state"] for r in references if r["method"] == method]
        assert [
            ("within_margin", "above_margin", "memory_failure")[predictions.state[method][ids.index(i)]]
            for i in context.fitted.training.ids
        ] == theirs


def test_distance_is_zero_on_a_measured_point_and_flags_a_plan_outside_the_cloud(snapshot: Path, context) -> None:
    plan = load_table("configurations", snapshot).slice(0, 2)
    far = plan.slice(1, 1)
    for name, value in (("max_prompt_length", 16384), ("max_model_len", 16384 + far["max_response_length"][0].as_py())):
        far = far.set_column(far.schema.get_field_index(name), name, pa.array([value], pa.int64()))
    answers = advise(Plans(pa.concat_tables([plan.slice(0, 1), far]), ["measured", "far"]), context=context)
    near, away = configuration(answers, 0), configuration(answers, 1)
    assert near["distance"]["nearest"] == 0 and near["distance"]["outside_cloud"] is False
    assert away["distance"]["outside_cloud"] is True and away["measured"] is None
    assert any(f.startswith("outside the measured cloud") for f in away["scope_flags"])
    assert any("max_prompt_length=16384 (measured 256-1792)" in f for f in away["scope_flags"])


def test_sweep_table_and_files_hold_one_row_per_plan(snapshot: Path, context, tmp_path: Path) -> None:
    answers = advise(plans_of_table("estimation_targets", snapshot), context=context)
    table = sweep_table(answers)
    assert table.num_rows == 12 and table.column("verdict_basis").to_pylist() == ["measured"] * 12
    states = table.column("measured_state").to_pylist()
    assert states == table.column("verdict_state").to_pylist()
    # both follow-ups left the 4-GPU c2 targets without an eligible seed; the 2-GPU math c2 target is unresolved
    # in one (one eligible memory failure) and a memory failure in the other: the most severe label is the answer
    assert [states[i] for i in (1, 5, 9)] == ["unresolved"] * 3 and states[4] == "memory_failure"
    assert {"floors_failed", "donor_copy_state", "component_regression_peak_mib", "logistic_state", "flags"} <= set(
        table.column_names
    )
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"sweep{suffix}"
        write_sweep(answers, path)
        back = pq.read_table(path) if suffix == ".parquet" else pacsv.read_csv(path)
        assert (
            back.num_rows == 12
            and back.column("configuration_id").to_pylist() == table.column("configuration_id").to_pylist()
        )
    assert (
        verdict_lines(answers)[0]
        == "est-qwen25-7b-gsm8k-c2-2gpu: memory_failure (basis measured; 2 measured record(s)) "
        "on A100 40GB (measured by the release)"
    )


def test_cli_leads_with_verdicts_and_writes_csv_offline_for_an_unknown_model(snapshot: Path, tmp_path: Path) -> None:
    rows = load_table("estimation_targets", snapshot).to_pylist()[:2]
    rows[1]["model_id"], rows[1]["configuration_id"] = "someone/unseen-model", "mine"
    planned = tmp_path / "plans.json"
    planned.write_text(json.dumps([{k: v for k, v in r.items() if v is not None} for r in rows]))
    output = tmp_path / "answers.csv"
    result = run_cli(
        "--source",
        str(snapshot),
        "estimate",
        "advise",
        "--planned",
        str(planned),
        "--output",
        str(output),
        "--details",
        env=cli_env(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf")),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "est-qwen25-7b-gsm8k-c2-2gpu: does not fit on A100 40GB (40,960 MiB per GPU)"
    assert lines[1].startswith("  measured: the release ran these settings (2 records, 6 eligible seeds) and it ran")
    assert [line for line in lines if line.startswith("mine: ")]
    table = pacsv.read_csv(output)
    assert table.column("verdict_basis").to_pylist()[0] == "measured"
    assert "no_metadata" in table.column("flags").to_pylist()[1]
    assert "reference methods: no prediction (no model metadata for someone/unseen-model" in result.stdout


def test_other_hardware_is_flagged_and_moves_the_budget(snapshot: Path, context) -> None:
    plan = (
        load_table("estimation_targets", snapshot, decode=True)
        .slice(0, 1)
        .drop_columns(["device_capacity_mib", "margin_limit_mib"])
    )
    answers = advise(Plans(plan, ["80 GB"]), context=context, hardware=Hardware(81920, 79872))
    c = configuration(answers, 0)
    assert c["measured"] is None  # every measurement is on 40 GB devices
    weights = next(f for f in c["floors"] if f["check"] == "generation_weights")
    assert weights["available_mib"] == 0.6 * 81920
    assert any(f.startswith("hardware not measured: 81920 MiB") for f in c["scope_flags"])


def test_an_admission_candidate_is_matched_on_the_settings_its_table_records(snapshot: Path, context) -> None:
    """The candidates' table records nine of the defining settings (model and workload through the configurations'
    model family and legacy dataset id); a plan of the panel's settings finds its candidate and evaluation label."""
    candidate = next(
        r
        for r in load_table("admission_candidates", snapshot, decode=True).to_pylist()
        if r["candidate_id"] == "phi4_mini-gsm8k-shape1024-n4-steps5-c3"
    )
    base = load_table("configurations", snapshot).slice(0, 1)  # any row: the settings the candidate does not record
    values = {
        "model_id": "microsoft/Phi-4-mini-instruct",
        "workload_id": "gsm8k",
        "gpu_count": candidate["gpu_count"],
        "actor_micro_batch": candidate["actor_micro_batch"],
        "vllm_gpu_memory_utilization": candidate["reservation"],
        "max_prompt_length": candidate["prompt_cap"],
        "max_response_length": candidate["response_cap"],
        "rollout_n": candidate["responses_per_prompt"],
        "train_batch_size": candidate["global_prompt_batch"],
    }
    for name, value in values.items():
        base = base.set_column(base.schema.get_field_index(name), name, pa.array([value], base.schema.field(name).type))
    c = configuration(advise(Plans(base, ["panel"]), context=context), 0)
    (record,) = [r for r in c["measured"] if r["table"] == "admission_candidates"]
    assert record["configuration_id"] == candidate["candidate_id"]
    assert record["observed_state"] == candidate["evaluation_state"] == "above_margin"
    assert (
        record["match"] == "on the settings both give"
        and "rollout_logprob_micro_batch" in record["unrecorded_settings"]
    )
    assert len(record["eligible_seeds"]) == 3 and {r["state"] for r in record["runs"]} == {"above_margin"}
    assert c["verdict"]["basis"] == "measured" and c["verdict"]["state"] == "above_margin"


def test_the_stored_fit_answers_as_a_fresh_fit_and_a_damaged_one_is_refitted(snapshot: Path, tmp_path: Path) -> None:
    """A fit entry whose payload is intact but whose parameters have the wrong shape is refitted and rewritten (the
    whole stored context is removed first, so that the fit is what the run reads; tests/test_advisor_store.py checks
    the context's own entry)."""
    import hashlib

    home = tmp_path / "hf"
    argv = [
        "--source",
        str(snapshot),
        "estimate",
        "advise",
        "--planned",
        str(snapshot / "benchmark/estimation/targets.csv"),
    ]
    outputs = []
    folder = home / "assets" / "rlvrambench_hf" / "advisor" / "default"
    for run in range(3):
        output = tmp_path / f"answer-{run}.json"
        result = run_cli(*argv, "--output", str(output), env=cli_env(HF_HOME=str(home)))
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(output.read_text()))
        (stored,) = folder.glob("fit-*")
        if run == 1:  # damage it, with a payload digest that matches: the next run must notice and fit again
            for entry in folder.glob("context-*"):
                entry.unlink()
            kind, header, payload = stored.read_bytes().split(b"\n", 2)
            data = json.loads(payload)
            data["classifier"]["coefficients"] = [[0.0]]
            payload = json.dumps(data).encode()
            fields = {**json.loads(header), "payload_sha256": hashlib.sha256(payload).hexdigest()}
            stored.write_bytes(b"\n".join([kind, json.dumps(fields).encode(), payload]))
    assert outputs[0] == outputs[1] == outputs[2]
    payload = stored.read_bytes().split(b"\n", 2)[2]
    assert len(json.loads(payload)["classifier"]["coefficients"]) == 3  # rewritten whole


def test_an_unreachable_hub_is_asked_once_for_the_models_of_a_call(monkeypatch, snapshot: Path, context) -> None:
    """huggingface_hub retries a refused connection for about 23 s: the second unknown model is not asked for, and
    both say why they have no predictions, without the endpoint's credentials."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls = []

    def unreachable(*args, **kwargs):
        calls.append(args)
        try:  # as huggingface_hub raises it: the transport's error as the cause
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as cause:
            raise LocalEntryNotFoundError("cannot reach the Hub and the file is not cached") from cause

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", unreachable)  # the same Hub, also unreachable
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://user:secret@127.0.0.1:9")
    plans = load_table("estimation_targets", snapshot, decode=True).slice(0, 2)
    plans = plans.set_column(plans.schema.get_field_index("model_id"), "model_id", pa.array(["acme/a", "acme/b"]))
    a, b = document(advise(Plans(plans, ["a", "b"]), context=context))["configurations"]
    assert {call[0] for call in calls} == {"acme/a"}  # the second model is never asked for
    for c, model in ((a, "acme/a"), (b, "acme/b")):
        assert c["predictions"] is None
        why = c["predictions_unavailable"]
        assert f"model {model} is not in the release's model metadata and the Hub at http://***@127.0.0.1:9 " \
               "is unreachable" in why and "secret" not in why  # fmt: skip

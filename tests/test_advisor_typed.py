"""The advisor's answer as typed objects: their JSON is the document's, the one PhaseModel, the one verdict wording,
one order of fixes for a plan and for its failure log (a failing floor's remedies first), the options of ``advise``
honoured with ``--log``, a launch file that cannot be read keeping the log's diagnosis, and names and values from
the user's files reaching the terminal escaped."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from rlvrambench_hf import advisor
from rlvrambench_hf.advisor import Answer, PhasePeaks, advise, explain_failure, read_phase_peaks, read_plans
from rlvrambench_hf.advisor.answer import Change, MeasuredMatch, Prediction
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.advisor.output.sweep import verdict_lines
from rlvrambench_hf.advisor.output.wording import sentence, verdict_text
from rlvrambench_hf.cli import main
from rlvrambench_hf.memory import phases

from conftest import REPO_ROOT

LOGS = Path(__file__).parent / "logs"
UTILIZATION = "actor_rollout_ref.rollout.gpu_memory_utilization"
#: The release's Qwen2.5-7B target at level c2 on two GPUs (measured: a memory failure on all three seeds).
PLAN = {
    "model_id": "Qwen/Qwen2.5-7B-Instruct", "workload_id": "gsm8k", "configuration_level": "c2", "gpu_count": 2,
    "rollout_tp_size": 1, "actor_micro_batch": 8, "rollout_logprob_micro_batch": 4, "ref_logprob_micro_batch": 4,
    "vllm_gpu_memory_utilization": 0.6, "parameter_offload": False, "optimizer_offload": False,
    "free_cache_engine": True, "max_prompt_length": 1024, "max_response_length": 2048, "max_model_len": 3072,
    "max_num_seqs": 64, "rollout_n": 2, "train_batch_size": 32,
}  # fmt: skip


def script(folder: Path, name: str = "run.sh", **changes: str) -> Path:
    """A VERL launch script of Qwen2.5-7B on two A100s at utilization 0.3: vLLM's bf16 weights (14,526 MiB) do not
    fit its budget (12,288 MiB), so the generation_weights floor fails."""
    settings = {
        "algorithm.adv_estimator": "grpo", "data.train_batch_size": "128", "data.max_prompt_length": "256",
        "data.max_response_length": "1024", "actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B-Instruct",
        "actor_rollout_ref.model.lora_rank": "64", "actor_rollout_ref.model.target_modules": "all-linear",
        "actor_rollout_ref.actor.strategy": "fsdp", "actor_rollout_ref.actor.ppo_mini_batch_size": "32",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "16",
        "actor_rollout_ref.actor.fsdp_config.param_offload": "False",
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "False",
        "actor_rollout_ref.rollout.name": "vllm", "actor_rollout_ref.rollout.tensor_model_parallel_size": "1",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.3", "actor_rollout_ref.rollout.n": "5",
        "actor_rollout_ref.rollout.max_num_seqs": "256", "actor_rollout_ref.rollout.max_model_len": "1280",
        "actor_rollout_ref.rollout.free_cache_engine": "True",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "8",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "8", "actor_rollout_ref.hybrid_engine": "True",
        "trainer.n_gpus_per_node": "2", "trainer.nnodes": "1", "trainer.total_training_steps": "100",
    } | changes  # fmt: skip
    path = folder / name
    words = " \\\n    ".join(f"{k}={v}" for k, v in settings.items())
    path.write_text(f"python3 -m verl.trainer.main_ppo \\\n    {words}\n")
    return path


def printed(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    out = capsys.readouterr()
    return out.out, out.err


def test_the_answer_is_typed_and_its_json_is_the_document(snapshot: Path) -> None:
    plans = read_plans([PLAN, {**PLAN, "vllm_gpu_memory_utilization": 0.3}], source=snapshot)
    answers = advise(plans, snapshot)
    measured, floor = answers.answer(0), answers.answer(1)
    assert isinstance(measured, Answer) and measured.to_json() == document(answers)["configurations"][0]
    assert (measured.verdict.state, measured.verdict.basis) == ("memory_failure", "measured")
    assert measured.measured is not None and all(isinstance(m, MeasuredMatch) for m in measured.measured)
    assert [m.configuration_id for m in measured.measured] == [
        "est-qwen25-7b-gsm8k-c2-2gpu",
        "host-qwen25-7b-gsm8k-c2-2gpu",
    ]
    assert measured.predictions is not None and all(isinstance(p, Prediction) for p in measured.predictions)
    assert measured.verdict.sentence == sentence(measured)  # worded once, by the output room
    assert measured["verdict"]["state"] == "memory_failure" and dict(measured.verdict) == measured["verdict"]
    assert json.loads(json.dumps(measured.to_json())) == measured.to_json()  # JSON's own types
    assert (floor.verdict.basis, [f.check for f in floor.failed_floors][:1]) == ("floor", ["generation_weights"])
    assert isinstance(floor.memory, PhasePeaks) and floor.memory.device == answers.hardware


def test_one_phase_model_and_one_term() -> None:
    assert advisor.PhaseModel is phases.PhaseModel
    defined: dict[str, list[str]] = {"PhaseModel": [], "Term": []}
    for path in (REPO_ROOT / "rlvrambench_hf").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in defined:
                defined[node.name].append(str(path.relative_to(REPO_ROOT)))
    assert defined == {"PhaseModel": ["rlvrambench_hf/memory/phases.py"], "Term": ["rlvrambench_hf/memory/phases.py"]}


def test_a_saved_answer_is_read_back_by_the_output_room(snapshot: Path) -> None:
    answer = advise(read_plans([{**PLAN, "model_id": "Qwen/Qwen2.5-3B-Instruct"}], source=snapshot), snapshot).answer(0)
    saved = json.loads(json.dumps(answer.to_json()))
    peaks = read_phase_peaks(saved)
    assert [(p.phase, p.peak_mib) for p in peaks.phases] == [(p.phase, p.peak_mib) for p in answer.memory.phases]
    assert peaks.binding_phase == answer.memory.binding_phase == "rollout"
    assert peaks.device.device_capacity_mib == 40960 and peaks.band_mib == round(answer.memory.band_mib, 1)


def test_the_log_is_matched_against_the_plans_own_model(snapshot: Path, tmp_path: Path) -> None:
    """In process: the binding phase of the match is the answer's (generation's, on a tie with start-up), not the
    first of two equal peaks of a model parsed back from JSON."""
    run = script(tmp_path, **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-3B-Instruct", UTILIZATION: "0.65"})
    plans = read_plans(run, kind="verl", workload="gsm8k", source=snapshot)
    found = explain_failure(LOGS / "torch20_actor_update.log", snapshot, plans=plans)
    assert found.specific is not None and found.specific.phases is not None
    initializing, rollout = found.specific.answer.memory.phases[:2]
    assert initializing.peak_mib == rollout.peak_mib  # start-up and generation hold the same terms
    assert found.specific.phases.binding_phase == found.specific.answer.memory.binding_phase == "rollout"


def test_a_failing_floors_remedy_comes_first_for_the_plan_and_for_its_log(snapshot: Path, tmp_path: Path) -> None:
    plans = read_plans(script(tmp_path), kind="verl", workload="gsm8k", source=snapshot)
    answer = advise(plans, snapshot).answer(0)
    assert "generation_weights" in [f.check for f in answer.failed_floors]
    first = answer.changes[0]
    assert isinstance(first, Change) and (first.basis, first.floor) == ("floor", "generation_weights")
    assert (first.setting, first.before, first.to) == ("vllm_gpu_memory_utilization", 0.3, 0.4)
    assert first.paste.verl_overrides == ("actor_rollout_ref.rollout.gpu_memory_utilization=0.4",)
    remedied = read_plans(
        script(tmp_path, "fixed.sh", **{UTILIZATION: "0.4"}),
        kind="verl",
        workload="gsm8k",
        source=snapshot,
    )
    weights = advise(remedied, snapshot).answer(0).floor("generation_weights")
    assert weights is not None and weights.holds is True
    # the log's phase (the actor update) disagrees with the plan, whose weights do not even fit vLLM's budget
    found = explain_failure(LOGS / "torch20_actor_update.log", snapshot, plans=plans)
    assert found.fixes[0].basis == "launch" and found.fixes[0].setting == "vllm_gpu_memory_utilization"
    assert found.fixes[0].change == "0.4" and "the floor generation_weights holds after it" in found.fixes[0].why
    bases = [f.basis for f in found.fixes]
    assert "model" in bases and bases.index("model") > 0  # the phase's fixes (a micro-batch) come after
    assert found.headline().endswith("try `actor_rollout_ref.rollout.gpu_memory_utilization=0.4`")


def test_with_a_log_the_gpu_and_the_accelerate_config_are_used(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = script(tmp_path, **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-3B-Instruct"})
    out = tmp_path / "why.json"
    log = str(LOGS / "torch20_actor_update.log")
    argv = ["--source", str(snapshot), "advise", "--log", log, "--verl", str(run), "--workload", "gsm8k"]
    assert main([*argv, "--gpu", "H100", "--output", str(out)]) == 0
    text, _ = printed(capsys)
    specific = json.loads(out.read_text())["diagnosis"]["specific"]
    assert specific["device"]["plan_capacity_mib"] == 81559 and specific["device"]["agrees"] is False
    assert specific["device"]["capacity_from"].startswith("the device given")
    assert specific["verdict"]["sentence"].startswith("on H100 80GB")
    assert "device: the log's device (40,335 MiB) is not the plan's 81,559 MiB device: pass --gpu" in text
    corpus = REPO_ROOT / "tests" / "advisor_corpus"
    trl = ["advise", "--trl", str(corpus / "trl" / "grpo_multinode_zero3.yaml"), "--workload", "gsm8k"]
    accelerate = ["--accelerate-config", str(corpus / "accelerate" / "zero3_four_nodes.yaml")]
    assert main(["--source", str(snapshot), *trl, *accelerate, "--output", str(tmp_path / "plan.json")]) == 0
    capsys.readouterr()
    (alone,) = json.loads((tmp_path / "plan.json").read_text())["configurations"]
    assert main(["--source", str(snapshot), *trl, *accelerate, "--log", log, "--output", str(out)]) == 0
    text, _ = printed(capsys)
    with_log = json.loads(out.read_text())["diagnosis"]["specific"]
    assert with_log is not None and with_log["plan"] == alone["configuration_id"]
    assert with_log["verdict"]["sentence"] == alone["verdict"]["sentence"]  # the same plan: its accelerate config read
    assert "your plan" in text and "could not be read" not in text


def test_a_launch_file_that_cannot_be_read_keeps_the_diagnosis(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = script(tmp_path, **{UTILIZATION: "1.5"})
    argv = ["--source", str(snapshot), "advise", "--log", str(LOGS / "torch25_weight_sync.log"), "--verl", str(broken)]
    out = tmp_path / "why.json"
    assert main([*argv, "--workload", "gsm8k", "--output", str(out)]) == 0
    text, err = printed(capsys)
    assert err == "" and text.startswith("memory failure in weight_sync (weight_sync_oom)")
    notes = [line for line in text.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and notes[0].startswith("note: the launch file could not be read (")
    assert "gpu_memory_utilization" in notes[0] and "your plan" not in text
    diagnosis = json.loads(out.read_text())["diagnosis"]
    assert diagnosis["specific"] is None and diagnosis["note"] == notes[0][len("note: ") :]
    assert main(["--source", str(snapshot), "advise", "--verl", str(broken), "--workload", "gsm8k"]) == 2  # alone


def test_names_and_values_from_the_user_reach_the_terminal_escaped(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A launch file's name, a log's name, a --workload value, a planned file's configuration id and model value
    with raw escape sequences (ESC, CSI, BEL, C1, bidirectional overrides) are printed escaped."""
    hostile = "\x1b[2J\x1b]0;pwned\x07\x9b31m\u202e"
    run = script(tmp_path, f"run{hostile}.sh")
    log = tmp_path / f"crash{hostile}.log"
    log.write_bytes((LOGS / "torch20_actor_update.log").read_bytes())
    planned = tmp_path / f"plans{hostile}.json"
    planned.write_text(json.dumps([{**PLAN, "configuration_id": f"mine{hostile}"}]))
    calls = [
        ["advise", "--verl", str(run), "--workload", f"gsm8k{hostile}"],
        ["advise", "--log", str(log), "--verl", str(run), "--workload", f"math{hostile}"],
        ["advise", "--log", str(log)],
        ["advise", "--planned", str(planned)],
    ]
    for argv in calls:
        main(["--source", str(snapshot), *argv])
        out, err = printed(capsys)
        for text in (out, err):
            assert all(c.isprintable() or c == "\n" for c in text), (argv, [c for c in text if not c.isprintable()])
        if argv != ["advise", "--log", str(log)]:  # a log alone: the answer never names its file
            assert "\\x1b[2J" in out + err, argv  # the name is there, escaped
    main(["--source", str(snapshot), "advise", "--planned", str(planned)])
    out, _ = printed(capsys)
    assert out.startswith("mine\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\u202e: does not fit on A100 40GB")


def test_one_verdict_wording(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plans = read_plans([PLAN, {**PLAN, "vllm_gpu_memory_utilization": 0.3}], source=snapshot)
    answers = advise(plans, snapshot)
    lines = verdict_lines(answers)
    assert lines[1].startswith("planned-2: memory_failure (basis floor; floor generation_weights")
    path = tmp_path / "plans.json"
    path.write_text(json.dumps([PLAN, {**PLAN, "vllm_gpu_memory_utilization": 0.3}]))
    assert main(["--source", str(snapshot), "advise", "--planned", str(path), "--details"]) == 0
    out, _ = printed(capsys)
    for i in range(2):
        answer = answers.answer(i)
        assert f"verdict: {verdict_text(answer)}" in out  # the details name the verdict in the JSON's words
    assert out.startswith("planned-1: does not fit on A100 40GB") and "planned-2: does not fit on A100 40GB" in out
    for module in ("document", "sweep"):
        tree = ast.parse((REPO_ROOT / "rlvrambench_hf" / "advisor" / "output" / f"{module}.py").read_text())
        assert not [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and "verdict_text" in n.name]

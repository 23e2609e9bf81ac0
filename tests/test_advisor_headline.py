"""The answer in plain words first (issue 39): one headline per plan that agrees with its verdict, the binding phase
and the distance to the margin read from the answer, the change to paste in the user's own keys, and the details
(the reference methods' own predictions among them) only under a legend, behind --details; the JSON unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from rlvrambench_hf import advisor
from rlvrambench_hf.advisor.output.headline import DOES_NOT_FIT, FITS, NEAR, NOT_ANSWERED, headline, status
from rlvrambench_hf.advisor.plan.hardware import Hardware
from rlvrambench_hf.cli import main
from rlvrambench_hf.cli.advise.details import LEGEND
from rlvrambench_hf.data.tables.reader import load_table

CORPUS = Path(__file__).parent / "advisor_corpus"
STATUSES = {FITS, DOES_NOT_FIT, f"{DOES_NOT_FIT} ({NEAR})", NEAR, NOT_ANSWERED}
_GAP = re.compile(r"([\d,]+) MiB \(([\d.]+)% of the margin\) (below|above) the margin of ([\d,]+) MiB")


@pytest.fixture(scope="module")
def answers(snapshot: Path) -> list[advisor.Answer]:
    """Every configuration of the release, on its A100 and on an H100 (measured, floor, predicted and near-limit
    answers), and a run the model does not cover."""
    from huggingface_hub import constants

    table = load_table("configurations", snapshot, decode=True)
    table = table.drop_columns([c for c in ("device_capacity_mib", "margin_limit_mib") if c in table.column_names])
    plans = advisor.Plans(table, ["configurations.csv"] * table.num_rows)
    found = []
    with pytest.MonkeyPatch.context() as patch:  # offline: the 1.5B Qwen's sizes from the config.json facts shipped
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        for hardware in (Hardware.of(None, None, gpu="A100"), Hardware.of(None, None, gpu="H100")):
            done = advisor.advise(plans, snapshot, hardware=hardware)
            found += [done.answer(i) for i in range(len(done))]
    ddp = advisor.read_plans(
        CORPUS / "trl" / "grpo_peft_lora_ddp.yaml",
        kind="trl",
        accelerate_config=CORPUS / "accelerate" / "ddp.yaml",
        source=snapshot,
    )
    # generation with TensorRT-LLM: an engine the model has no terms for, not answered
    table = ddp.table.set_column(ddp.table.schema.get_field_index("rollout_engine"), "rollout_engine",
                                 pa.array(["trtllm"], pa.string()))  # fmt: skip
    other = advisor.Plans(table, list(ddp.origins))
    return [*found, advisor.advise(other, snapshot).answer(0)]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_headline_agrees_with_the_verdict(answers: list[advisor.Answer]) -> None:
    seen = set()
    for answer in answers:
        lines = headline(answer, "planned")
        v = answer.verdict
        said = status(answer)
        seen.add(said)
        assert lines[0].startswith(f"{answer.configuration_id}: {said} on {answer.device.device_name} (")
        expected = {
            "within_margin": NEAR if v.near_limit else FITS,
            "above_margin": f"{DOES_NOT_FIT} ({NEAR})" if v.near_limit else DOES_NOT_FIT,
            "memory_failure": f"{DOES_NOT_FIT} ({NEAR})" if v.near_limit else DOES_NOT_FIT,
        }.get(v.state or "", NOT_ANSWERED)
        assert said == expected, (answer.configuration_id, v.to_json())
        text = "\n".join(lines)
        # no reference method's label stands beside the verdict: the plain words never name one
        assert not any(m in text for m in ("donor_copy", "component_regression", "logistic")), text
        assert [line for line in lines if line.startswith("  basis: ")], lines
    assert seen == STATUSES, seen  # every headline is met over the release on two devices


def test_by_how_much_is_the_answers_own_figure(answers: list[advisor.Answer]) -> None:
    checked = 0
    for answer in answers:
        text = " ".join(line.strip() for line in headline(answer, "planned"))
        margin = answer.device.margin_limit_mib
        if answer.verdict.by_model and answer.memory.peak_mib is not None:
            peak, phase = answer.memory.peak_mib, answer.memory.binding_phase
            assert f"predicted: {phase} (" in text and f"peaks at {peak:,.0f} MiB per GPU" in text, text
        elif answer.verdict.basis == "measured" and answer.verdict.state in ("within_margin", "above_margin"):
            peaks = [  # on another device than the release's, the peak carried to it
                r.max_completed_peak_mib if r.carried_peak_mib is None else r.carried_peak_mib
                for r in answer.measured or ()
                if r.max_completed_peak_mib is not None
            ]
            if not peaks:
                continue
            peak = max(peaks)
            assert f"peak {peak:,.0f} MiB per GPU" in text, text
        else:
            continue
        gap, share, side, named = _GAP.search(text).groups()  # type: ignore[union-attr]
        assert _number(named) == margin and _number(gap) == pytest.approx(abs(margin - peak), abs=1)
        assert float(share) == pytest.approx(abs(margin - peak) / margin * 100, abs=0.05)
        assert side == ("below" if peak <= margin else "above")
        checked += 1
    assert checked > 100


def test_the_change_to_paste_is_the_answers_first_change_in_the_users_keys(answers: list[advisor.Answer]) -> None:
    pasted = 0
    for answer in answers:
        if answer.verdict.state not in ("above_margin", "memory_failure") or not answer.changes:
            continue
        first = answer.changes[0]
        verl = [line for line in headline(answer, "verl") if line.startswith("  paste: ")]
        trl = [line for line in headline(answer, "trl") if line.startswith("  paste: ")]
        planned = [line for line in headline(answer, "planned") if line.startswith("  paste: ")]
        if first.paste.verl_overrides:
            assert verl[0].startswith(f"  paste: {' '.join(first.paste.verl_overrides)}  ("), verl
        if first.paste.trl_arguments:
            assert trl[0].startswith(f"  paste: {' '.join(first.paste.trl_arguments)}"), trl
        assert planned[0].startswith(f"  paste: {first.setting}="), planned
        pasted += 1
    assert pasted > 20


def test_near_the_limit_pastes_the_buy_back_in_trl_keys_for_a_trl_run(snapshot: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "trl.json"
    recipe = tmp_path / "grpo.yaml"  # the corpus's LoRA run with vLLM's share raised until its band reaches the margin
    text = (CORPUS / "trl" / "grpo_peft_lora_ddp.yaml").read_text()
    recipe.write_text(text.replace("vllm_gpu_memory_utilization: 0.5", "vllm_gpu_memory_utilization: 0.7"))
    argv = ["--source", str(snapshot), "advise", "--trl", str(recipe)]
    argv += ["--accelerate-config", str(CORPUS / "accelerate" / "fsdp.yaml"), "--gpu", "H100", "--output", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    (entry,) = json.loads(out.read_text())["configurations"]
    assert entry["verdict"]["near_limit"] is True and entry["verdict"]["state"] == "within_margin"
    (buy,) = entry["band"]["buy_back"]  # the JSON's own (VERL's key)
    value = buy.split("=", 1)[1]
    assert (
        text.splitlines()[0]
        == "planned-1: near the limit on H100 80GB (81,559 MiB per GPU, not measured by the release)"
    )
    assert (
        f"  paste: --vllm_gpu_memory_utilization {value}  (the peak and its band then stay within the margin)" in text
    )


def test_details_come_under_a_legend_and_leave_the_json_as_it_is(snapshot: Path, tmp_path: Path, capsys) -> None:
    for word in ("basis = ", "band = ", "scope = ", "measured cloud = "):
        assert word in LEGEND
    base = ["--source", str(snapshot), "advise", "--verl", "example:qwen2.5-3b-grpo-lora", "--gpu", "H100"]
    assert main([*base, "--output", str(tmp_path / "short.json")]) == 0
    short = capsys.readouterr().out
    assert main([*base, "--details", "--output", str(tmp_path / "long.json")]) == 0
    long = capsys.readouterr().out
    assert (tmp_path / "short.json").read_bytes() == (tmp_path / "long.json").read_bytes()
    assert LEGEND not in short and long.count(LEGEND) == 1
    assert long.startswith(short.split("\n(--details")[0])  # the same plain words first
    assert "(they do not decide the verdict" in long and "reference method" in long and "donor_copy" not in short
    legend_at, references_at = long.index(LEGEND), long.index("the reference methods' own predictions")
    assert legend_at < references_at and "floor generation_weights: holds" in long
    assert len(short.splitlines()) <= 16 < len(long.splitlines())


def test_every_headline_line_but_what_is_pasted_is_wrapped_to_the_width(snapshot: Path) -> None:
    """The launch files of the corpus on an H100 (near-limit answers whose band no single change buys back among
    them): every line of every headline is within the width, except the lines the user pastes."""
    from huggingface_hub import constants

    from rlvrambench_hf.advisor.output.headline import WIDTH
    from rlvrambench_hf.errors import InputError

    lines: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        for path in sorted((CORPUS / "verl").glob("*.sh")):
            try:
                plans = advisor.read_plans(path, kind="verl", workload="gsm8k", source=snapshot)
            except InputError:
                continue
            done = advisor.advise(plans, snapshot, hardware=Hardware.of(None, None, gpu="H100"))
            lines += [line for i in range(len(done)) for line in headline(done.answer(i), "verl")]
    long = [line for line in lines if len(line) > WIDTH and not line.lstrip().startswith(("paste:", "or:"))]
    assert len(lines) > 100 and not long, long[:3]
    assert any("no single change" in line for line in lines)  # the case that was printed unwrapped

"""Documented outcomes on devices the release never measured (``tests/outcomes/outcomes.yaml``): each launch file
is read as a user's, under every filling of what its source leaves unsaid, on the device the source names. The
advisor approves (``within_margin`` without ``near_limit``) none of the runs that failed; how many of the runs that
ran it approves is printed. The package's own facts of the same runs (:mod:`rlvrambench_hf.memory.documented`, the
band's device part is calibrated on the failures) agree with what the launch files say."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvrambench_hf.advisor import advise
from rlvrambench_hf.advisor.assess.context import load_context
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.advisor.plan.hardware import Hardware
from rlvrambench_hf.advisor.read.reader import read_plans
from rlvrambench_hf.memory.documented import DOCUMENTED

from hubserver import REPO_ROOT

OUTCOMES = REPO_ROOT / "tests" / "outcomes"
TABLE = yaml.safe_load((OUTCOMES / "outcomes.yaml").read_text(encoding="utf-8"))["rows"]


@dataclass(frozen=True)
class Run:
    """One documented run under one filling: the launch text, the device, the outcome and what was filled."""

    row: str
    text: str
    gpu: str
    workload: str | None
    ran: bool
    filled: dict[str, Any]


def _assigned(text: str, name: str, value: object) -> str:
    """``text`` with the shell assignment of ``name`` set to ``value``."""
    pattern = re.compile(rf"^{re.escape(name)}=.*$", re.MULTILINE)
    assert pattern.search(text), f"the launch file assigns no {name}"
    return pattern.sub(f"{name}={value}", text, count=1)


def _override(value: object) -> str:
    return str(value) if not isinstance(value, bool) else str(value)


def _filled(text: str, filled: dict[str, Any]) -> str:
    """``text`` with the fillings: a shell variable assigned, a VERL override passed in place of ``$@`` (a null
    one left unset)."""
    overrides = []
    for name, value in filled.items():
        if "." not in name:
            text = _assigned(text, name, value)
        elif value is not None:
            overrides.append(f"{name}={_override(value)}")
    return text.replace("$@", " ".join(overrides))


def runs() -> Iterator[Run]:
    for row in TABLE:
        base = (OUTCOMES / row["launch"]).read_text(encoding="utf-8")
        for name, value in row.get("set", {}).items():
            base = _assigned(base, name, value)
        unsaid = row.get("unsaid", [])
        gpus = row["gpu"] if isinstance(row["gpu"], list) else [row["gpu"]]
        if "capacity_mib" in row:  # a device no --gpu name spells
            gpus = [*gpus, f"{row['capacity_mib']} MiB"]
        for run in row["runs"]:
            text = base
            for name, value in ((n, v) for n, v in run.items() if n != "outcome"):
                text = _assigned(text, name, value)
            for values in itertools.product(*(u["values"] for u in unsaid)):
                filled = {u["setting"]: v for u, v in zip(unsaid, values)}
                mine = _filled(text, filled)
                for gpu in gpus:
                    yield Run(row["name"], mine, gpu, row["workload"], run["outcome"] == "ran", {**filled, "gpu": gpu})


@pytest.fixture(scope="module")
def answers(snapshot: Path, packaged_verl: Path) -> list[tuple[Run, dict[str, Any]]]:
    import sys

    from huggingface_hub import constants

    sys.path.insert(0, str(packaged_verl))
    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True  # sizes from the release or the package's config.json facts
    try:
        context = load_context(snapshot)
        out = []
        for run in runs():
            plans = read_plans(run.text, kind="verl", workload=run.workload, source=snapshot)
            mib = run.gpu.removesuffix(" MiB")
            hardware = Hardware.of(int(mib), None) if mib.isdigit() else Hardware.of(None, None, gpu=run.gpu)
            (entry,) = document(advise(plans, snapshot, context=context, hardware=hardware))["configurations"]
            out.append((run, entry))
        return out
    finally:
        constants.HF_HUB_OFFLINE = offline
        sys.path.remove(str(packaged_verl))


def test_the_table_names_its_sources_devices_and_fillings() -> None:
    assert len(TABLE) >= 8 and {r["launch"] for r in TABLE} <= {p.name for p in OUTCOMES.glob("*.sh")}
    for row in TABLE:
        assert row["source"] and row["evidence"] and row["gpus"] >= 1 and row["runs"]
        assert row["gpu"] or (row["capacity_mib"] and row["capacity_why"]), row["name"]
        assert all(u["why"] and u["values"] for u in row["unsaid"])
    failed = sum(run["outcome"] == "out_of_memory" for row in TABLE for run in row["runs"])
    assert failed >= 15


def test_no_documented_failure_is_approved(answers: list[tuple[Run, dict[str, Any]]]) -> None:
    approved_failures, ran, approved_ran = [], 0, 0
    for run, entry in answers:
        verdict = entry["verdict"]
        approved = verdict["state"] == "within_margin" and not verdict["near_limit"]
        if run.ran:
            ran += 1
            approved_ran += approved
        elif approved:
            approved_failures.append((run.row, run.filled, entry["predicted_peak_mib"], entry.get("band_mib")))
    print(f"documented runs that ran: {approved_ran} of {ran} approved; failures approved: {len(approved_failures)}")
    assert not approved_failures, approved_failures[:3]
    assert len(answers) >= 80  # every filling of issue #3366 on both devices


def test_the_7b_tuning_search_at_101_prompts_is_not_approved_and_says_why(
    answers: list[tuple[Run, dict[str, Any]]],
) -> None:
    (entry,) = [e for r, e in answers if r.row == "verl-tuning-7b-1xh100" and "=101\n" in r.text.split("nnodes")[0]]
    verdict = entry["verdict"]
    assert verdict["state"] != "within_margin" or verdict["near_limit"]
    if verdict["near_limit"]:
        assert "near the limit" in verdict["sentence"] and "spans the margin 77,481 MiB" in verdict["sentence"]
        assert {p["part"] for p in entry["band"]["parts"]} >= {
            "in_domain",
            "model_not_calibrated",
            "device_not_measured",
        }
    # Ulysses is physics now: every run of the 72B search is answered, with its peak and band
    ulysses = [e for r, e in answers if r.row == "verl-tuning-72b-8xh100"]
    assert ulysses and all(e["verdict"]["state"] is not None and e["predicted_peak_mib"] for e in ulysses)


#: Each kind of run the model answers with physics the release measured none of, and the rows that document it.
KINDS = {
    "full fine-tuning with a reference model": ("verl-tuning-full-7b-2xh800", "verl-tuning-full-14b-4xh800"),
    "dynamic batch sizes": ("verl-tuning-full-72b-32xh800",),
    "Ulysses sequence parallelism": ("verl-tuning-14b-2xh100", "verl-tuning-32b-4xh100", "verl-tuning-72b-8xh100"),
    "Megatron": ("verl-tuning-megatron-32b-8xh20",),
    "a GAE critic": ("verl-issue-249-ppo-72b",),
}


def test_every_kind_of_stack_has_a_documented_outcome_answered_with_its_band(
    answers: list[tuple[Run, dict[str, Any]]],
) -> None:
    for kind, rows in KINDS.items():
        found = [e for r, e in answers if r.row in rows]
        assert found, kind
        for entry in found:
            assert entry["verdict"]["state"] is not None and entry["predicted_peak_mib"], (kind, entry["verdict"])
    critic = [e for r, e in answers if r.row == "verl-issue-249-ppo-72b"]
    assert len(critic) == 3 * 2**5 and all(e["verdict"]["state"] != "within_margin" for e in critic)
    assert all(any(p["phase"] == "critic_update" for p in e["phases"]) for e in critic)


def test_the_package_facts_are_the_launch_files(answers: list[tuple[Run, dict[str, Any]]]) -> None:
    """The band's device part is calibrated on :data:`~rlvrambench_hf.memory.documented.DOCUMENTED`: its plans say
    what the launch files say, setting by setting, under the same fillings."""
    keys = (
        *("gpu_count", "rollout_tp_size", "actor_micro_batch", "rollout_logprob_micro_batch", "train_batch_size"),
        *("vllm_gpu_memory_utilization", "parameter_offload", "optimizer_offload", "free_cache_engine"),
        *("max_prompt_length", "max_response_length", "max_model_len", "max_num_seqs", "rollout_n", "model_id"),
    )
    read = {}
    for run, entry in answers:
        if run.row in ("verl-tuning-7b-1xh100", "verl-issue-3366"):
            settings = entry["settings"]
            read.setdefault(run.row, []).append(
                (tuple(settings.get(k) for k in keys), settings.get("lora_rank"), run.gpu)
            )
    capacity = {"H100": 81559, "A100-80GB": 81920}
    facts: dict[str, list[Any]] = {}
    for documented in DOCUMENTED:
        row = "verl-issue-3366" if documented.name == "verl-issue-3366" else "verl-tuning-7b-1xh100"
        for plan in documented.plans():
            gpu = next(g for g, c in capacity.items() if c == plan["device_capacity_mib"])
            facts.setdefault(row, []).append((tuple(plan.get(k) for k in keys), plan.get("lora_rank"), gpu))
    for row in facts:
        assert sorted(map(str, facts[row])) == sorted(map(str, read[row])), row

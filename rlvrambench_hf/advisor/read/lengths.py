"""vLLM's context length when a config leaves it null, as the tool the run uses gives it to vLLM: VERL 0.7 and later
and TRL the model's own (``max_position_embeddings`` of its config.json), older VERL and EasyR1 prompt + response
(:mod:`.verl.versions`). The model's own is read from what is at hand without the network (the release's models, the
config.json facts this package ships, a local folder); where none is, the setting stays null and the answer reads
the model's config.json itself."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from .measured import Measured

_KEYS = {"VERL": "actor_rollout_ref.rollout.max_model_len", "EasyR1": "actor_rollout_ref.rollout.max_model_len",
         "TRL": "vllm_max_model_length"}  # fmt: skip
#: Marks a setting whose null means "the model's own context length" (the plan needs no value for it).
MODEL_CONTEXT = "the model's own context length"


def vllm_context(
    settings: MutableMapping[str, Any], sources: MutableMapping[str, str], config: Any, tool: str, measured: Measured
) -> None:
    """Set ``max_model_len`` (and its source) as ``tool`` reads a null ``max_model_len`` key."""
    from .verl.config import _ABSENT, lookup
    from .verl.versions import MODEL_CONTEXT_FROM, RELEASES

    key = _KEYS[tool]
    if "max_model_len" not in settings or sources.get("max_model_len") == "given setting":
        return
    if lookup(config.tree, key, config.origin) not in (None, _ABSENT):
        return
    prompt, response = settings.get("max_prompt_length"), settings.get("max_response_length")
    total = f"prompt + response = {settings.get('max_model_len')} tokens"
    if tool == "EasyR1":
        sources["max_model_len"] = f"not set: EasyR1 gives vLLM {total} (verl/workers/rollout/vllm_rollout_spmd.py)"
        return
    if tool == "TRL" and (config.tree.get("use_vllm") is not True or config.tree.get("vllm_mode") != "colocate"):
        return
    version = getattr(config, "version", None)
    if tool == "VERL" and version is not None and version.since(MODEL_CONTEXT_FROM) is False:
        sources["max_model_len"] = f"not set: {version.label} gives vLLM {total} (its vLLM rollout)"
        return
    who = "TRL" if tool == "TRL" else f"VERL {RELEASES[MODEL_CONTEXT_FROM]} and later"
    if prompt is None or response is None:
        return
    context, where = context_length(settings.get("model_id"), measured)
    settings["max_model_len"] = context
    if context is None:
        sources["max_model_len"] = f"not set: {who} give vLLM {MODEL_CONTEXT} (read from its config.json)"
    else:
        sources["max_model_len"] = (
            f"not set: {who} give vLLM {MODEL_CONTEXT}, max_position_embeddings {context:,} ({where})"
        )


def context_length(model: object, measured: Measured) -> tuple[int | None, str]:
    """The model's ``max_position_embeddings`` from what is at hand without the network, and where it is from."""
    if not isinstance(model, str):
        return None, ""
    from ...estimation.knownconfigs import KNOWN_CONFIGS
    from ...memory.architecture import CONTEXT_LENGTHS

    if model in CONTEXT_LENGTHS:
        return CONTEXT_LENGTHS[model], "its config.json, as the release's model metadata has it"
    known = KNOWN_CONFIGS.get(model, {}).get("max_position_embeddings")
    if isinstance(known, int):
        return known, "its config.json, as this package ships it"
    from .models import local_folder

    folder = local_folder(model)
    if folder is not None:
        import json

        from ...errors import RLVRAMBenchError
        from ...userfile import read_text

        try:
            config = json.loads(read_text(folder / "config.json", "model config", 4 << 20))
        except (RLVRAMBenchError, ValueError, RecursionError):  # unreadable here: the answer says why when it reads it
            return None, ""
        found = config.get("max_position_embeddings") if isinstance(config, dict) else None
        if isinstance(found, int) and not isinstance(found, bool) and 0 < found < 2**40:
            return found, f"{folder}/config.json"
    return None, ""

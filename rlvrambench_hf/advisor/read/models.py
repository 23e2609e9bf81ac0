"""Models as users name them: a Hub id, a local folder (``/root/models/Qwen/Qwen2.5-0.5B``), a folder named as a
measured model. The metadata itself (config.json and safetensors headers, from a folder here, the Hugging Face cache
offline or the Hub online; sizes from config.json's architecture when no weights are at hand) is read by
:mod:`rlvrambench_hf.estimation.hubmeta` (a folder's files within bounds: :mod:`~rlvrambench_hf.estimation.localmodel`);
this module decides what a written model path stands for.
"""

from __future__ import annotations

from pathlib import Path

from ...estimation.hubmeta import architecture_metadata, fetch_model_metadata, local_model_metadata
from ...estimation.localmodel import local_model_folder, read_local_model

__all__ = [
    "architecture_metadata",
    "fetch_model_metadata",
    "local_folder",
    "local_model_metadata",
    "model_of_path",
]


def local_folder(model: str) -> Path | None:
    """``model`` as a folder on this machine holding a ``config.json``, or None. Its config.json and safetensors
    headers are read here, within their bounds: a folder whose files cannot be read (a FIFO or a 3 GB file for a
    config.json, a header that lies about its length or its shapes, another user's file) is one line, exit 2,
    rather than a model without metadata."""
    folder = local_model_folder(model) if isinstance(model, str) else None
    if folder is not None:
        read_local_model(folder)
    return folder


def looks_local(path: str) -> bool:
    """Whether a model path is written as a file-system path rather than a Hub id (``owner/name``)."""
    return path.startswith(("/", "~", ".", "$")) or path.count("/") != 1


def model_of_path(path: str, measured: tuple[str, ...]) -> tuple[str, str | None]:
    """What a written model path stands for, and how it was read (None: as written).

    A measured model's id is itself; a folder here is itself (its config.json is read); a path not on this machine
    named as a measured model (``~/models/Qwen2.5-3B-Instruct``) is that model, and so is one named as a model whose
    config.json facts the package ships (``$HOME/models/Qwen2-7B-Instruct``: Qwen/Qwen2-7B-Instruct); a path not on
    this machine whose last two parts make a Hub id (``/root/models/Qwen/Qwen2.5-0.5B``) is that Hub id. Anything
    else is kept."""
    if path in measured or not looks_local(path) or local_folder(path) is not None:
        return path, None
    parts = [p for p in path.rstrip("/").split("/") if p]
    name = parts[-1].lower() if parts else ""
    matches = [m for m in measured if m.rsplit("/", 1)[-1].lower() == name]
    if len(matches) == 1:
        return matches[0], f"the folder {path} is named as the measured model {matches[0]}"
    from ...estimation.knownconfigs import KNOWN_CONFIGS

    known = [m for m in KNOWN_CONFIGS if m.rsplit("/", 1)[-1].lower() == name]
    if len(known) == 1 and (len(parts) < 2 or parts[-2].lower() != known[0].split("/")[0].lower()):
        return known[0], f"the folder {path} is not on this machine; named as the Hub model {known[0]}"
    if len(parts) >= 2 and _hub_id(f"{parts[-2]}/{parts[-1]}"):
        hub = f"{parts[-2]}/{parts[-1]}"
        return hub, f"the folder {path} is not on this machine; read as the Hub model {hub}"
    return path, None


def _hub_id(text: str) -> bool:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # public there, not re-exported in its typing

    try:
        validate_repo_id(text)
    except HFValidationError:
        return False
    return not text.startswith((".", "$", "~"))

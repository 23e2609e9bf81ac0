"""The dataset card of a release: YAML front matter generated from the registry, body from ``cards/``."""

from __future__ import annotations

from importlib import resources
from string import Template
from typing import Any

import yaml

from ..data.schema.pins import DEFAULT_REPO_ID, MARGIN_LIMIT_MIB, OUTCOME_LABELS, citation
from ..data.schema.registry import DEFAULT_CONFIG
from ..data.schema.spec import ConfigSpec
from .layout import BuiltConfig

TEMPLATE = "dataset_card.md"
#: Card metadata used when the source card does not state it.
DEFAULT_METADATA = {
    "pretty_name": "RLVRAMBench",
    "license": "mit",
    "language": ["en"],
    "tags": ["benchmark", "reinforcement-learning", "gpu-memory", "reproducibility", "resource-configuration"],
    "task_categories": ["other"],
}
#: Keys of the source card's metadata that a release carries over.
CARRIED_KEYS = ("pretty_name", "license", "language", "tags", "task_categories")


def load_template(name: str = TEMPLATE) -> str:
    return resources.files("rlvrambench_hf.cards").joinpath(name).read_text(encoding="utf-8")


def config_entries(built: list[BuiltConfig]) -> list[dict[str, Any]]:
    """The card's ``configs``: one data file per config and split; the registry's default first-class."""
    entries = []
    for b in built:
        entry: dict[str, Any] = {"config_name": b.spec.name}
        if b.spec.name == DEFAULT_CONFIG:
            entry["default"] = True
        entry["data_files"] = [{"split": b.spec.split, "path": b.path}]
        entries.append(entry)
    return entries


def dataset_info_entry(b: BuiltConfig) -> dict[str, Any]:
    """The card's ``dataset_info`` entry of a config, in the form ``datasets`` itself writes."""
    import datasets

    info = datasets.DatasetInfo(
        features=b.spec.features,
        splits=datasets.SplitDict(
            {b.spec.split: datasets.SplitInfo(b.spec.split, num_bytes=b.num_bytes, num_examples=b.num_examples)}
        ),
        download_size=b.file.size_bytes,
        dataset_size=b.num_bytes,
        config_name=b.spec.name,
    )
    body = info._to_yaml_dict()
    return {"config_name": b.spec.name, **{k: v for k, v in body.items() if k != "config_name"}}


def card_metadata(built: list[BuiltConfig], source_metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The complete YAML front matter of the card."""
    source_metadata = source_metadata or {}
    meta = {key: source_metadata.get(key, DEFAULT_METADATA[key]) for key in CARRIED_KEYS}
    meta["configs"] = config_entries(built)
    meta["dataset_info"] = [dataset_info_entry(b) for b in built]
    return meta


def render_card(
    built: list[BuiltConfig],
    *,
    version: str,
    provenance: str,
    absent: list[ConfigSpec],
    source_metadata: dict[str, Any] | None = None,
    repo_id: str = DEFAULT_REPO_ID,
) -> str:
    """The text of ``README.md``."""
    meta = card_metadata(built, source_metadata)
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
    body = Template(load_template()).substitute(
        pretty_name="RLVRAMBench",
        version=version,
        repo_id=repo_id,
        default_config=DEFAULT_CONFIG,
        config_table="\n".join(_config_row(b) for b in built),
        absent_note=_absent_note(absent),
        margin_limit=f"{MARGIN_LIMIT_MIB:,}",
        label_table="\n".join(_label_rows(built)),
        provenance=provenance,
        citation=citation(repo_id, release=version),
    )
    return f"---\n{front}---\n\n{body}"


def _config_row(b: BuiltConfig) -> str:
    keys = ", ".join(f"`{k}`" for k in b.spec.keys)
    return f"| `{b.spec.name}` | `{b.spec.split}` | {b.num_examples:,} | {keys} | {b.spec.description} |"


def _absent_note(absent: list[ConfigSpec]) -> str:
    if not absent:
        return ""
    names = ", ".join(f"`{s.name}` (`{s.path}`)" for s in absent)
    return (
        f"\nNot in this release, because the source revision lacks its file: {names}. It is added to the "
        "card as soon as a release carries that file.\n"
    )


def _label_rows(built: list[BuiltConfig]) -> list[str]:
    rows = []
    for b in built:
        for column in b.spec.label_columns:
            extra = column.labels[len(OUTCOME_LABELS) :]
            if extra:
                names = ", ".join(f"{len(OUTCOME_LABELS) + i}: `{n}`" for i, n in enumerate(extra))
                rows.append(f"| `{b.spec.name}` | `{column.name}` | {names} |")
    return rows

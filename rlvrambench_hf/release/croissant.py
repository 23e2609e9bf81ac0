"""Croissant (ML dataset metadata, JSON-LD) of a release: one record set per config, typed from the registry.

Label columns are text, the class names the Parquet files store; each references a small enumeration record set
that lists the class names with their class index (the order of the card's ``class_label`` features). Semicolon
lists are array fields of text.
"""

from __future__ import annotations

from typing import Any

from ..data.schema.kinds import LABEL
from ..data.schema.pins import DEFAULT_REPO_ID, citation
from ..data.schema.spec import Column
from .layout import BuiltConfig

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
_CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


def labels_record_set_id(config: str, column: str) -> str:
    return f"{config}.{column}.labels"


def render_croissant(
    built: list[BuiltConfig], *, version: str, date_published: str | None = None, repo_id: str = DEFAULT_REPO_ID
) -> dict[str, Any]:
    """The Croissant JSON-LD document of a release whose Parquet files are ``built``."""
    url = f"https://huggingface.co/datasets/{repo_id}"
    distribution = [
        {
            "@type": "cr:FileObject",
            "@id": b.path,
            "name": b.path,
            "description": f"Parquet file of config {b.spec.name}, split {b.spec.split}",
            "contentUrl": b.path,
            "contentSize": f"{b.file.size_bytes} B",
            "encodingFormat": "application/x-parquet",
            "sha256": b.file.sha256,
        }
        for b in built
    ]
    record_sets: list[dict[str, Any]] = []
    for b in built:
        for column in b.spec.label_columns:
            record_sets.append(_labels_record_set(b.spec.name, column))
        record_sets.append(_record_set(b))
    return {
        "@context": _CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": "RLVRAMBench",
        "description": (
            "Measured GPU-memory feasibility of colocated reinforcement-learning fine-tuning "
            "configurations of language models, with repeated outcome labels, transfer queries and "
            "an admission experiment."
        ),
        "license": "https://opensource.org/licenses/MIT",
        "url": url,
        "version": version,
        **({"datePublished": date_published} if date_published else {}),
        "citeAs": citation(repo_id),
        "creator": [
            {"@type": "sc:Person", "name": "Ondřej Kobza", "url": "https://orcid.org/0000-0002-0529-9860"},
            {"@type": "sc:Person", "name": "Jan Šedivý", "url": "https://orcid.org/0000-0003-0626-2303"},
        ],
        "keywords": ["benchmark", "reinforcement learning", "GPU memory", "reproducibility"],
        "distribution": distribution,
        "recordSet": record_sets,
    }


def _labels_record_set(config: str, column: Column) -> dict[str, Any]:
    rs = labels_record_set_id(config, column.name)
    return {
        "@type": "cr:RecordSet",
        "@id": rs,
        "name": rs,
        "description": f"Class names of {config}.{column.name} and their class index",
        "dataType": "sc:Enumeration",
        "key": {"@id": f"{rs}/name"},
        "field": [
            {"@type": "cr:Field", "@id": f"{rs}/index", "name": "index", "dataType": "sc:Integer"},
            {"@type": "cr:Field", "@id": f"{rs}/name", "name": "name", "dataType": "sc:Text"},
        ],
        "data": [{f"{rs}/index": i, f"{rs}/name": name} for i, name in enumerate(column.labels)],
    }


def _record_set(b: BuiltConfig) -> dict[str, Any]:
    name = b.spec.name
    fields = []
    for column in b.spec.columns:
        field: dict[str, Any] = {
            "@type": "cr:Field",
            "@id": f"{name}/{column.name}",
            "name": column.name,
            "description": column.description,
            "dataType": "sc:Text" if column.type is LABEL else column.type.croissant_type,
            "source": {"fileObject": {"@id": b.path}, "extract": {"column": column.name}},
        }
        if column.type.is_list:
            field["isArray"] = True
            field["arrayShape"] = "-1"
        if column.type is LABEL:
            field["references"] = {"field": {"@id": f"{labels_record_set_id(name, column.name)}/name"}}
        fields.append(field)
    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": f"{b.spec.description} (split {b.spec.split}, {b.num_examples} rows)",
        "key": [{"@id": f"{name}/{k}"} for k in b.spec.keys],
        "field": fields,
    }


def validate_croissant(path: str) -> list[str]:
    """Problems ``mlcroissant`` finds in a Croissant file (empty when it validates); warnings are included."""
    from ..errors import import_extra

    mlc = import_extra("mlcroissant", "release", "Croissant validation", "skip it with --no-croissant")
    try:
        dataset = mlc.Dataset(jsonld=path)
    except mlc.ValidationError as exc:
        return [line.strip("- ").strip() for line in str(exc).splitlines() if line.strip()]
    return [f"warning: {w}" for w in dataset.metadata.ctx.issues.warnings]

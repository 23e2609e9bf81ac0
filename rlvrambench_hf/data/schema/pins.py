"""What this version of the package pins about the release: where it lives, which commit, the benchmark's
constants and the article to cite. Nothing here describes a table (that is :mod:`.registry`)."""

from __future__ import annotations

#: The three prediction labels, in the fixed order every label column starts with.
OUTCOME_LABELS: tuple[str, ...] = ("within_margin", "above_margin", "memory_failure")
#: The label of an evaluation slot or configuration whose outcome is not established.
UNRESOLVED = "unresolved"
#: The per-device memory limit of the benchmark, in MiB (inclusive).
MARGIN_LIMIT_MIB = 38_912
#: The reported capacity of the benchmark's devices (40 GB A100), in MiB.
DEVICE_CAPACITY_MIB = 40_960
#: The training stack every configuration of the release ran (the card: GRPO with LoRA adapters). A table of
#: measured records that does not record these settings (the admission candidates) ran them too.
RELEASE_STACK: dict[str, str] = {"algorithm": "GRPO", "adaptation": "LoRA"}
#: Repository id of the dataset on the Hugging Face Hub.
DEFAULT_REPO_ID = "kobzaond/RLVRAMBench"
#: The environment variable that names the default source (a Hub repository id or a folder).
SOURCE_ENV = "RLVRAMBENCH_SOURCE"
#: The commit of the published release (``release.json``'s ``huggingface_revision``).
DEFAULT_REVISION = "68aa8e041b3248c2898ba8062c912e84a64b2c64"
#: The licence of the data (and of this package), as the Hub names it.
LICENSE = "mit"
#: Manifests that publish SHA-256 digests, as (manifest path, folder its names are relative to).
MANIFESTS: tuple[tuple[str, str], ...] = (
    ("benchmark/manifest.json", "benchmark"),
    ("benchmark/decision/results/manifest.json", "benchmark/decision/results"),
    ("benchmark/estimation/results/output_manifest.json", "benchmark/estimation/results"),
)
#: The dataset card of a release.
CARD_PATH = "README.md"
#: Title of the companion article, which the dataset card, Croissant and the metric cite.
ARTICLE_TITLE = (
    "Memory Feasibility in Colocated Language-Model Reinforcement Learning: A Failure-Aware Measurement Study"
)


def homepage(repo_id: str = DEFAULT_REPO_ID) -> str:
    """The Hub page of a dataset repository."""
    return f"https://huggingface.co/datasets/{repo_id}"


#: The dataset's page on the Hub.
HOMEPAGE = homepage()


def citation(repo_id: str = DEFAULT_REPO_ID, release: str | None = None) -> str:
    """The BibTeX entry of the article and dataset (``release``: the version a release card cites)."""
    published = f"Hugging Face dataset {repo_id}" + (f", release {release}" if release else "")
    return (
        "@misc{kobza2026rlvrambench,\n"
        f"  title        = {{{ARTICLE_TITLE}}},\n"
        "  author       = {Kobza, Ond{\\v{r}}ej and {\\v{S}}ediv{\\'y}, Jan},\n"
        "  year         = {2026},\n"
        f"  howpublished = {{{published}}},\n"
        f"  url          = {{{homepage(repo_id)}}}\n"
        "}"
    )

"""The seals of the release: JSON files that record the SHA-256 of other files when a study was frozen (data).

Every JSON file of the release that records digests of files is declared here, with each member that holds them:
a mapping of file names (relative to a folder of the repository) to digests, or one digest of a named file. Files
of the studies' code and training data are named too; the release does not carry them, so they are "listed but
absent". :mod:`rlvrambench_hf.data.sealed` checks the digests. Digests of files the release does not name (the
evidence archive's ledgers and scheduler lines in ``costs.json``, the models' ``config.json`` in
``model_metadata.json``) are not seals of release files and are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import UnknownConfigError, quote


@dataclass(frozen=True)
class SealedDigests:
    """A member of a seal file that records digests: a ``{name: sha256}`` mapping of files relative to ``folder``
    (``""``: the repository root), or, when ``file`` is given, the one digest of that file. ``outputs`` marks the
    outputs a study sealed (as opposed to its inputs and code)."""

    member: str
    folder: str = ""
    file: str | None = None
    outputs: bool = False


@dataclass(frozen=True)
class Seal:
    """A seal file of the release and the members of it that record digests."""

    path: str
    description: str
    digests: tuple[SealedDigests, ...]


_ESTIMATION, _HOST, _DECISION = "benchmark/estimation", "benchmark/host_capacity", "benchmark/decision"

SEALS: dict[str, Seal] = {
    seal.path: seal
    for seal in (
        Seal(
            f"{_ESTIMATION}/prediction_freeze.json",
            "the estimator comparison's predictions, frozen before the larger-model panel ran",
            (
                SealedDigests("files_sha256", _ESTIMATION, outputs=True),
                SealedDigests("effective_input_sha256"),
                SealedDigests("amendments_sha256", _ESTIMATION),
                SealedDigests("protocol_sha256", file=f"{_ESTIMATION}/protocol.json"),
                SealedDigests("implementation_sha256", file="memory_tuner/estimation_baselines.py"),
            ),
        ),
        Seal(
            f"{_HOST}/study_freeze.json",
            "the expanded-host follow-up, frozen before it ran",
            (
                SealedDigests("files_sha256", _HOST, outputs=True),
                SealedDigests("protocol_sha256", file=f"{_HOST}/protocol.json"),
                SealedDigests("original_prediction_seal_sha256", file=f"{_ESTIMATION}/prediction_freeze.json"),
            ),
        ),
        Seal(
            f"{_HOST}/protocol.json",
            "the expanded-host protocol",
            (
                SealedDigests("data_sha256"),
                SealedDigests("implementation_sha256"),
                SealedDigests("original_prediction_seal_sha256", file=f"{_ESTIMATION}/prediction_freeze.json"),
                SealedDigests("original_protocol_sha256", file=f"{_ESTIMATION}/protocol.json"),
            ),
        ),
        Seal(
            f"{_ESTIMATION}/protocol.json",
            "the estimator comparison's protocol",
            (SealedDigests("data_sha256"), SealedDigests("input_sha256")),
        ),
        Seal(
            f"{_ESTIMATION}/amendment-01.json",
            "the estimator comparison's amendment",
            (
                SealedDigests("base_protocol_sha256", file=f"{_ESTIMATION}/protocol.json"),
                SealedDigests("implementation_sha256"),
                SealedDigests("unchanged_inputs_verified_sha256"),
            ),
        ),
        Seal(
            f"{_DECISION}/protocol.json",
            "the admission panel's protocol",
            (
                SealedDigests("source_files_sha256"),
                SealedDigests("data_files_sha256"),
                SealedDigests("matrix_sha256", file=f"{_DECISION}/matrix.csv"),
                SealedDigests("implementation_sha256"),
            ),
        ),
        Seal(
            f"{_DECISION}/amendment-01.json",
            "the admission panel's prelaunch amendment",
            (
                SealedDigests("original_protocol_sha256", file=f"{_DECISION}/protocol.json"),
                SealedDigests("matrix_sha256_unchanged", file=f"{_DECISION}/matrix.csv"),
                SealedDigests("implementation_sha256"),
            ),
        ),
        Seal(
            f"{_DECISION}/submission.json",
            "the admission panel's submission record",
            (
                SealedDigests("matrix_sha256", file=f"{_DECISION}/matrix.csv"),
                SealedDigests("protocol_sha256", file=f"{_DECISION}/protocol.json"),
            ),
        ),
        Seal(
            f"{_DECISION}/results/collection_summary.json",
            "the admission panel's collection summary",
            (
                SealedDigests("matrix_sha256", file=f"{_DECISION}/matrix.csv"),
                SealedDigests("protocol_sha256", file=f"{_DECISION}/protocol.json"),
            ),
        ),
    )
}

#: The seals the estimator comparison checks before it reads its inputs.
ESTIMATION_SEALS = (
    f"{_ESTIMATION}/protocol.json",
    f"{_ESTIMATION}/amendment-01.json",
    f"{_ESTIMATION}/prediction_freeze.json",
)
#: The seals a follow-up study's config is scored under (its frozen predictions and protocol).
SEALS_OF_CONFIG: dict[str, tuple[str, ...]] = {
    "larger_model_configurations": (f"{_ESTIMATION}/prediction_freeze.json",),
    "expanded_host_configurations": (f"{_HOST}/study_freeze.json", f"{_HOST}/protocol.json"),
}


def get_seal(path: str) -> Seal:
    """The seal declared for ``path``; a one-line error names the known seals otherwise."""
    try:
        return SEALS[path]
    except KeyError:
        raise UnknownConfigError(f"no seal {quote(path)}; seals: {', '.join(SEALS)}") from None

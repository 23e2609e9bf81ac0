"""The seals of a release checked: every digest a seal records, against the file it names when that file is present.

:func:`seal_findings` lists one :class:`SealFinding` per sealed file (present and matching, corrupted, or listed but
absent, as the manifests' files are told apart); :func:`check_seals` raises the first mismatch as one line naming
the seal, the file and both digests. A seal file that is absent from the revision seals nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import IntegrityError, MissingFileError, RLVRAMBenchError
from .schema.seals import SEALS, Seal, SealedDigests
from .sources.base import Source, safe_relpath, sha256_file
from .sources.huberrors import is_unreachable

MATCHES, DIFFERS, ABSENT, UNREADABLE = "matches", "differs", "absent", "unreadable"
_DIGEST = re.compile(r"^[0-9a-fA-F]{64}$")


@dataclass(frozen=True)
class SealFinding:
    """One file a seal records: its status and both digests (``found`` is None unless the file is present)."""

    seal: str
    file: str
    status: str
    expected: str = ""
    found: str | None = None
    outputs: bool = False
    problem: str = ""  # for an unreadable seal or entry: what is wrong

    @property
    def message(self) -> str:
        """The finding in one line."""
        if self.status == DIFFERS:
            return f"seal {self.seal}: {self.file} has SHA-256 {self.found}, sealed as {self.expected}"
        if self.status == ABSENT:
            return f"seal {self.seal}: {self.file} is listed but absent from this revision"
        if self.status == UNREADABLE:
            return f"seal {self.seal}: {self.problem}"
        return f"seal {self.seal}: {self.file} matches"


def seal_findings(source: Source, seals: Iterable[str] | None = None) -> list[SealFinding]:
    """Every file that the seals at ``seals`` (all declared seals) record, checked in ``source``."""
    findings: list[SealFinding] = []
    digests: dict[str, str | None] = {}  # each file fetched and hashed once, however many seals record it
    for path in seals if seals is not None else SEALS:
        seal = SEALS[path]
        try:
            data = source.read_json(seal.path)
        except MissingFileError:
            continue
        except RLVRAMBenchError as exc:
            if is_unreachable(exc):  # about the connection, not the seal: said as such
                raise
            findings.append(SealFinding(seal.path, seal.path, UNREADABLE, problem=str(exc)))
            continue
        if not isinstance(data, dict):
            findings.append(SealFinding(seal.path, seal.path, UNREADABLE, problem="not a JSON object"))
            continue
        for member in seal.digests:
            findings += _member_findings(source, seal, member, data, digests)
    return findings


def check_seals(source: Source, seals: Iterable[str] | None = None) -> list[SealFinding]:
    """:func:`seal_findings`, raising the first mismatch or unreadable seal as a one-line :class:`IntegrityError`."""
    findings = seal_findings(source, seals)
    bad = [f for f in findings if f.status in (DIFFERS, UNREADABLE)]
    if bad:  # both digests in full: the line names nothing else that could be cut (the source is in the fields)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise IntegrityError(f"{bad[0].message}{more}", path=bad[0].file, **source.error_fields)
    return findings


def _member_findings(
    source: Source, seal: Seal, digests: SealedDigests, data: Mapping[str, object], known: dict[str, str | None]
) -> list[SealFinding]:
    value = data.get(digests.member)
    if value is None:
        return []  # a seal without this record seals nothing more
    if digests.file is not None:
        entries: Mapping[str, object] = {digests.file: value}
        folder = ""
    elif isinstance(value, Mapping):
        entries, folder = value, digests.folder
    else:
        problem = f"member {digests.member!r} is not a mapping of file names to SHA-256 digests"
        return [SealFinding(seal.path, seal.path, UNREADABLE, problem=problem)]
    out = []
    for name, digest in entries.items():
        where = f"{folder}/{name}" if folder else str(name)
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            problem = f"member {digests.member!r} records {digest!r} for {name!r}, not a SHA-256 digest"
            out.append(SealFinding(seal.path, where, UNREADABLE, problem=problem))
            continue
        rel = safe_relpath(where, f"seal {seal.path}")
        if rel not in known:
            known[rel] = _digest_of(source, rel)
        found = known[rel]
        status = ABSENT if found is None else MATCHES if found == digest.lower() else DIFFERS
        out.append(SealFinding(seal.path, rel, status, digest.lower(), found, digests.outputs))
    return out


def _digest_of(source: Source, rel: str) -> str | None:
    """The SHA-256 of the file ``rel`` of ``source``, or None when the revision lacks it."""
    try:
        return sha256_file(source.path(rel, verify=False))
    except MissingFileError:
        return None

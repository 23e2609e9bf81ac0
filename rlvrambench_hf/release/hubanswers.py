"""The Hub's answers to a push (:mod:`.push`), checked before they are used: the remote's state read within the bounds
of :mod:`~rlvrambench_hf.data.sources.hubnet` (the command's deadline, at most 8 MiB an answer), every field of an
answer checked, and an answer without the fields expected, of the wrong types, not JSON (an HTML page) or beyond the
bound one line naming the request and what was wrong, exit 2 — never a library's ``KeyError``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..data.sources.huberrors import endpoint, hub_errors
from ..data.sources.hubnet import HubTrafficError, hub_traffic
from ..data.sources.hubtraffic import CURRENT
from ..errors import RLVRAMBenchError, SourceError, first_line, quote

COMMIT_ID, SHA256 = re.compile(r"[0-9a-f]{40}"), re.compile(r"[0-9a-f]{64}")
#: What an answer of the Hub that is not what it must be raises inside the libraries (a field missing, a type).
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    blob_id: str
    sha256: str | None = None  # set for files stored in LFS


def remote_state(
    repo_id: str, revision: str, token: str | None = None, repo_type: str = "dataset"
) -> tuple[str, dict[str, RemoteFile]]:
    """The commit ``revision`` resolves to and the files it holds."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(token=token)
    with hub_answer("repository information", repo_id, revision, repo_type):
        commit = api.repo_info(repo_id, revision=revision, repo_type=repo_type).sha
        expect(isinstance(commit, str) and COMMIT_ID.fullmatch(commit), "commit", commit, "a 40-character commit id")
    files = {}
    with hub_answer("file list", repo_id, revision, repo_type):
        for entry in api.list_repo_tree(repo_id, revision=commit, recursive=True, repo_type=repo_type):
            if isinstance(entry, RepoFile):
                files[entry.path] = _remote_file(entry)
    return str(commit), files


def _remote_file(entry: Any) -> RemoteFile:
    """A file of the remote's list, each of its fields checked."""
    path, size, blob_id, lfs = entry.path, entry.size, entry.blob_id, entry.lfs
    expect(isinstance(path, str) and bool(path), "path", path, "a file path")
    expect(type(size) is int and size >= 0, f"size of {path}", size, "a number of bytes")
    expect(
        isinstance(blob_id, str) and COMMIT_ID.fullmatch(blob_id), f"object id of {path}", blob_id, "a git object id"
    )
    sha256 = lfs.sha256 if lfs is not None else None
    expect(
        sha256 is None or (isinstance(sha256, str) and SHA256.fullmatch(sha256)),
        f"LFS digest of {path}",
        sha256,
        "a SHA-256",
    )
    return RemoteFile(path, size, blob_id, sha256)


def expect(holds: object, what: str, value: object, expected: str) -> None:
    if not holds:
        raise _Malformed(f"its {what} is {quote(value)}, not {expected}")


class _Malformed(ValueError):
    """A Hub answer whose field is not what it must be."""


@contextlib.contextmanager
def hub_answer(
    what: str, repo_id: str, revision: str, repo_type: str = "dataset", *, bounded: bool = True
) -> Iterator[None]:
    """Ask the Hub for ``what`` (its request named so in errors): its Hub and network errors as
    :func:`~rlvrambench_hf.data.sources.huberrors.hub_errors` says, and an answer that is malformed — fields missing
    or of the wrong type, not JSON, beyond the bound of an answer — one line naming it. ``bounded``: within the
    command's deadline and the size bound of an answer (hubnet); else without them (uploads, the commit)."""
    scope = hub_traffic() if bounded else unbounded()
    try:
        with scope, hub_errors(repo_id, revision, repo_type=repo_type):
            yield
    except RLVRAMBenchError:
        raise
    except HubTrafficError as exc:
        if exc.unreachable:
            raise SourceError(f"{repo_id}: the Hub at {endpoint()} did not answer its {what} ({exc})") from None
        raise SourceError(
            f"{repo_id}: the Hub at {endpoint()} answered its {what} with more than it may ({exc})"
        ) from None
    except MALFORMED as exc:
        raise SourceError(
            f"{repo_id}: the Hub at {endpoint()} answered its {what} with {what_was_wrong(exc)}"
        ) from None


def what_was_wrong(exc: BaseException) -> str:
    if isinstance(exc, _Malformed):
        return f"an answer of the wrong shape: {exc}"
    if isinstance(exc, KeyError):
        return f"an answer without the field {quote(exc.args[0] if exc.args else '')}"
    if type(exc).__name__ == "JSONDecodeError":
        return "an answer that is not JSON (an HTML page, or text)"
    return f"an answer of the wrong shape ({first_line(exc, typed=True, limit=100)})"


@contextlib.contextmanager
def unbounded() -> Iterator[None]:
    """The block's exchanges outside the command's Hub traffic bounds (an upload takes as long as it takes)."""
    token = CURRENT.set(None)
    try:
        yield
    finally:
        CURRENT.reset(token)

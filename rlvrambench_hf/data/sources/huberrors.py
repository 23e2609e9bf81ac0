"""huggingface_hub and network exceptions as the package's one-line errors, mapped in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...errors import MissingFileError, RLVRAMBenchError, SourceError, first_line, redact
from .caches import cache_error
from .hubtraffic import HubTrafficError


def unreachable(message: str) -> SourceError:
    """The error for a file that is not cached while the Hub cannot be asked for it (offline, refused, unknown
    host, deadline): a fact about the connection, not about the file (:func:`is_unreachable` tells it)."""
    error = SourceError(message)
    error.unreachable = True  # type: ignore[attr-defined]
    return error


def is_unreachable(exc: BaseException) -> bool:
    return bool(getattr(exc, "unreachable", False)) and isinstance(exc, SourceError)


def endpoint() -> str:
    """The Hub server in use (``HF_ENDPOINT``, else huggingface.co), as messages name it (credentials redacted)."""
    from huggingface_hub import constants

    return redact(constants.ENDPOINT)


def missing_revision(repo_id: str, revision: str, *, repo_type: str = "dataset") -> SourceError:
    """The error for a revision the server does not have; the package's pinned release says how to choose another."""
    from ..schema.pins import DEFAULT_REVISION

    if revision == DEFAULT_REVISION:
        return SourceError(
            f"revision {revision!r} does not exist in {repo_id} on {endpoint()}: it is the release pinned by this "
            "version of rlvrambench-hf, which this server (a mirror?) lacks; choose another with --revision REV or "
            "RLVRAMBENCH_REVISION=REV (e.g. main)"
        )
    return SourceError(f"revision {revision!r} does not exist in {repo_type} repository {repo_id} on {endpoint()}")


def is_network_error(exc: BaseException) -> bool:
    """True for errors of the transport below huggingface_hub (sockets, httpx, httpcore), and for the bounded
    client's refusal to ask a server this command already found unreachable."""
    if isinstance(exc, HubTrafficError):
        return exc.unreachable
    return isinstance(exc, OSError) or type(exc).__module__.startswith(("httpx", "httpcore"))


def hub_error(
    exc: BaseException, repo_id: str, revision: str, *, what: str = "", repo_type: str = "dataset"
) -> RLVRAMBenchError | None:
    """The one-line error for ``exc`` raised while reaching ``repo_id@revision`` (``what``: the file or action),
    or None when ``exc`` is not a Hub or network error."""
    from huggingface_hub import errors as hf_errors

    where = f"{repo_id}@{revision}"
    if isinstance(exc, hf_errors.HFValidationError):
        return SourceError(f"{repo_id!r} is not a valid Hub {repo_type} repository name: {first_line(exc)}")
    if isinstance(exc, hf_errors.RevisionNotFoundError):
        return missing_revision(repo_id, revision, repo_type=repo_type)
    if isinstance(exc, hf_errors.RepositoryNotFoundError):
        return SourceError(f"{repo_type} repository {repo_id} not found (or not accessible with this token)")
    if isinstance(exc, hf_errors.EntryNotFoundError) and not isinstance(exc, hf_errors.LocalEntryNotFoundError):
        return MissingFileError(f"{what} is not in this revision ({where})")
    if isinstance(exc, hf_errors.HfHubHTTPError):
        return SourceError(f"{where}: {what + ': ' if what else ''}{first_line(exc)}")
    unwritable = cache_error(exc, ("hub",))
    if unwritable is not None:
        return unwritable.with_fields(repo_id=repo_id, revision=revision)
    if isinstance(exc, OSError) and exc.filename:  # the local cache, not the network
        return SourceError(f"{where}: cannot {'fetch ' + what if what else 'proceed'}: {exc.strerror}: {exc.filename}")
    if is_network_error(exc):
        action = f"fetch {what}" if what else "reach"
        return SourceError(f"{where}: cannot {action} from {endpoint()}: {first_line(exc)}")
    return None


@contextmanager
def hub_errors(repo_id: str, revision: str, *, what: str = "", repo_type: str = "dataset") -> Iterator[None]:
    """Re-raise Hub and network errors of the block as one-line package errors (others pass unchanged)."""
    try:
        yield
    except RLVRAMBenchError:
        raise
    except Exception as exc:
        mapped = hub_error(exc, repo_id, revision, what=what, repo_type=repo_type)
        if mapped is None:
            raise
        raise mapped from None

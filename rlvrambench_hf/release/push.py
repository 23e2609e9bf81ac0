"""Push a verified release folder to a Hub dataset repository as one atomic commit, with an optional tag.

The plan compares the folder with the remote revision file by file (SHA-256 for LFS files, the git blob id for
the others): files to add, to replace, to delete and unchanged. ``.gitattributes`` on the remote is kept.
Tokens come from huggingface_hub (``HF_TOKEN``, ``hf auth login``); they are never printed or written.
:func:`push_folder` is the verify-plan-commit path for any repository type (the metric's Space uses it too).

Every answer of the Hub is checked before it is used (:mod:`.hubanswers`): the remote's state is read within the
bounds of :mod:`~rlvrambench_hf.data.sources.hubnet`, and a malformed answer is one line naming the request and what
was wrong, exit 2. Uploads and the commit itself run without the command's deadline (a large release takes its
time); their answers are checked the same way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..data.sources.huberrors import endpoint, hub_error, is_network_error
from ..errors import InputError, SourceError, quote
from .hubanswers import COMMIT_ID, MALFORMED, RemoteFile, expect, hub_answer, remote_state, unbounded, what_was_wrong
from .layout import folder_files, git_blob_sha1
from .verify import check_release, read_record

if TYPE_CHECKING:  # pragma: no cover
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

#: Remote files a push never deletes.
KEPT_REMOTE_FILES = (".gitattributes",)
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class PushPlan:
    repo_id: str
    revision: str
    remote_commit: str | None
    add: list[str] = field(default_factory=list)
    replace: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.add or self.replace or self.delete)

    def as_json(self) -> dict[str, Any]:
        return {
            "repo_id": self.repo_id,
            "revision": self.revision,
            "remote_commit": self.remote_commit,
            "add": self.add,
            "replace": self.replace,
            "delete": self.delete,
            "unchanged": self.unchanged,
        }

    def describe(self) -> str:
        lines = [
            f"plan for {self.repo_id}@{self.revision} (remote commit {self.remote_commit or 'none'}): "
            f"{len(self.add)} to add, {len(self.replace)} to replace, {len(self.delete)} to delete, "
            f"{len(self.unchanged)} unchanged"
        ]
        for verb, paths in (("add", self.add), ("replace", self.replace), ("delete", self.delete)):
            lines += [f"  {verb:<8}{p}" for p in paths]
        return "\n".join(lines)


def _same(local: Path, remote: RemoteFile) -> bool:
    if remote.sha256 is not None:
        from ..data.sources.base import sha256_file

        return local.stat().st_size == remote.size and sha256_file(local) == remote.sha256
    return git_blob_sha1(local) == remote.blob_id


def plan_push(
    folder: str | os.PathLike[str],
    remote: dict[str, RemoteFile],
    *,
    repo_id: str,
    revision: str,
    remote_commit: str | None,
    prune: bool = True,
) -> PushPlan:
    """What a push of ``folder`` over the remote files ``remote`` would change (pure; no network); without
    ``prune``, remote files absent from ``folder`` are kept (the folder adds or replaces files only)."""
    folder = Path(folder)
    plan = PushPlan(repo_id, revision, remote_commit)
    local = folder_files(folder)
    for rel in local:
        theirs = remote.get(rel)
        if theirs is None:
            plan.add.append(rel)
        elif _same(folder / rel, theirs):
            plan.unchanged.append(rel)
        else:
            plan.replace.append(rel)
    plan.delete = sorted(set(remote) - set(local) - set(KEPT_REMOTE_FILES)) if prune else []
    return plan


def commit_operations(
    plan: PushPlan, folder: str | os.PathLike[str]
) -> list[CommitOperationAdd | CommitOperationDelete]:
    """The ``huggingface_hub`` operations of one commit carrying out ``plan``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    folder = Path(folder)
    ops: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(folder / rel))
        for rel in sorted(plan.add + plan.replace)
    ]
    ops += [CommitOperationDelete(path_in_repo=rel) for rel in plan.delete]
    return ops


def resolve_token(token: str | None = None) -> str:
    """A token for writing to the Hub, or a one-line :class:`InputError` saying how to provide one."""
    from huggingface_hub import get_token

    token = token or get_token()
    if not token:
        raise InputError("no Hugging Face token found: set HF_TOKEN or run `hf auth login` (push needs write access)")
    return token


@dataclass
class PushResult:
    plan: PushPlan
    commit_url: str | None = None
    commit: str | None = None
    tag: str | None = None
    created: bool = False


class PushOptions(TypedDict, total=False):
    """How a verified folder is committed (every key optional): ``revision`` (the branch, default main),
    ``create_pr``, ``tag`` (a tag for the new commit), ``message`` (the commit message), ``dry_run`` (plan only,
    no token needed), ``token`` and ``private`` (a repository that does not exist yet is created private)."""

    revision: str
    create_pr: bool
    tag: str | None
    message: str | None
    dry_run: bool
    token: str | None
    private: bool


def push_release(folder: str | os.PathLike[str], repo_id: str, **options: Unpack[PushOptions]) -> PushResult:
    """Verify the release ``folder``, plan against ``repo_id@revision`` and (unless ``dry_run``) commit it
    atomically to the Hub dataset repository, which is created first (private with ``private=True``) when it does
    not exist yet."""
    folder = Path(folder).expanduser()
    _check_tag(options.get("tag"))
    check_release(folder)
    version = read_record(folder).get("version")
    options["message"] = options.get("message") or f"Release {version}"
    create = {"private": True} if options.pop("private", False) else {}
    return push_folder(folder, repo_id, repo_type="dataset", create=create, **options)


def _check_tag(tag: str | None) -> None:
    if tag is not None and not _TAG.match(tag):
        raise InputError(f"tag {quote(tag)} is not a valid tag name (letters, digits, '.', '_', '-')")


def push_folder(
    folder: str | os.PathLike[str],
    repo_id: str,
    *,
    repo_type: str,
    create: dict[str, Any] | None = None,
    prune: bool = True,
    **options: Unpack[PushOptions],
) -> PushResult:
    """Plan an already verified ``folder`` against ``repo_id@revision`` (a ``repo_type`` repository) and, unless
    ``dry_run``, commit it as one atomic commit (then tag it). With ``create`` (keyword arguments of
    ``HfApi.create_repo``, e.g. a Space's SDK), a missing repository is planned as empty and created on commit.
    Without ``prune``, the remote files that ``folder`` lacks are kept (e.g. results added to a model repo).

    Everything that can be refused is refused before anything is uploaded: a bad or existing tag, a tag with
    ``create_pr``, a real push to a revision that is not a branch."""
    from huggingface_hub import HfApi

    folder = Path(folder).expanduser()
    revision, tag, dry_run = options.get("revision", "main"), options.get("tag"), options.get("dry_run", False)
    _check_tag(tag)
    if tag is not None and options.get("create_pr"):
        raise InputError(
            f"--tag {tag} cannot be combined with --create-pr: tag the release once the pull request is merged"
        )
    token = options.get("token") if dry_run else resolve_token(options.get("token"))
    api = HfApi(token=token)
    commit, remote, missing = _remote(api, token, repo_id, revision, repo_type, create is not None)
    if not missing:
        _check_refs(api, repo_id, revision, repo_type, tag=tag, branch_needed=not dry_run)
    elif revision != "main" and not dry_run:
        raise InputError(
            f"{repo_id} does not exist yet: a new repository has only the branch main, so push to main first "
            f"(not {quote(revision)})"
        )
    plan = plan_push(folder, remote, repo_id=repo_id, revision=revision, remote_commit=commit, prune=prune)
    result = PushResult(plan, tag=tag)
    if dry_run:
        return result
    with hub_answer("repository creation", repo_id, revision, repo_type, bounded=False):
        if missing:  # exist_ok: a repository created meanwhile by someone else is used as it is
            api.create_repo(repo_id, repo_type=repo_type, exist_ok=True, **(create or {}))
            result.created = True
    result.commit = commit
    if plan.has_changes:
        _commit(api, plan, folder, result, options, repo_type)
    if tag is not None:
        _tag(api, result, tag, options.get("message"), repo_type)
    return result


def _remote(
    api: HfApi, token: str | None, repo_id: str, revision: str, repo_type: str, may_create: bool
) -> tuple[str | None, dict[str, RemoteFile], bool]:
    """The remote commit and files, and whether the repository is missing (and may be created)."""
    try:
        commit, remote = remote_state(repo_id, revision, token, repo_type)
    except SourceError:
        with hub_answer("repository information", repo_id, revision, repo_type):
            if may_create and not api.repo_exists(repo_id, repo_type=repo_type):
                return None, {}, True
        raise
    return commit, remote, False


def _check_refs(
    api: HfApi, repo_id: str, revision: str, repo_type: str, *, tag: str | None, branch_needed: bool
) -> None:
    """Refuse an existing ``tag``, and (``branch_needed``) a ``revision`` that is neither a branch nor a pull
    request: a commit goes to a branch."""
    if tag is None and not branch_needed:
        return
    with hub_answer("refs", repo_id, revision, repo_type):
        refs = api.list_repo_refs(repo_id, repo_type=repo_type, include_pull_requests=revision.startswith("refs/pr/"))
        for ref in [*refs.branches, *refs.tags, *(refs.pull_requests or [])]:
            expect(isinstance(ref.name, str) and isinstance(ref.ref, str), "ref", ref.name, "a name")
    if tag is not None and any(t.name == tag for t in refs.tags):
        raise InputError(f"tag {tag} already exists in {repo_id}")
    branches = [b.name for b in refs.branches]
    if branch_needed and revision not in branches and not any(pr.ref == revision for pr in refs.pull_requests or []):
        raise InputError(
            f"--revision {quote(revision)} is not a branch of {repo_id} (branches: {', '.join(branches) or 'none'}); "
            "a push commits to a branch"
        )


def _commit(api: HfApi, plan: PushPlan, folder: Path, result: PushResult, options: PushOptions, repo_type: str) -> None:
    """One commit carrying out ``plan``, whose parent must still be the planned remote commit."""
    from huggingface_hub.errors import HfHubHTTPError

    where = f"{plan.repo_id}@{plan.revision}"
    again = (
        "a commit applies all of its changes or none, so run the same push again: it plans against the remote's head"
    )
    try:
        with unbounded():
            info = api.create_commit(
                plan.repo_id,
                commit_operations(plan, folder),
                commit_message=options.get("message") or "Update",
                revision=plan.revision,
                create_pr=options.get("create_pr", False),
                parent_commit=plan.remote_commit,
                repo_type=repo_type,
            )
        oid, url = info.oid, info.pr_url or info.commit_url
        expect(isinstance(oid, str) and COMMIT_ID.fullmatch(oid), "commit id", oid, "a 40-character commit id")
        expect(isinstance(url, str), "commit URL", url, "a URL")
    except Exception as exc:
        cause = _hub_cause(exc, HfHubHTTPError)
        if cause is None and isinstance(exc, MALFORMED):
            raise SourceError(
                f"{plan.repo_id}: the Hub at {endpoint()} answered the commit to {where} with {what_was_wrong(exc)};"
                " the commit may have been made: run the same push again, it plans against the remote's head",
                repo_id=plan.repo_id,
            ) from None
        if cause is None:
            raise
        status = getattr(getattr(cause, "response", None), "status_code", None)
        if status == 412:
            raise SourceError(
                f"{where} moved after the plan (planned against commit {plan.remote_commit}): nothing was "
                "committed; run the push again to plan against its new head",
                repo_id=plan.repo_id,
                revision=plan.revision,
            ) from None
        raise SourceError(f"push to {where} failed: {_reason(cause)}; {again}", repo_id=plan.repo_id) from None
    result.commit, result.commit_url = oid, url


def _tag(api: HfApi, result: PushResult, tag: str, message: str | None, repo_type: str) -> None:
    plan = result.plan
    try:
        with unbounded():
            api.create_tag(plan.repo_id, tag=tag, revision=result.commit, repo_type=repo_type, tag_message=message)
    except Exception as exc:
        if not is_network_error(exc) and hub_error(exc, plan.repo_id, plan.revision) is None:
            raise
        done = f"committed {result.commit}, but" if plan.has_changes else "nothing to commit, but"
        raise SourceError(
            f"{plan.repo_id}: {done} tag {tag} could not be created ({_reason(exc)}); run the same push again to "
            "tag it",
            repo_id=plan.repo_id,
        ) from None


def _hub_cause(exc: BaseException, http_error: type[BaseException]) -> BaseException | None:
    """The Hub or network error behind ``exc`` (huggingface_hub wraps a failed LFS upload in a RuntimeError), or
    None when there is none."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, http_error) or is_network_error(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _reason(exc: BaseException) -> str:
    """A Hub or network error in a few words: the HTTP status and what the server said, or the transport's
    first line."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is None:
        return f"the connection to {endpoint()} failed ({type(exc).__name__})"
    said = getattr(exc, "server_message", None)
    said = f" ({said[:200]!r})" if isinstance(said, str) and said.strip() else ""
    if status in (401, 403):
        return f"the server answered {status}{said}: the token in use cannot write to this repository"
    return f"the server answered {status}{said}"

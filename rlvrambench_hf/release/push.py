"""Push a verified release folder to a Hub dataset repository as one atomic commit, with an optional tag.

The plan compares the folder with the remote revision file by file (SHA-256 for LFS files, the git blob id for
the others): files to add, to replace, to delete and unchanged. ``.gitattributes`` on the remote is kept.
Tokens come from huggingface_hub (``HF_TOKEN``, ``hf auth login``); they are never printed or written.
:func:`push_folder` is the verify-plan-commit path for any repository type (the metric's Space uses it too).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, Unpack

from ..data.sources.huberrors import hub_errors
from ..errors import InputError, SourceError, quote
from .layout import folder_files, git_blob_sha1
from .verify import check_release, read_record

#: Remote files a push never deletes.
KEPT_REMOTE_FILES = (".gitattributes",)
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    blob_id: str
    sha256: str | None = None  # set for files stored in LFS


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

    def as_json(self) -> dict:
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
    folder: str | os.PathLike, remote: dict[str, RemoteFile], *, repo_id: str, revision: str, remote_commit: str | None
) -> PushPlan:
    """What a push of ``folder`` over the remote files ``remote`` would change (pure; no network)."""
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
    plan.delete = sorted(set(remote) - set(local) - set(KEPT_REMOTE_FILES))
    return plan


def commit_operations(plan: PushPlan, folder: str | os.PathLike) -> list:
    """The ``huggingface_hub`` operations of one commit carrying out ``plan``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    folder = Path(folder)
    ops: list = [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(folder / rel))
        for rel in sorted(plan.add + plan.replace)
    ]
    ops += [CommitOperationDelete(path_in_repo=rel) for rel in plan.delete]
    return ops


def remote_state(
    repo_id: str, revision: str, token: str | None = None, repo_type: str = "dataset"
) -> tuple[str, dict[str, RemoteFile]]:
    """The commit ``revision`` resolves to and the files it holds."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(token=token)
    with hub_errors(repo_id, revision, repo_type=repo_type):
        commit = str(api.repo_info(repo_id, revision=revision, repo_type=repo_type).sha)
        entries = api.list_repo_tree(repo_id, revision=commit, recursive=True, repo_type=repo_type)
        files = {}
        for entry in entries:
            if isinstance(entry, RepoFile):
                lfs = entry.lfs
                files[entry.path] = RemoteFile(
                    entry.path, entry.size, entry.blob_id, lfs.sha256 if lfs is not None else None
                )
    return commit, files


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


class PushOptions(TypedDict, total=False):
    """How a verified folder is committed (every key optional): ``revision`` (the branch, default main),
    ``create_pr``, ``tag`` (a tag for the new commit), ``message`` (the commit message), ``dry_run`` (plan only,
    no token needed) and ``token``."""

    revision: str
    create_pr: bool
    tag: str | None
    message: str | None
    dry_run: bool
    token: str | None


def push_release(folder: str | os.PathLike, repo_id: str, **options: Unpack[PushOptions]) -> PushResult:
    """Verify the release ``folder``, plan against ``repo_id@revision`` and (unless ``dry_run``) commit it
    atomically to the Hub dataset repository."""
    folder = Path(folder).expanduser()
    _check_tag(options.get("tag"))
    check_release(folder)
    version = read_record(folder).get("version")
    options["message"] = options.get("message") or f"Release {version}"
    return push_folder(folder, repo_id, repo_type="dataset", **options)


def _check_tag(tag: str | None) -> None:
    if tag is not None and not _TAG.match(tag):
        raise InputError(f"tag {quote(tag)} is not a valid tag name (letters, digits, '.', '_', '-')")


def push_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    repo_type: str,
    create: dict | None = None,
    **options: Unpack[PushOptions],
) -> PushResult:
    """Plan an already verified ``folder`` against ``repo_id@revision`` (a ``repo_type`` repository) and, unless
    ``dry_run``, commit it as one atomic commit (then tag it). With ``create`` (keyword arguments of
    ``HfApi.create_repo``, e.g. a Space's SDK), a missing repository is planned as empty and created on commit."""
    from huggingface_hub import HfApi

    folder = Path(folder).expanduser()
    revision, tag, dry_run = options.get("revision", "main"), options.get("tag"), options.get("dry_run", False)
    _check_tag(tag)
    token = options.get("token") if dry_run else resolve_token(options.get("token"))
    api = HfApi(token=token)
    missing = False
    try:
        commit, remote = remote_state(repo_id, revision, token, repo_type)
    except SourceError:
        with hub_errors(repo_id, revision, repo_type=repo_type):
            missing = create is not None and not api.repo_exists(repo_id, repo_type=repo_type)
        if not missing:
            raise
        commit, remote = None, {}
    if tag is not None and not missing:
        with hub_errors(repo_id, revision, repo_type=repo_type):
            refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        if any(t.name == tag for t in refs.tags):
            raise InputError(f"tag {tag} already exists in {repo_id}")
    plan = plan_push(folder, remote, repo_id=repo_id, revision=revision, remote_commit=commit)
    result = PushResult(plan, tag=tag)
    if dry_run:
        return result
    with hub_errors(repo_id, revision, repo_type=repo_type):
        if missing:
            api.create_repo(repo_id, repo_type=repo_type, **(create or {}))
        if plan.has_changes:
            info = api.create_commit(
                repo_id,
                commit_operations(plan, folder),
                commit_message=options.get("message") or "Update",
                revision=revision,
                create_pr=options.get("create_pr", False),
                parent_commit=commit,
                repo_type=repo_type,
            )
            result.commit, result.commit_url = info.oid, info.pr_url or info.commit_url
        else:
            result.commit = commit
        if tag is not None:
            api.create_tag(
                repo_id, tag=tag, revision=result.commit, repo_type=repo_type, tag_message=options.get("message")
            )
    return result

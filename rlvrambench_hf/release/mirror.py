"""Publish a verified release folder into a local git repository laid out as an olah mirror.

olah serves ``<mirrors>/datasets/<org>/<name>`` git repositories as Hub datasets. The folder becomes one new
commit on the branch (its tree is exactly the folder) and the tag points at it; both references move in one
git transaction, so a failure leaves the mirror as it was. The mirror's work tree is brought up to date when
the branch is checked out.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, SourceError, quote
from .verify import check_release, read_record


@dataclass(frozen=True)
class MirrorResult:
    repo: Path
    branch: str
    commit: str
    previous: str | None
    tag: str
    changed: bool  # False when the branch already held exactly this folder (only the tag was added)


def _git(
    repo: Path, *args: str, env: dict[str, Any] | None = None, stdin: str | None = None, check: bool = True
) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, input=stdin, env={**os.environ, **(env or {})}
    )
    if check and done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise SourceError(f"git {args[0]} in {repo}: {detail}")
    return done.stdout.strip()


def _identity(repo: Path) -> dict[str, str]:
    """Committer identity: the user's git configuration, else a fixed local one."""
    env: dict[str, str] = {}
    if not _git(repo, "config", "--get", "user.name", check=False):
        env.update(GIT_AUTHOR_NAME="rlvrambench-hf", GIT_COMMITTER_NAME="rlvrambench-hf")
    if not _git(repo, "config", "--get", "user.email", check=False):
        env.update(GIT_AUTHOR_EMAIL="rlvrambench-hf@localhost", GIT_COMMITTER_EMAIL="rlvrambench-hf@localhost")
    return env


def _open_mirror(mirror: Path, branch: str) -> Path:
    if not mirror.exists():
        mirror.mkdir(parents=True)
        _git(mirror, "init", "-q", "-b", branch)
        return mirror
    if not mirror.is_dir():
        raise InputError(f"mirror {mirror} is not a folder")
    top = _git(mirror, "rev-parse", "--show-toplevel", check=False)
    if not top or Path(top).resolve() != mirror.resolve():
        raise InputError(f"mirror {mirror} is not the top of a git work tree (olah serves non-bare repositories)")
    return mirror


def publish_mirror(
    folder: str | os.PathLike[str],
    mirror: str | os.PathLike[str],
    tag: str,
    *,
    branch: str = "main",
    message: str | None = None,
) -> MirrorResult:
    """Commit the verified release ``folder`` into the git repository ``mirror`` on ``branch`` and tag it."""
    folder = Path(folder).expanduser().resolve()
    mirror = Path(mirror).expanduser().absolute()
    check_release(folder)
    version = read_record(folder).get("version")
    for kind, name in (("tags", tag), ("heads", branch)):
        if subprocess.run(["git", "check-ref-format", f"refs/{kind}/{name}"], capture_output=True).returncode:
            raise InputError(f"{quote(name)} is not a valid git {kind[:-1] if kind == 'tags' else 'branch'} name")
    repo = _open_mirror(mirror, branch)
    if _git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{tag}", check=False):
        raise InputError(f"tag {tag} already exists in the mirror {repo}")
    previous = _git(repo, "rev-parse", "-q", "--verify", f"refs/heads/{branch}^{{commit}}", check=False) or None
    checked_out = _git(repo, "symbolic-ref", "-q", "HEAD", check=False) == f"refs/heads/{branch}"
    if previous and checked_out and _git(repo, "status", "--porcelain", "--untracked-files=no"):
        raise InputError(f"mirror {repo} has uncommitted changes on {branch}; commit or discard them first")

    with tempfile.TemporaryDirectory(prefix="rlvrambench-mirror-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, f"--work-tree={folder}", "add", "-A", "-f", ".", env=index)
        tree = _git(repo, "write-tree", env=index)
    changed = previous is None or tree != _git(repo, "rev-parse", f"{previous}^{{tree}}")
    if changed:
        parents = ["-p", previous] if previous else []
        commit = _git(repo, "commit-tree", tree, *parents, "-m", message or f"Release {version}", env=_identity(repo))
    else:
        commit = str(previous)  # an unchanged tree has a previous commit
    old = previous or "0" * 40
    _git(
        repo,
        "update-ref",
        "--stdin",
        stdin=f"start\nupdate refs/heads/{branch} {commit} {old}\ncreate refs/tags/{tag} {commit}\nprepare\ncommit\n",
    )
    if changed and checked_out:
        if previous:
            _git(repo, "read-tree", "-m", "-u", previous, commit)
        else:
            _git(repo, "read-tree", "--reset", "-u", commit)
    return MirrorResult(repo, branch, commit, previous, tag, changed)

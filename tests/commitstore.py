"""The storage behind the tests' commit server: one bare git repository per Hub repository, plus an LFS store.

Files stored in LFS are kept as the Hub keeps them: the git tree holds a pointer (``version https://git-lfs...``,
``oid sha256:...``, ``size ...``) and the content lives in the repository's LFS store under its SHA-256.
Commits are made with git plumbing on a temporary index and published with ``git update-ref NEW OLD``, a
compare-and-swap: a commit whose parent is no longer the branch head is refused, and a commit that stops
half-way moves no reference.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
import zlib
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

LFS_POINTER = re.compile(rb"^version https://git-lfs.github.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize ([0-9]+)\n$")
#: What a new repository's first commit holds, as on the Hub: the LFS patterns of its ``.gitattributes``.
DEFAULT_LFS_PATTERNS = ("*.parquet", "*.arrow", "*.bin", "*.safetensors", "*.pt", "*.zip", "*.gz", "*.tar")
#: Files at least this large are stored in LFS whatever their name (the Hub's rule for regular files is 10 MiB).
LFS_THRESHOLD = 10 * 1024 * 1024
ZERO = "0" * 40
_ENV = {
    "GIT_AUTHOR_NAME": "commit-server",
    "GIT_AUTHOR_EMAIL": "server@localhost",
    "GIT_COMMITTER_NAME": "commit-server",
    "GIT_COMMITTER_EMAIL": "server@localhost",
}


class StoreError(Exception):
    """A refused operation: ``status`` and ``code`` are the HTTP status and the Hub's ``X-Error-Code``."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def gitattributes(patterns: tuple[str, ...] = DEFAULT_LFS_PATTERNS) -> bytes:
    return "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in patterns).encode()


@dataclass(frozen=True)
class Entry:
    """A file or folder of a commit, as the Hub's tree API describes it."""

    path: str
    kind: str  # "file" or "directory"
    oid: str  # the git blob (the pointer, for an LFS file) or tree id
    size: int = 0  # the content's size (the LFS object's, for an LFS file)
    lfs_oid: str | None = None
    pointer_size: int = 0

    def as_json(self) -> dict:
        if self.kind == "directory":
            return {"type": "directory", "oid": self.oid, "path": self.path}
        out: dict = {"type": "file", "oid": self.oid, "size": self.size, "path": self.path}
        if self.lfs_oid:
            out["lfs"] = {"oid": self.lfs_oid, "size": self.size, "pointerSize": self.pointer_size}
        return out


@dataclass
class Operation:
    """One line of a commit: ``add`` (``content`` bytes, or an LFS object ``lfs_oid``), ``delete`` or
    ``delete_folder``."""

    kind: str
    path: str
    content: bytes | None = None
    lfs_oid: str | None = None


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    git_dir: Path
    lfs_dir: Path
    sdk: str | None = None
    _pointers: dict[str, tuple[str, int] | None] = field(default_factory=dict, repr=False)

    def git(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args],
            input=stdin,
            capture_output=True,
            env={**os.environ, **_ENV, **(env or {})},
        )
        if done.returncode != 0:
            raise StoreError(500, f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode()

    # ------------------------------------------------------------------ reading

    def resolve(self, revision: str) -> str | None:
        """The commit a branch, tag, ``refs/pr/N`` or commit id names (None: no such revision)."""
        if not revision or revision.startswith("-") or ".." in revision:
            return None
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "--verify", "-q", f"{revision}^{{commit}}"],
            capture_output=True,
            text=True,
        )
        found = done.stdout.strip()
        if done.returncode != 0 or not found:
            return None
        if re.fullmatch(r"[0-9a-f]{4,40}", revision) and not found.startswith(revision):
            return None
        return found

    def branch_head(self, branch: str) -> str | None:
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "--verify", "-q", ref], capture_output=True, text=True
        )
        return done.stdout.strip() or None

    def entries(self, commit: str, path: str = "", *, recursive: bool = False) -> list[Entry] | None:
        """The entries under ``path`` (None when ``path`` is not a folder of ``commit``)."""
        if path:
            found = self.entry(commit, path)
            if found is None or found.kind != "directory":
                return None
        args = ["ls-tree", "-l", "-z", "-t"] + (["-r"] if recursive else [])
        out = self.git(*args, f"{commit}:{path}" if path else commit)
        prefix = f"{path}/" if path else ""
        return [self._entry(line, prefix) for line in out.split("\0") if line]

    def entry(self, commit: str, path: str) -> Entry | None:
        """The file or folder ``path`` of ``commit`` (None when there is none)."""
        path = path.strip("/")
        if not path:
            return None
        lines = [line for line in self.git("ls-tree", "-l", "-z", commit, "--", path).split("\0") if line]
        return self._entry(lines[0], "") if lines else None

    def _entry(self, line: str, prefix: str) -> Entry:
        meta, name = line.split("\t", 1)
        _mode, kind, oid, size = meta.split()
        if kind == "tree":
            return Entry(prefix + name, "directory", oid)
        pointer = self.pointer(oid, int(size))
        if pointer is None:
            return Entry(prefix + name, "file", oid, int(size))
        return Entry(prefix + name, "file", oid, pointer[1], pointer[0], int(size))

    def pointer(self, blob: str, size: int) -> tuple[str, int] | None:
        """The (SHA-256, size) of the LFS object a blob points at, or None for a regular file."""
        if blob not in self._pointers:
            found = LFS_POINTER.match(self.blob(blob)) if size < 200 else None
            self._pointers[blob] = (found.group(1).decode(), int(found.group(2))) if found else None
        return self._pointers[blob]

    def blob(self, oid: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "cat-file", "blob", oid], capture_output=True, check=True
        ).stdout

    def lfs_path(self, sha256: str) -> Path:
        return self.lfs_dir / sha256[:2] / sha256

    def files(self, commit: str) -> list[Entry]:
        return [e for e in self.entries(commit, recursive=True) or [] if e.kind == "file"]

    def refs(self) -> dict[str, list[dict]]:
        out = self.git("for-each-ref", "--format=%(refname)%09%(objectname)%09%(*objectname)")
        found: dict[str, list[dict]] = {"branches": [], "tags": [], "converts": [], "pullRequests": []}
        for line in out.splitlines():
            ref, target, peeled = (line.split("\t") + [""])[:3]
            for prefix, kind in (("refs/heads/", "branches"), ("refs/tags/", "tags"), ("refs/pr/", "pullRequests")):
                if ref.startswith(prefix):
                    found[kind].append({"name": ref[len(prefix) :], "ref": ref, "targetCommit": peeled or target})
        return found

    # ------------------------------------------------------------------ writing

    def write_blob(self, data: bytes) -> str:
        """Store ``data`` as a loose git object; its id."""
        body = b"blob %d\0" % len(data) + data
        oid = hashlib.sha1(body).hexdigest()
        path = self.git_dir / "objects" / oid[:2] / oid[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
                handle.write(zlib.compress(body))
            os.replace(handle.name, path)
        return oid

    def upload_mode(self, commit: str | None, path: str, size: int) -> str:
        """``lfs`` or ``regular``, by the ``.gitattributes`` of ``commit`` and the size threshold."""
        if size >= LFS_THRESHOLD:
            return "lfs"
        patterns: list[str] = []
        if commit is not None:
            attributes = self.entry(commit, ".gitattributes")
            if attributes is not None and attributes.lfs_oid is None:
                text = self.blob(attributes.oid).decode("utf-8", "replace")
                patterns = [line.split()[0] for line in text.splitlines() if "filter=lfs" in line]
        name = path.rsplit("/", 1)[-1]
        return "lfs" if any(fnmatch(name, p) or fnmatch(path, p) for p in patterns) else "regular"

    def make_commit(
        self, parent: str | None, operations: list[Operation], message: str, *, stop_half_way: bool = False
    ) -> str:
        """A commit of ``operations`` on top of ``parent`` (no reference moves). ``stop_half_way`` writes the
        objects of the first half of the additions and raises, as a server that dies in the middle would."""
        with tempfile.TemporaryDirectory() as work:
            env = {"GIT_INDEX_FILE": str(Path(work) / "index")}
            self.git("read-tree", parent, env=env) if parent else self.git("read-tree", "--empty", env=env)
            present = {e.path for e in self.files(parent)} if parent else set()
            lines = []
            additions = [op for op in operations if op.kind == "add"]
            for op in operations:
                if stop_half_way and op.kind == "add" and additions.index(op) >= len(additions) // 2:
                    raise ConnectionAbortedError("the server stopped in the middle of the commit")
                lines += self._index_lines(op, present)
            self.git("update-index", "--index-info", stdin="".join(lines).encode(), env=env)
            tree = self.git("write-tree", env=env).strip()
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        return self.git(*args).strip()

    def _index_lines(self, op: Operation, present: set[str]) -> list[str]:
        if op.kind == "add":
            if op.lfs_oid is not None:
                path = self.lfs_path(op.lfs_oid)
                if not path.is_file():
                    raise StoreError(422, f"LFS object {op.lfs_oid} of {op.path} was never uploaded")
                data = lfs_pointer(op.lfs_oid, path.stat().st_size)
            else:
                data = op.content or b""
            present.add(op.path)
            return [f"100644 {self.write_blob(data)}\t{op.path}\n"]
        if op.kind == "delete":
            if op.path not in present:
                raise StoreError(404, f"cannot delete {op.path}: no such file", "EntryNotFound")
            present.discard(op.path)
            return [f"0 {ZERO}\t{op.path}\n"]
        gone = [p for p in present if p.startswith(op.path.rstrip("/") + "/")]
        if not gone:
            raise StoreError(404, f"cannot delete folder {op.path}: no such folder", "EntryNotFound")
        present.difference_update(gone)
        return [f"0 {ZERO}\t{p}\n" for p in gone]

    def move_ref(self, ref: str, new: str, old: str | None) -> bool:
        """Point ``ref`` at ``new`` if it still points at ``old`` (None: if it does not exist); whether it moved."""
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "update-ref", ref, new, old or ZERO], capture_output=True
        )
        return done.returncode == 0


class Store:
    """Every repository of the server under ``root``, created on demand."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.lock = threading.RLock()  # one write at a time, as a reference update is on the Hub
        self._repos: dict[tuple[str, str], Repo] = {}

    def get(self, repo_type: str, repo_id: str) -> Repo | None:
        key = (repo_type, repo_id)
        if key not in self._repos:
            git_dir = self.root / f"{repo_type}s" / f"{repo_id}.git"
            if not (git_dir / "HEAD").is_file():
                return None
            self._repos[key] = Repo(repo_type, repo_id, git_dir, self.root / "lfs" / f"{repo_type}s" / repo_id)
        return self._repos[key]

    def create(self, repo_type: str, repo_id: str, *, sdk: str | None = None) -> Repo:
        """A new repository whose first commit holds the Hub's ``.gitattributes``."""
        with self.lock:
            if self.get(repo_type, repo_id) is not None:
                raise StoreError(409, f"You already created this {repo_type} repo")
            git_dir = self.root / f"{repo_type}s" / f"{repo_id}.git"
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(git_dir)], check=True)
            repo = self.get(repo_type, repo_id)
            assert repo is not None
            repo.sdk = sdk
            first = repo.make_commit(None, [Operation("add", ".gitattributes", gitattributes())], "initial commit")
            repo.move_ref("refs/heads/main", first, None)
            return repo

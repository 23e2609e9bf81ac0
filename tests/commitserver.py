"""A Hub-protocol server for the tests that accepts commits: what huggingface_hub 2.4 calls to create repositories,
commit, upload LFS objects and tag, and what it, ``datasets`` and the package call to read them back.

No maintained PyPI package does this (olah, the mirror the other tests use, serves reads only), so this is a small
stdlib ``http.server`` over :mod:`commitstore` (bare git repositories and an LFS store). It runs in a thread on a
loopback port; point clients at it with ``HF_ENDPOINT`` (and ``HF_HUB_DISABLE_XET=1``: it speaks the LFS transfer
protocol, not Xet). Endpoints, as huggingface_hub's ``hf_api.py``, ``_commit_api.py``, ``lfs.py`` and
``file_download.py`` use them:

- ``POST /api/repos/create``; ``POST /api/validate-yaml``;
- ``GET /api/{type}s/{repo}[/revision/{rev}]`` (repo info), ``.../tree/{rev}[/{path}]``, ``.../refs``,
  ``POST .../paths-info/{rev}``;
- ``POST .../preupload/{rev}`` (LFS by ``.gitattributes`` pattern or size), ``POST /{prefix}{repo}.git/info/lfs/
  objects/batch`` (basic transfer), ``PUT /lfs/{type}s/{repo}/{oid}`` and ``POST .../{oid}/verify`` on the
  storage origin (objects are kept per repository, as the batch API is);
- ``POST .../commit/{rev}`` (NDJSON; ``parentCommit`` must be the branch head, else 412 as on the Hub;
  ``create_pr=1`` makes ``refs/pr/N``), ``POST .../tag/{rev}`` (409 for an existing tag);
- ``GET|HEAD /{prefix}{repo}/resolve/{rev}/{path}`` with ``ETag`` / ``X-Repo-Commit``, LFS files by a redirect
  carrying ``X-Linked-Etag`` / ``X-Linked-Size``, and HTTP ``Range``.

Faults for the tests: :meth:`CommitServer.break_next` makes the next call of a route fail (``drop``: the
connection closes without an answer, a commit having written half of its objects; ``error``: status 500;
``reject``: status 400), and
:attr:`CommitServer.before_commit` runs just before a commit is applied (e.g. a concurrent commit).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from commitstore import Operation, Repo, Store, StoreError

_TYPES = {"datasets": "dataset", "spaces": "space", "models": "model"}
_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}
_ACTIONS = "revision|tree|refs|paths-info|preupload|commit|tag"
_API = re.compile(rf"^/api/(datasets|spaces|models)/([^/]+/[^/]+)(?:/({_ACTIONS})(?:/([^/]+)(/.*)?)?)?$")
_RESOLVE = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_BATCH = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)\.git/info/lfs/objects/batch$")
_LFS = re.compile(r"^/lfs/(datasets|spaces|models)/([^/]+/[^/]+)/([0-9a-f]{64})(/verify)?$")


class CommitServer:
    """The server: ``start()`` it, use ``endpoint``, ``stop()`` it; ``requests`` logs (method, path) of each call."""

    def __init__(self, root: Path, token: str = "hf_commit_server_token") -> None:
        self.store = Store(Path(root))
        self.token = token
        self.requests: list[tuple[str, str]] = []
        self.private: set[tuple[str, str]] = set()  # (type, id) of the repositories created private
        self.before_commit: Callable[[Repo], None] | None = None
        self._faults: dict[str, str] = {}
        self._servers: list[http.server.ThreadingHTTPServer] = []

    @property
    def endpoint(self) -> str:
        """The Hub (``HF_ENDPOINT``)."""
        return self._origin(0)

    @property
    def storage_endpoint(self) -> str:
        """Where LFS objects are uploaded to and downloaded from: another origin, as the Hub's storage is."""
        return self._origin(1)

    def _origin(self, which: int) -> str:
        assert self._servers, "start the server first"
        return f"http://127.0.0.1:{self._servers[which].server_address[1]}"

    def start(self) -> CommitServer:
        server = self

        class Handler(_Handler):
            owner = server

        for _ in range(2):
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            httpd.daemon_threads = True
            threading.Thread(target=httpd.serve_forever, daemon=True).start()
            self._servers.append(httpd)
        return self

    def stop(self) -> None:
        for httpd in self._servers:
            httpd.shutdown()
            httpd.server_close()
        self._servers = []

    def break_next(self, route: str, how: str = "drop") -> None:
        """Make the next ``route`` call (``commit``, ``lfs-upload``, ``preupload``, ``tag``) fail: ``drop``,
        ``error`` (500, which clients retry) or ``reject`` (400, which they do not)."""
        self._faults[route] = how

    def take_fault(self, route: str) -> str | None:
        return self._faults.pop(route, None)

    def uploads(self) -> list[str]:
        """The paths of the LFS objects uploaded so far (``/lfs/{type}s/{repo}/{oid}``), in order."""
        return [path for method, path in self.requests if method == "PUT"]

    def calls(self, word: str) -> list[str]:
        """The paths of the logged requests that contain ``word`` (e.g. ``/commit/``, ``/lfs/``)."""
        return [path for _, path in self.requests if word in path]

    def seed(self, repo_id: str, folder: Path, *, repo_type: str = "dataset", message: str = "release") -> str:
        """Create ``repo_id`` with the files of ``folder`` as its second commit (after the Hub's first); returns it."""
        repo = self.store.create(repo_type, repo_id)
        head = repo.branch_head("main")
        operations = []
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and ".git" not in p.parts):
            rel = path.relative_to(folder).as_posix()
            data = path.read_bytes()
            if repo.upload_mode(head, rel, len(data)) == "lfs":
                operations.append(Operation("add", rel, lfs_oid=self.put_lfs(repo, data)))
            else:
                operations.append(Operation("add", rel, content=data))
        commit = repo.make_commit(head, operations, message)
        assert repo.move_ref("refs/heads/main", commit, head)
        return commit

    def put_lfs(self, repo: Repo, data: bytes) -> str:
        oid = hashlib.sha256(data).hexdigest()
        path = repo.lfs_path(oid)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
                handle.write(data)
            Path(handle.name).replace(path)
        return oid


class Dropped(Exception):
    """Close the connection without an answer."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: CommitServer

    def log_message(self, *args: object) -> None:
        pass

    # ------------------------------------------------------------------ plumbing

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, data: object, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _error(self, status: int, message: str, code: str | None = None, commit: str | None = None) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        if commit:
            headers["X-Repo-Commit"] = commit
        self._json({"error": message}, status, headers)

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        self.owner.requests.append((self.command, url.path))
        body = self._body() if self.command in ("POST", "PUT") else b""
        try:
            self._route(url.path, parse_qs(url.query), body)
        except StoreError as exc:
            self._error(exc.status, str(exc), exc.code)
        except Dropped:
            self.close_connection = True
            self.connection.close()

    do_GET = do_HEAD = do_POST = do_PUT = _dispatch

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.owner.token}":
            return True
        self._error(401, "Invalid credentials in Authorization header")
        return False

    def _repo(self, kind: str | None, repo_id: str) -> Repo:
        repo_type = _TYPES[kind] if kind else "model"
        repo = self.owner.store.get(repo_type, repo_id)
        if repo is None:
            raise StoreError(404, f"Repository not found: {repo_id}", "RepoNotFound")
        return repo

    def _commit_of(self, repo: Repo, revision: str) -> str:
        commit = repo.resolve(revision)
        if commit is None:
            raise StoreError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    def _fault(self, route: str) -> str | None:
        how = self.owner.take_fault(route)
        if how == "error":
            raise StoreError(500, f"Internal Error - the server failed during {route}")
        if how == "reject":
            raise StoreError(400, f"the storage refused the request during {route}")
        return how

    # ------------------------------------------------------------------ routes

    def _route(self, path: str, query: dict[str, list[str]], body: bytes) -> None:
        if path == "/api/repos/create" and self.command == "POST":
            return self._create(json.loads(body or b"{}"))
        if path == "/api/validate-yaml" and self.command == "POST":
            return self._json({"errors": [], "warnings": []})
        if match := _API.match(path):
            return self._api(match, query, body)
        if match := _RESOLVE.match(path):
            repo = self._repo(match.group(1), match.group(2))
            return self._resolve(repo, unquote(match.group(3)), unquote(match.group(4)))
        if (match := _BATCH.match(path)) and self.command == "POST":
            return self._batch(self._repo(match.group(1), match.group(2)), json.loads(body))
        if match := _LFS.match(path):
            return self._lfs(self._repo(match.group(1), match.group(2)), match.group(3), bool(match.group(4)), body)
        raise StoreError(404, f"no route for {self.command} {path}")

    def _api(self, match: re.Match, query: dict[str, list[str]], body: bytes) -> None:
        kind, repo_id, action, revision, rest = match.groups()
        repo = self._repo(kind, repo_id)
        revision = unquote(revision) if revision else "main"
        handlers: dict[tuple[str, str | None], Callable[[], None]] = {
            ("GET", None): lambda: self._info(repo, "main"),
            ("GET", "revision"): lambda: self._info(repo, revision),
            ("GET", "tree"): lambda: self._tree(repo, revision, unquote(rest or "/")[1:], query),
            ("GET", "refs"): lambda: self._json(_refs(repo, "include_prs" in query)),
            ("POST", "paths-info"): lambda: self._paths_info(repo, revision, body),
            ("POST", "preupload"): lambda: self._preupload(repo, revision, json.loads(body)),
            ("POST", "commit"): lambda: self._commit(repo, revision, body, "create_pr" in query),
            ("POST", "tag"): lambda: self._tag(repo, revision, json.loads(body)),
        }
        method = "GET" if self.command == "HEAD" else self.command
        handler = handlers.get((method, action))
        if handler is None:
            raise StoreError(405, f"{self.command} not allowed on {action or 'repository'}")
        if method == "POST" and action not in ("paths-info",) and not self._authorized():
            return None
        handler()

    def _create(self, payload: dict) -> None:
        if not self._authorized():
            return
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization')}/{payload.get('name')}"
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", repo_id) or repo_type not in _PREFIX:
            raise StoreError(400, f"invalid repository {repo_id!r} of type {repo_type!r}")
        if repo_type == "space" and not payload.get("sdk"):
            raise StoreError(400, "a Space needs an sdk")
        try:
            self.owner.store.create(repo_type, repo_id, sdk=payload.get("sdk"))
            if payload.get("private") or payload.get("visibility") == "private":  # older clients send private
                self.owner.private.add((repo_type, repo_id))
        except StoreError as exc:
            url = f"{self.owner.endpoint}/{_PREFIX[repo_type]}{repo_id}"
            return self._json({"error": str(exc), "url": url}, exc.status)
        self._json({"url": f"{self.owner.endpoint}/{_PREFIX[repo_type]}{repo_id}", "name": repo_id})

    def _info(self, repo: Repo, revision: str) -> None:
        commit = self._commit_of(repo, revision)
        files = repo.files(commit)
        siblings = [
            {"rfilename": e.path, "size": e.size, "blobId": e.oid}
            | ({"lfs": {"sha256": e.lfs_oid, "size": e.size, "pointerSize": e.pointer_size}} if e.lfs_oid else {})
            for e in files
        ]
        info: dict = {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": commit,
            "lastModified": "2026-09-15T00:00:00.000Z",
            "private": (repo.repo_type, repo.repo_id) in self.owner.private,
            "gated": False,
            "disabled": False,
            "tags": [],
            "downloads": 0,
            "likes": 0,
            "siblings": siblings,
        }
        if repo.repo_type == "space":
            info |= {"sdk": repo.sdk or "gradio", "runtime": {"stage": "BUILDING", "hardware": None}}
        self._json(info)

    def _tree(self, repo: Repo, revision: str, path: str, query: dict[str, list[str]]) -> None:
        commit = self._commit_of(repo, revision)
        recursive = query.get("recursive", ["False"])[0].lower() in ("1", "true")
        entries = repo.entries(commit, path.strip("/"), recursive=recursive)
        if entries is None:
            raise StoreError(404, f"{path} is not a folder of {revision}", "EntryNotFound")
        self._json([e.as_json() for e in entries])

    def _paths_info(self, repo: Repo, revision: str, body: bytes) -> None:
        commit = self._commit_of(repo, revision)
        paths = parse_qs(body.decode()).get("paths", [])
        found = [repo.entry(commit, p) for p in paths]
        self._json([e.as_json() for e in found if e is not None])

    def _resolve(self, repo: Repo, revision: str, path: str) -> None:
        commit = self._commit_of(repo, revision)
        entry = repo.entry(commit, path)
        if entry is None or entry.kind != "file":
            return self._error(404, f"Entry not found: {path}", "EntryNotFound", commit)
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes"}
        if entry.lfs_oid:
            location = f"{self.owner.storage_endpoint}/lfs/{repo.repo_type}s/{repo.repo_id}/{entry.lfs_oid}"
            headers |= {
                "Location": location,
                "ETag": f'"{entry.oid}"',
                "X-Linked-Etag": f'"{entry.lfs_oid}"',
                "X-Linked-Size": str(entry.size),
            }
            return self._send(302, b"", headers)
        self._ranged(repo.blob(entry.oid), headers | {"ETag": f'"{entry.oid}"'})

    def _ranged(self, data: bytes, headers: dict[str, str]) -> None:
        wanted = self.headers.get("Range")
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted or "")
        if wanted is None or match is None or match.groups() == ("", ""):
            return self._send(200, data, headers)
        first, last = match.groups()
        size = len(data)
        start = size - int(last) if first == "" else int(first)
        end = size - 1 if first == "" or last == "" else min(int(last), size - 1)
        if start >= size or start > end:
            return self._send(416, b"", headers | {"Content-Range": f"bytes */{size}"})
        self._send(206, data[max(start, 0) : end + 1], headers | {"Content-Range": f"bytes {start}-{end}/{size}"})

    def _preupload(self, repo: Repo, revision: str, payload: dict) -> None:
        self._fault("preupload")
        commit = self._commit_of(repo, revision)
        answer = []
        for item in payload.get("files", []):
            existing = repo.entry(commit, item["path"])
            mode = repo.upload_mode(commit, item["path"], int(item["size"]))
            oid = existing.oid if existing is not None and existing.lfs_oid is None and mode == "regular" else None
            answer.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        self._json({"files": answer, "commitOid": commit})

    def _batch(self, repo: Repo, payload: dict) -> None:
        if not self._authorized():
            return
        if payload.get("operation") != "upload" or "basic" not in payload.get("transfers", ["basic"]):
            raise StoreError(422, "only the basic upload transfer is served")
        objects = []
        for item in payload.get("objects", []):
            oid, size = item["oid"], int(item["size"])
            found = repo.lfs_path(oid)
            entry: dict = {"oid": oid, "size": size, "authenticated": True}
            if not (found.is_file() and found.stat().st_size == size):
                href = f"{self.owner.storage_endpoint}/lfs/{repo.repo_type}s/{repo.repo_id}/{oid}"
                entry["actions"] = {"upload": {"href": href}, "verify": {"href": f"{href}/verify"}}
            objects.append(entry)
        self._send(
            200,
            json.dumps({"transfer": "basic", "objects": objects}).encode(),
            {"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs(self, repo: Repo, oid: str, verify: bool, body: bytes) -> None:
        path = repo.lfs_path(oid)
        if self.command == "PUT":
            if self._fault("lfs-upload") == "drop":
                raise Dropped
            if hashlib.sha256(body).hexdigest() != oid:
                raise StoreError(400, f"uploaded content does not have SHA-256 {oid}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(".part").write_bytes(body)
            path.with_suffix(".part").replace(path)
            return self._send(200)
        if verify:
            request = json.loads(body or b"{}")
            if path.is_file() and path.stat().st_size == request.get("size"):
                return self._json({"oid": oid, "size": request.get("size")})
            raise StoreError(404, f"LFS object {oid} not found")
        if not path.is_file():
            raise StoreError(404, f"LFS object {oid} not found")
        self._ranged(path.read_bytes(), {"ETag": f'"{oid}"', "Accept-Ranges": "bytes"})

    def _commit(self, repo: Repo, revision: str, body: bytes, create_pr: bool) -> None:
        how = self._fault("commit")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise StoreError(400, "the commit payload must start with its header")
        header, operations = lines[0]["value"], [_operation(line) for line in lines[1:]]
        with self.owner.store.lock:
            if self.owner.before_commit is not None:
                self.owner.before_commit(repo)
            ref = revision if revision.startswith("refs/pr/") else f"refs/heads/{revision}"
            head = repo.branch_head(ref)
            if head is None:
                raise StoreError(404, f"Invalid rev id: {revision} is not a branch", "RevisionNotFound")
            parent = header.get("parentCommit")
            base = repo.resolve(parent) if parent else head
            if parent and (base is None or (not create_pr and base != head)):
                raise StoreError(412, "A commit has happened since. Please refresh and try again.")
            message = header.get("summary", "") + (f"\n\n{header['description']}" if header.get("description") else "")
            if how == "drop":
                try:
                    repo.make_commit(base, operations, message, stop_half_way=True)
                except ConnectionAbortedError:
                    raise Dropped from None
            commit = repo.make_commit(base, operations, message)
            if create_pr:
                number = len(repo.refs()["pullRequests"]) + 1
                ref = f"refs/pr/{number}"
                assert repo.move_ref(ref, commit, None)
            elif not repo.move_ref(ref, commit, head):
                raise StoreError(412, "A commit has happened since. Please refresh and try again.")
        url = f"{self.owner.endpoint}/{_PREFIX[repo.repo_type]}{repo.repo_id}"
        answer = {"success": True, "commitOid": commit, "commitUrl": f"{url}/commit/{commit}", "hookOutput": ""}
        if create_pr:
            answer["pullRequestUrl"] = f"{url}/discussions/{ref.rsplit('/', 1)[1]}"
        self._json(answer)

    def _tag(self, repo: Repo, revision: str, payload: dict) -> None:
        self._fault("tag")
        commit = self._commit_of(repo, revision)
        name = str(payload.get("tag") or "")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise StoreError(400, f"invalid tag name {name!r}")
        with self.owner.store.lock:
            if payload.get("message"):
                tag = repo.git("mktag", stdin=_tag_object(commit, name, payload["message"])).strip()
            else:
                tag = commit
            if not repo.move_ref(f"refs/tags/{name}", tag, None):
                raise StoreError(409, f"Tag reference {name} already exists")
        self._json({})


def _operation(line: dict) -> Operation:
    key, value = line.get("key"), line.get("value") or {}
    path = str(value.get("path", "")).strip("/")
    if not path or ".." in path.split("/"):
        raise StoreError(400, f"invalid path in commit: {value.get('path')!r}")
    if key == "file":
        if value.get("encoding", "base64") != "base64":
            raise StoreError(400, "file content must be base64")
        return Operation("add", path, content=base64.b64decode(value.get("content", "")))
    if key == "lfsFile":
        if value.get("algo", "sha256") != "sha256":
            raise StoreError(400, "LFS objects are addressed by SHA-256")
        return Operation("add", path, lfs_oid=value["oid"])
    if key == "deletedFile":
        return Operation("delete", path)
    if key == "deletedFolder":
        return Operation("delete_folder", path)
    raise StoreError(400, f"unknown commit operation {key!r}")


def _refs(repo: Repo, include_prs: bool) -> dict:
    refs = repo.refs()
    if not include_prs:
        refs.pop("pullRequests")
    return refs


def _tag_object(commit: str, name: str, message: str) -> bytes:
    return (
        f"object {commit}\ntype commit\ntag {name}\ntagger commit-server <server@localhost> 1789430400 +0000\n\n"
        f"{message}\n"
    ).encode()

"""A loopback fake of the Hugging Face Hub HTTP API, for offline tests.

It serves local folders as the content of hub repositories, on ``127.0.0.1`` with an
ephemeral port, over plain HTTP. It implements what ``huggingface_hub``'s
``snapshot_download`` and ``hf_hub_download`` need (checked against huggingface_hub 2.4):

* ``GET /api/{type}s/{ns}/{name}[/revision/{rev}]``: repo info with ``sha`` and ``siblings``;
* ``GET /api/{type}s/{ns}/{name}/tree/{rev}[/{path}]?recursive=&cursor=``: tree listing,
  paginated with a GitHub-style ``Link: <...>; rel="next"`` header when ``page_size`` is set;
* ``HEAD`` and ``GET /[{type}s/]{ns}/{name}/resolve/{rev}/{path}``: file metadata
  (``X-Repo-Commit``, quoted ``ETag`` = git blob sha, ``Content-Length``) and content
  (with ``Range: bytes=N-`` support);
* uploads, when the hub has an ``upload_root`` folder (what ``HfApi.create_repo`` / ``create_commit`` and
  ``datasets.Dataset.push_to_hub`` need): ``POST /api/repos/create``, ``POST /api/{type}s/{ns}/{name}/preupload/
  {rev}`` (every file ``regular``: sent inline, no LFS or xet), ``POST .../paths-info/{rev}``,
  ``POST /api/validate-yaml`` (every card is valid) and ``POST .../commit/{rev}`` (NDJSON: base64 files and
  deletions), each commit a new folder under ``upload_root``; with ``?create_pr=1`` the commit opens a pull
  request instead (ref ``refs/pr/<n>``, the branch unchanged; ``pullRequestUrl`` in the reply, as
  ``create_commit(create_pr=True)`` reads it; listed in ``FakeHfHub.pull_requests``).

Every file is served as a regular file: no ``X-Xet-Hash`` / ``X-Xet-Refresh-Route`` header,
no ``xet-auth`` link and no ``xetHash`` in tree entries, so clients never switch to xet; no
LFS redirect either. Errors carry the ``X-Error-Code`` / ``X-Error-Message`` headers that
``huggingface_hub.utils.hf_raise_for_status`` maps to its exceptions, like the real hub:

* unknown or inaccessible repo: 401 (no ``Authorization`` header) or 404, ``RepoNotFound``;
* unknown revision: 404 ``RevisionNotFound``;
* unknown file or tree path: 404 ``EntryNotFound`` (with ``X-Repo-Commit``);
* gated repo, file requested without the repo's token: 401 ``GatedRepo``;
* any request while ``outage_status`` is set (e.g. 503): that status, as in a hub outage.

Every request is recorded (method, decoded path, query) so tests can assert what was, and
was not, fetched. Usage::

    repo = FakeRepo("org/data", commits={sha: folder}, refs={"main": sha})
    with FakeHfHub([repo]) as hub:
        snapshot_download("org/data", repo_type="dataset", endpoint=hub.url, cache_dir=tmp)
        assert hub.downloaded_files() == [...]
"""

import base64
import hashlib
import json
import shutil
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

_TYPE_PREFIXES = {"datasets": "dataset", "spaces": "space", "models": "model"}
_LAST_MODIFIED = "2025-01-01T00:00:00.000Z"


def make_commit_sha(seed: str) -> str:
    """A deterministic 40-hex commit sha for tests."""
    return hashlib.sha1(f"commit {seed}".encode()).hexdigest()


def git_blob_sha(data: bytes) -> str:
    """The git object id of a blob, which the hub uses as ETag of regular files."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    """One hub repository: commits (sha -> local folder served as content) and refs."""

    repo_id: str
    commits: dict[str, Path]
    refs: dict[str, str] = field(default_factory=dict)
    repo_type: str = "dataset"
    token: str | None = None
    """Token that has access (sent as ``Authorization: Bearer <token>``)."""
    private: bool = False
    """Every request needs ``token``; otherwise the repo looks nonexistent."""
    gated: bool = False
    """File downloads need ``token``; repo info and tree listings stay public."""

    def resolve(self, revision: str) -> str | None:
        """Commit sha of a branch, tag or sha; ``None`` if unknown."""
        return revision if revision in self.commits else self.refs.get(revision)

    def files(self, commit: str) -> dict[str, Path]:
        """Repo path -> local file, for every file of a commit."""
        root = Path(self.commits[commit])
        return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass(frozen=True)
class FakePullRequest:
    """A pull request opened on the fake hub (``create_commit(create_pr=True)``)."""

    repo_type: str
    repo_id: str
    number: int
    commit: str
    """Its commit: the files are ``repo.files(commit)``."""

    target: str
    """The revision it targets (``main``)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request received by the fake hub."""

    method: str
    path: str
    """URL path with every segment percent-decoded."""
    query: dict[str, list[str]]
    authorized: bool
    """Whether an ``Authorization`` header was sent (its value is never recorded)."""


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _json_reply(payload: object, headers: dict[str, str] | None = None) -> _Reply:
    extra = {"Content-Type": "application/json"}
    extra.update(headers or {})
    return _Reply(200, json.dumps(payload).encode(), extra)


def _error(status: int, code: str | None, message: str, headers: Mapping[str, str] | None = None) -> _Reply:
    extra = {"Content-Type": "application/json", "X-Error-Message": message}
    if code is not None:
        extra["X-Error-Code"] = code
    extra.update(headers or {})
    return _Reply(status, json.dumps({"error": message}).encode(), extra)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    hub: "FakeHfHub"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._serve("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve("HEAD")

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = self.server.hub.handle_post(self.path, dict(self.headers.items()), body)
        self.send_response(reply.status)
        for name, value in {"Content-Length": str(len(reply.body)), **reply.headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)

    def _serve(self, method: str) -> None:
        reply = self.server.hub.handle(method, self.path, dict(self.headers.items()))
        headers = {"Content-Length": str(len(reply.body))}
        headers.update(reply.headers)  # HEAD replies announce the length of the body a GET would get
        self.send_response(reply.status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Keep test output quiet."""


class FakeHfHub:
    """A fake hub serving ``repos`` on ``127.0.0.1``; use as a context manager."""

    def __init__(self, repos: Iterable[FakeRepo], *, page_size: int | None = None,
                 upload_root: Path | None = None) -> None:
        self.repos = {(repo.repo_type, repo.repo_id): repo for repo in repos}
        self.page_size = page_size
        self.upload_root = upload_root
        """Where commits pushed to the fake are stored (None: uploads are refused with 403)."""
        self.outage_status: int | None = None
        """When set (e.g. 503), every request is answered with this status, as in a hub outage."""
        self.pull_requests: list[FakePullRequest] = []
        """Pull requests opened by commits with ``create_pr=1``, in order."""
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "FakeHfHub":
        """Start serving on an ephemeral port."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.hub = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None

    def __enter__(self) -> "FakeHfHub":
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Endpoint to pass as ``endpoint=`` / ``HF_ENDPOINT``."""
        if self._server is None:
            raise RuntimeError("The fake hub is not running.")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- recorded requests -----------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    def resolve_requests(self, method: str = "GET") -> list[str]:
        """Repo paths requested with ``method`` on ``/resolve/`` (``GET`` = file contents)."""
        found = []
        for request in self.requests:
            parts = request.path.split("/")
            if request.method == method and "resolve" in parts:
                index = parts.index("resolve")
                found.append("/".join(parts[index + 2 :]))
        return found

    def downloaded_files(self) -> list[str]:
        """Sorted repo paths whose contents were downloaded (GET on ``/resolve/``)."""
        return sorted(self.resolve_requests("GET"))

    # -- request handling ----------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: Mapping[str, str]) -> _Reply:
        """Route one request and return the reply (also records it)."""
        split = urlsplit(raw_path)
        segments = [unquote(part) for part in split.path.split("/")[1:]]
        query = parse_qs(split.query)
        authorization = {k.lower(): v for k, v in headers.items()}.get("authorization")
        with self._lock:
            self._requests.append(RecordedRequest(method, "/".join([""] + segments), query, authorization is not None))
        if self.outage_status is not None:
            return _error(self.outage_status, None, "Service Unavailable")
        if segments[:1] == ["api"] and len(segments) >= 4 and segments[1] in _TYPE_PREFIXES:
            repo_key = (_TYPE_PREFIXES[segments[1]], f"{segments[2]}/{segments[3]}")
            return self._api(repo_key, segments[4:], split.path, query, authorization)
        if len(segments) >= 5 and segments[0] in ("datasets", "spaces") and segments[3] == "resolve":
            repo_key = (_TYPE_PREFIXES[segments[0]], f"{segments[1]}/{segments[2]}")
            return self._resolve(repo_key, segments[4], "/".join(segments[5:]), method, headers, authorization)
        if len(segments) >= 4 and segments[2] == "resolve":
            repo_key = ("model", f"{segments[0]}/{segments[1]}")
            return self._resolve(repo_key, segments[3], "/".join(segments[4:]), method, headers, authorization)
        return _error(404, None, "Not Found")

    def handle_post(self, raw_path: str, headers: Mapping[str, str], body: bytes) -> _Reply:
        """Route one upload request (also records it)."""
        split = urlsplit(raw_path)
        segments = [unquote(part) for part in split.path.split("/")[1:]]
        authorization = {k.lower(): v for k, v in headers.items()}.get("authorization")
        with self._lock:
            self._requests.append(RecordedRequest("POST", "/".join([""] + segments), parse_qs(split.query),
                                                  authorization is not None))
        if self.upload_root is None:
            return _error(403, None, "This fake hub takes no uploads (no upload_root)")
        if segments == ["api", "repos", "create"]:
            return self._create_repo(json.loads(body or b"{}"))
        if segments == ["api", "validate-yaml"]:  # dataset cards: always valid here
            return _json_reply({"errors": [], "warnings": []})
        if len(segments) >= 6 and segments[0] == "api" and segments[1] in _TYPE_PREFIXES:
            repo = self.repos.get((_TYPE_PREFIXES[segments[1]], f"{segments[2]}/{segments[3]}"))
            if repo is None:
                return _error(404, "RepoNotFound", "Repository not found")
            action, revision = segments[4], "/".join(segments[5:])
            if action == "preupload":
                files = json.loads(body or b"{}").get("files", [])
                return _json_reply({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                              for f in files]})
            if action == "paths-info":
                commit = repo.resolve(revision)
                present = repo.files(commit) if commit else {}
                wanted = parse_qs(body.decode()).get("paths", []) or json.loads(body or b"{}").get("paths", [])
                return _json_reply([{"type": "file", "path": path, "size": present[path].stat().st_size,
                                     "oid": git_blob_sha(present[path].read_bytes())}
                                    for path in wanted if path in present])
            if action == "commit":
                create_pr = parse_qs(split.query).get("create_pr", ["0"])[0] == "1"
                return self._commit(repo, revision, body, create_pr)
        return _error(404, None, "Not Found")

    def _create_repo(self, request: dict[str, object]) -> _Reply:
        repo_type = str(request.get("type") or "model")
        repo_id = f"{request.get('organization')}/{request.get('name')}" if request.get("organization") else str(
            request.get("name"))
        url = f"{self.url}/{'datasets/' if repo_type == 'dataset' else ''}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return _error(409, None, "You already created this repo", {"X-Request-Id": "fake"})
        assert self.upload_root is not None
        first = make_commit_sha(f"{repo_id} initial")
        folder = self.upload_root / first
        folder.mkdir(parents=True)
        self.repos[(repo_type, repo_id)] = FakeRepo(repo_id, commits={first: folder}, refs={"main": first},
                                                    repo_type=repo_type, private=bool(request.get("private")))
        return _json_reply({"url": url, "name": repo_id, "id": repo_id})

    def _commit(self, repo: FakeRepo, revision: str, body: bytes, create_pr: bool = False) -> _Reply:
        parent = repo.resolve(revision)
        if parent is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        assert self.upload_root is not None
        sha = make_commit_sha(f"{repo.repo_id} {parent} {hashlib.sha1(body).hexdigest()}")
        folder = self.upload_root / sha
        shutil.copytree(repo.commits[parent], folder, dirs_exist_ok=True)
        for line in body.splitlines():
            operation = json.loads(line)
            key, value = operation["key"], operation["value"]
            if key == "file":
                target = folder / value["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(base64.b64decode(value["content"]))
            elif key in ("deletedFile", "deletedFolder"):
                target = folder / value["path"]
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
            elif key != "header":
                return _error(400, None, f"this fake hub takes inline files only, not {key!r}")
        repo.commits[sha] = folder
        if create_pr:  # a pull request gets its own ref; the branch it targets stays as it was
            number = 1 + sum(pr.repo_id == repo.repo_id and pr.repo_type == repo.repo_type for pr in self.pull_requests)
            repo.refs[f"refs/pr/{number}"] = sha
            self.pull_requests.append(FakePullRequest(repo.repo_type, repo.repo_id, number, sha, revision))
            prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
            return _json_reply({"commitUrl": f"{self.url}/{prefix}{repo.repo_id}/commit/{sha}", "commitOid": sha,
                                "pullRequestUrl": f"{self.url}/{prefix}{repo.repo_id}/discussions/{number}",
                                "success": True})
        repo.refs[revision if revision in repo.refs else "main"] = sha
        return _json_reply({"commitUrl": f"{self.url}/datasets/{repo.repo_id}/commit/{sha}", "commitOid": sha,
                            "success": True})

    def _repo(
        self, repo_key: tuple[str, str], authorization: str | None, *, download: bool
    ) -> tuple[FakeRepo | None, _Reply | None]:
        repo = self.repos.get(repo_key)
        granted = repo is not None and repo.token is not None and authorization == f"Bearer {repo.token}"
        if repo is None or (repo.private and not granted):
            status = 401 if authorization is None else 404
            return None, _error(status, "RepoNotFound", "Repository not found")
        if repo.gated and download and not granted:
            message = (
                f"Access to {repo.repo_type} {repo.repo_id} is restricted. "
                "You must have access to it and be authenticated to access it. Please log in."
            )
            return None, _error(401, "GatedRepo", message)
        return repo, None

    def _api(
        self,
        repo_key: tuple[str, str],
        rest: list[str],
        url_path: str,
        query: dict[str, list[str]],
        authorization: str | None,
    ) -> _Reply:
        repo, denied = self._repo(repo_key, authorization, download=False)
        if repo is None:
            return denied or _error(404, "RepoNotFound", "Repository not found")
        if not rest or rest[0] == "revision":
            revision = rest[1] if len(rest) > 1 else "main"
            return self._info(repo, revision)
        if rest[0] == "tree" and len(rest) >= 2:
            return self._tree(repo, rest[1], "/".join(rest[2:]).strip("/"), url_path, query)
        return _error(404, None, "Not Found")

    def _info(self, repo: FakeRepo, revision: str) -> _Reply:
        commit = repo.resolve(revision)
        if commit is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        namespace = repo.repo_id.split("/")[0]
        files = repo.files(commit)
        return _json_reply(
            {
                "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
                "id": repo.repo_id,
                "author": namespace,
                "sha": commit,
                "private": repo.private,
                "gated": "auto" if repo.gated else False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "createdAt": _LAST_MODIFIED,
                "lastModified": _LAST_MODIFIED,
                "cardData": {},
                "siblings": [{"rfilename": path} for path in files],
            }
        )

    def _tree(self, repo: FakeRepo, revision: str, path: str, url_path: str, query: dict[str, list[str]]) -> _Reply:
        commit = repo.resolve(revision)
        if commit is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        entries = _tree_entries(repo.files(commit), path, recursive)
        if entries is None:
            return _error(404, "EntryNotFound", f'{path} does not exist on "{revision}"', {"X-Repo-Commit": commit})
        start = int(query.get("cursor", ["0"])[0])
        end = len(entries) if self.page_size is None else start + self.page_size
        headers = {}
        if end < len(entries):
            params = {key: values[0] for key, values in query.items()}
            params["cursor"] = str(end)
            headers["Link"] = f'<{self.url}{url_path}?{urlencode(params)}>; rel="next"'
        return _json_reply(entries[start:end], headers)

    def _resolve(
        self,
        repo_key: tuple[str, str],
        revision: str,
        path: str,
        method: str,
        headers: Mapping[str, str],
        authorization: str | None,
    ) -> _Reply:
        repo, denied = self._repo(repo_key, authorization, download=True)
        if repo is None:
            return denied or _error(404, "RepoNotFound", "Repository not found")
        commit = repo.resolve(revision)
        if commit is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        local = repo.files(commit).get(path)
        if local is None:
            return _error(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": commit})
        data = local.read_bytes()
        reply_headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(len(data)),
            "ETag": f'"{git_blob_sha(data)}"',
            "X-Repo-Commit": commit,
            "Accept-Ranges": "bytes",
        }
        start = _range_start({k.lower(): v for k, v in headers.items()}.get("range"))
        if method == "GET" and start:
            reply_headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            reply_headers["Content-Length"] = str(len(data) - start)
            return _Reply(206, data[start:], reply_headers)
        return _Reply(200, data, reply_headers)


def _tree_entries(files: Mapping[str, Path], path: str, recursive: bool) -> list[dict[str, object]] | None:
    """Tree entries under ``path`` (``None`` if it is no folder of the commit)."""
    prefix = f"{path}/" if path else ""
    folders: dict[str, None] = {}
    entries: list[dict[str, object]] = []
    for repo_path, local in files.items():
        if not repo_path.startswith(prefix):
            continue
        parts = repo_path[len(prefix) :].split("/")
        for depth in range(1, len(parts) if recursive else min(len(parts), 2)):
            folders.setdefault(prefix + "/".join(parts[:depth]))
        if recursive or len(parts) == 1:
            data = local.read_bytes()
            entries.append({"type": "file", "oid": git_blob_sha(data), "size": len(data), "path": repo_path})
    if path and not entries and not folders:
        return None
    directories: list[dict[str, object]] = [
        {"type": "directory", "oid": hashlib.sha1(name.encode()).hexdigest(), "size": 0, "path": name}
        for name in folders
    ]
    return directories + entries


def _range_start(value: str | None) -> int:
    """Start offset of a ``Range: bytes=N-`` header (0 when absent or unsupported)."""
    if not value or not value.startswith("bytes="):
        return 0
    first = value[len("bytes=") :].split(",")[0].split("-")[0]
    return int(first) if first.isdigit() else 0

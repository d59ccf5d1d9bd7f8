"""Where the data comes from: the hub (``data=hf``), the bundled sample or a local copy (docs/data.md).

The hub download fetches the metadata and only the requested subsets' videos, with a time limit on every hub
request (``ROBOREWARD_HUB_TIMEOUT``).
"""

import logging
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

from huggingface_hub import HfApi, constants, snapshot_download
from huggingface_hub.hf_api import RepoFile, RepoFolder
from huggingface_hub.utils import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from helm_roboreward.protocol.rows import DataError, metadata_path, not_a_local_copy
from helm_roboreward.protocol.rules import DATASET_ID, DATASET_REVISION, METADATA_FILE, TEST_SPLIT
from helm_roboreward.protocol.safe_files import file_digest

HUB = "hf"
SAMPLE = "sample"
# The revision of the sample or of a local copy: the prefix, then a digest of its metadata.
SAMPLE_REVISION_PREFIX = "sample-"
LOCAL_REVISION_PREFIX = "local-"


@dataclass(frozen=True)
class DataSource:
    """A resolved data source: a local folder in the dataset layout and its provenance."""

    data: str  # the argument as given
    root: str  # absolute folder holding test/metadata.jsonl
    revision: str  # the resolved hub commit, or a digest of the local metadata
    trusted_root: str  # folder that videos (links followed) must stay in

    @property
    def description(self) -> str:
        """A short label for messages."""
        return f"data={self.data}"


def sample_root() -> str:
    """The folder of the sample bundled with the package."""
    return str(resources.files("helm_roboreward") / "sample")


def resolve_data_source(data: str, revision: str = DATASET_REVISION,
                        subsets: Sequence[str] | None = None) -> DataSource:
    """``data`` (``hf``, ``sample`` or a folder) as a local folder; ``hf`` downloads ``subsets`` (None: all)."""
    if data == HUB:
        return hub_source(revision, subsets)
    if data == SAMPLE:
        root, prefix = sample_root(), SAMPLE_REVISION_PREFIX
    else:
        root, prefix = os.path.abspath(os.path.expanduser(data)), LOCAL_REVISION_PREFIX
        if not os.path.isfile(metadata_path(root)):
            raise DataError(not_a_local_copy(data, root))
    return DataSource(data, root, prefix + file_digest(metadata_path(root))[:16], os.path.join(root, TEST_SPLIT))


HUB_TIMEOUT_VARIABLE = "ROBOREWARD_HUB_TIMEOUT"
DEFAULT_HUB_TIMEOUT = 60.0


def hub_timeout() -> float:
    """The limit in seconds (``ROBOREWARD_HUB_TIMEOUT``, default :data:`DEFAULT_HUB_TIMEOUT`).

    Raises:
        ValueError: The variable is set to something other than a positive number of seconds.
    """
    text = os.environ.get(HUB_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_HUB_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{HUB_TIMEOUT_VARIABLE}={text!r}: give a number of seconds > 0 (default "
                         f"{DEFAULT_HUB_TIMEOUT:g})")
    return seconds


def limit_hub_requests() -> float:
    """Set the limit on huggingface_hub's shared client (this process); returns it in seconds."""
    from huggingface_hub import get_session

    seconds = hub_timeout()
    get_session().timeout = seconds  # httpx turns a number into its Timeout
    return seconds


logger = logging.getLogger(__name__)

REPO_TYPE = "dataset"
"""Hub repository type of the benchmark dataset."""

_SUBSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}\Z")
_TOKEN_LIKE = re.compile(r"\bhf_[A-Za-z0-9]{8,}")
_MAX_CAUSE_CHARS = 400

# (module, attribute) of the transport errors of the HTTP clients huggingface_hub may use:
# httpx2 (2.x), httpx (1.x) and requests (0.x).
_NETWORK_ERRORS = (
    ("httpx2", "TransportError"),
    ("httpx", "TransportError"),
    ("requests", "ConnectionError"),
    ("requests", "Timeout"),
)


_HTTP_ERRORS = (("httpx2", "HTTPError"), ("httpx", "HTTPError"), ("requests", "RequestException"))
_TIMEOUT_ERRORS = (("httpx2", "TimeoutException"), ("httpx", "TimeoutException"), ("requests", "Timeout"))


def _loaded_error_types(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The classes ``names`` lists in the modules already imported (huggingface_hub imports its HTTP client)."""
    found = (getattr(sys.modules.get(module), name, None) for module, name in names)
    return tuple(error for error in found if isinstance(error, type) and issubclass(error, BaseException))


def hub_http_error_types() -> tuple[type[BaseException], ...]:
    """Every error of the HTTP client the installed huggingface_hub uses (httpx2, httpx or requests).

    Which one depends on its version (``huggingface_hub>=0.24`` is allowed; the ``inspect`` extra's pins hold it
    at 1.16, which uses httpx): catch these, never one client's classes by name.
    """
    return _loaded_error_types(_HTTP_ERRORS)


def hub_timeout_error_types() -> tuple[type[BaseException], ...]:
    """Its "no answer in time" errors."""
    return _loaded_error_types(_TIMEOUT_ERRORS)


class HubDownloadError(Exception):
    """The dataset could not be downloaded; the message says what failed and how to fix it."""


@dataclass(frozen=True)
class DownloadedSplit:
    """A local copy of the test split, as downloaded (or found in the cache)."""

    root: str
    """Local snapshot folder that contains ``test/metadata.jsonl`` and ``test/<subset>/...``."""

    commit: str
    """The 40-hex commit sha of the revision actually downloaded."""

    repo_id: str
    """Hub dataset repository the files come from."""

    revision: str
    """Revision as requested (branch, tag or commit)."""

    @property
    def metadata_path(self) -> str:
        """Path of the test split's ``metadata.jsonl``."""
        return os.path.join(self.root, TEST_SPLIT, METADATA_FILE)


@dataclass(frozen=True)
class _Target:
    """What is being downloaded, from where: used to build error messages."""

    repo_id: str
    revision: str
    endpoint: str | None
    cache_dir: str | None
    token: str | None = field(default=None, repr=False)  # never shown in reprs or tracebacks

    @property
    def hub_url(self) -> str:
        return (self.endpoint or constants.ENDPOINT).rstrip("/")

    @property
    def page_url(self) -> str:
        return f"{self.hub_url}/datasets/{self.repo_id}"

    @property
    def cache_folder(self) -> str:
        return self.cache_dir or constants.HF_HUB_CACHE


@dataclass(frozen=True)
class _RemoteTestFolder:
    """What the hub lists under ``test/`` for one commit."""

    commit: str
    subsets: tuple[str, ...]
    has_metadata: bool


def download_test_split(
    subsets: Sequence[str] | None = None,
    *,
    repo_id: str = DATASET_ID,
    revision: str = DATASET_REVISION,
    cache_dir: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
) -> DownloadedSplit:
    """Download the test split's metadata and the videos of the requested subsets.

    Files go to the ``huggingface_hub`` cache, so a second call downloads nothing. When the
    hub cannot be reached (or ``HF_HUB_OFFLINE=1``), the cached snapshot of the revision is
    used if it holds every requested file.

    Args:
        subsets: Subset folder names under ``test/`` to download; ``None`` downloads all of
            ``test/``. ``train/`` and ``val/`` are never downloaded.
        repo_id: Hub dataset repository.
        revision: Branch, tag or commit sha to download.
        cache_dir: ``huggingface_hub`` cache folder; default: its own (``HF_HUB_CACHE``).
        endpoint: Hub URL; default: ``huggingface_hub``'s (which honours ``HF_ENDPOINT``).
        token: Hugging Face token; default: the one from ``HF_TOKEN`` or ``hf auth login``.

    Returns:
        The local snapshot folder and the commit it holds.

    Raises:
        ValueError: A subset name is empty or not a plain folder name.
        HubDownloadError: The download failed; the message says why and what to do.
    """
    wanted = _normalize_subsets(subsets)
    # HF_ENDPOINT and HF_HUB_CACHE are read here, not only when huggingface_hub is imported (tests, notebooks).
    target = _Target(
        repo_id, revision, endpoint or os.environ.get("HF_ENDPOINT") or None,
        cache_dir or os.environ.get("HF_HUB_CACHE") or None, token,
    )
    remote, offline_cause = _probe(target)
    if remote is not None:
        _check_remote_subsets(remote, wanted, target)
    root = _snapshot(target, wanted, offline_cause)
    commit = _commit_of(root, remote, target)
    _check_local_copy(root, commit, wanted, target, offline_cause)
    return DownloadedSplit(root=root, commit=commit, repo_id=repo_id, revision=revision)


def hub_source(revision: str, subsets: Sequence[str] | None) -> DataSource:
    """The source ``data=hf``: the test split at ``revision`` (``subsets``; None: all), downloaded or cached."""
    try:
        split = download_test_split(subsets, repo_id=DATASET_ID, revision=revision)
    except HubDownloadError as error:
        raise DataError(str(error)) from None
    # Snapshot files link to blobs two folders up (<repo cache>/snapshots/<sha>/ -> <repo cache>/blobs/).
    repo_cache = os.path.dirname(os.path.dirname(os.path.realpath(split.root)))
    return DataSource(HUB, split.root, split.commit, repo_cache)


def _normalize_subsets(subsets: Sequence[str] | None) -> tuple[str, ...] | None:
    """Validate the requested subset names; ``None`` stays ``None`` (all subsets)."""
    if subsets is None:
        return None
    names = [subsets] if isinstance(subsets, str) else list(subsets)
    if not names:
        raise ValueError("subsets must be None (all subsets) or a non-empty list of subset folder names.")
    invalid = [name for name in names if not isinstance(name, str) or not _SUBSET_NAME.match(name)]
    if invalid:
        raise ValueError(f"Invalid subset folder name(s) {invalid!r}: expected plain names such as 'bridge'.")
    return tuple(dict.fromkeys(names))


def network_error_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the hub cannot be reached" for the HTTP client in use."""
    return (OfflineModeIsEnabled, ConnectionError, TimeoutError) + _loaded_error_types(_NETWORK_ERRORS)


def _probe(target: _Target) -> tuple[_RemoteTestFolder | None, BaseException | None]:
    """Ask the hub about the revision; return the error instead when the hub is unreachable or down."""
    api = HfApi(endpoint=target.endpoint, token=target.token)
    try:
        return _list_remote_test_folder(api, target), None
    except network_error_types() + (OSError,) as error:
        if not (isinstance(error, network_error_types()) or _is_hub_down(error)):
            raise _translate(error, target, None) from error
        logger.warning("Hugging Face Hub unavailable (%s); looking for a cached copy.",
                       describe_error(error, target.token))
        return None, error


def _is_hub_down(error: BaseException) -> bool:
    """Whether an HTTP error says the hub itself is failing (rate limit or server error)."""
    status = getattr(getattr(error, "response", None), "status_code", None)
    return isinstance(error, HfHubHTTPError) and isinstance(status, int) and (status == 429 or status >= 500)


def _list_remote_test_folder(api: HfApi, target: _Target) -> _RemoteTestFolder:
    """Resolve the revision to a commit and list the subset folders under ``test/``."""
    # A hub that accepts and never answers must not hang helm-run: repo_info passes its own timeout (None: none).
    info = api.repo_info(target.repo_id, repo_type=REPO_TYPE, revision=target.revision, timeout=limit_hub_requests())
    if info.sha is None:
        raise HubDownloadError(f"The hub at {target.hub_url} did not return a commit for revision '{target.revision}'.")
    try:
        entries = list(api.list_repo_tree(target.repo_id, TEST_SPLIT, revision=info.sha, repo_type=REPO_TYPE))
    except EntryNotFoundError as error:
        raise HubDownloadError(
            f"Dataset '{target.repo_id}' at revision '{target.revision}' (commit {info.sha}) has no "
            f"'{TEST_SPLIT}/' folder. Use a revision of the RoboReward dataset that has one (default: 'main')."
        ) from error
    subsets = sorted(entry.path.rsplit("/", 1)[-1] for entry in entries if isinstance(entry, RepoFolder))
    metadata = f"{TEST_SPLIT}/{METADATA_FILE}"
    has_metadata = any(isinstance(entry, RepoFile) and entry.path == metadata for entry in entries)
    return _RemoteTestFolder(commit=info.sha, subsets=tuple(subsets), has_metadata=has_metadata)


def _check_remote_subsets(remote: _RemoteTestFolder, wanted: tuple[str, ...] | None, target: _Target) -> None:
    """Fail before downloading anything if the metadata or a requested subset is missing."""
    where = f"dataset '{target.repo_id}' at revision '{target.revision}' (commit {remote.commit})"
    if not remote.has_metadata:
        raise HubDownloadError(f"'{TEST_SPLIT}/{METADATA_FILE}' is missing in {where}; use another revision.")
    missing = [name for name in wanted or () if name not in remote.subsets]
    if missing:
        raise HubDownloadError(
            f"Subset folder(s) {', '.join(missing)} not found under '{TEST_SPLIT}/' in {where}. "
            f"Available subset folders: {', '.join(remote.subsets) or '(none)'}. "
            "Fix the subset names or pick a revision that has them."
        )


def _allow_patterns(wanted: tuple[str, ...] | None) -> list[str]:
    """``snapshot_download`` patterns for the metadata and the requested subset folders."""
    if wanted is None:
        return [f"{TEST_SPLIT}/*"]
    return [f"{TEST_SPLIT}/{METADATA_FILE}"] + [f"{TEST_SPLIT}/{name}/*" for name in wanted]


def _snapshot(target: _Target, wanted: tuple[str, ...] | None, offline_cause: BaseException | None) -> str:
    """Run ``snapshot_download``; from the cache only when the hub was found unreachable."""
    try:
        return snapshot_download(
            target.repo_id,
            repo_type=REPO_TYPE,
            revision=target.revision,
            cache_dir=target.cache_dir,
            endpoint=target.endpoint,
            token=target.token,
            allow_patterns=_allow_patterns(wanted),
            local_files_only=offline_cause is not None,
            etag_timeout=limit_hub_requests(),
        )
    except network_error_types() + (OSError,) as error:
        raise _translate(error, target, offline_cause) from error


def _commit_of(root: str, remote: _RemoteTestFolder | None, target: _Target) -> str:
    """Return the commit a snapshot folder holds: its name in the ``huggingface_hub`` cache layout."""
    name = os.path.basename(os.path.normpath(root))
    if _COMMIT_SHA.match(name):
        if remote is not None and remote.commit != name:
            logger.warning("Revision '%s' moved to commit %s during the download.", target.revision, name)
        return name
    if remote is not None:
        return remote.commit
    raise HubDownloadError(f"Cannot tell which commit of '{target.repo_id}' the folder {root} holds.")


def _check_local_copy(
    root: str,
    commit: str,
    wanted: tuple[str, ...] | None,
    target: _Target,
    offline_cause: BaseException | None,
) -> None:
    """Make sure the snapshot holds the metadata and every requested subset folder."""
    split_dir = os.path.join(root, TEST_SPLIT)
    present = sorted(name for name in _list_dirs(split_dir))
    missing = [name for name in wanted or () if name not in present]
    if os.path.isfile(os.path.join(split_dir, METADATA_FILE)) and not missing:
        return
    what = f"subset folder(s) {', '.join(missing)}" if missing else f"'{TEST_SPLIT}/{METADATA_FILE}'"
    if offline_cause is not None:
        cached = f" (cached subset folders: {', '.join(present) or 'none'})"
        raise HubDownloadError(_unreachable_message(target, offline_cause, f"{what} of commit {commit}{cached}"))
    raise HubDownloadError(
        f"The download of dataset '{target.repo_id}' at revision '{target.revision}' (commit {commit}) "
        f"lacks {what}; present subset folders: {', '.join(present) or 'none'}. "
        "The revision may have changed during the download: retry, or pin a commit with revision=<sha>."
    )


def _list_dirs(path: str) -> list[str]:
    """Names of the sub-folders of ``path`` (empty when it does not exist)."""
    if not os.path.isdir(path):
        return []
    return [entry.name for entry in os.scandir(path) if entry.is_dir()]


def _translate(error: BaseException, target: _Target, offline_cause: BaseException | None) -> HubDownloadError:
    """Turn a ``huggingface_hub`` / HTTP client error into an actionable :class:`HubDownloadError`."""
    if isinstance(error, HubDownloadError):
        return error
    cause = describe_error(error, target.token)
    if isinstance(error, RevisionNotFoundError):
        return HubDownloadError(
            f"Revision '{target.revision}' was not found in dataset '{target.repo_id}' on {target.hub_url}. "
            "Use an existing branch, tag or full 40-character commit sha (default: 'main'); "
            f"see {target.page_url}/commits/main for the history. Cause: {cause}"
        )
    if isinstance(error, GatedRepoError):
        return HubDownloadError(_access_message(target, cause, gated=True))
    if isinstance(error, RepositoryNotFoundError):
        return HubDownloadError(_access_message(target, cause, gated=False))
    if isinstance(error, LocalEntryNotFoundError) or isinstance(error, network_error_types()):
        # huggingface_hub >= 2 names the missing files in IncompleteSnapshotError: keep that detail.
        detailed = type(error).__name__ == "IncompleteSnapshotError"
        reason = "the local cache holds no complete copy of the requested files"
        return HubDownloadError(_unreachable_message(target, error if detailed else offline_cause or error, reason))
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, HfHubHTTPError) and status in (401, 403):
        return HubDownloadError(_access_message(target, cause, gated=False))
    if _is_hub_down(error):
        return HubDownloadError(
            f"The Hugging Face Hub at {target.hub_url} answered HTTP {status} while downloading "
            f"'{target.repo_id}' (revision '{target.revision}'): retry later, or pass data=<local path> "
            f"or data=sample to run without the hub. Cause: {cause}"
        )
    if isinstance(error, HfHubHTTPError):
        return HubDownloadError(
            f"The server at {target.hub_url} answered HTTP {status} while downloading '{target.repo_id}' "
            f"(revision '{target.revision}'). Check that the endpoint (endpoint= or HF_ENDPOINT) is a Hugging Face "
            f"Hub, or pass data=<local path> or data=sample to run without the hub. Cause: {cause}"
        )
    return HubDownloadError(
        f"Downloading the test split of '{target.repo_id}' (revision '{target.revision}') into "
        f"{target.cache_folder} failed: {cause}. Check disk space and permissions of the cache, then retry."
    )


def _unreachable_message(target: _Target, cause: BaseException, missing: str) -> str:
    """Message for "no network (or offline mode) and the cache cannot serve the request"."""
    if getattr(constants, "HF_HUB_OFFLINE", False):
        reason = "HF_HUB_OFFLINE is set, so the Hugging Face Hub was not contacted"
    else:
        reason = f"the Hugging Face Hub at {target.hub_url} could not be reached"
    return (
        f"Cannot download the RoboRewardBench test split of '{target.repo_id}' at revision '{target.revision}': "
        f"{reason}, "
        f"and {missing} (cache: {target.cache_folder}). To fix it, do one of: "
        "pass data=<local path> (a local copy of the dataset, the folder holding "
        f"'{TEST_SPLIT}/{METADATA_FILE}') or data=sample (the small bundled sample); "
        "pre-download the split where the hub is reachable, e.g. "
        f"`hf download {target.repo_id} --repo-type dataset --include '{TEST_SPLIT}/*'` "
        "(older huggingface_hub: `huggingface-cli download ...`), into the same cache (HF_HUB_CACHE or cache_dir); "
        "set HF_ENDPOINT to a reachable Hugging Face mirror; or go online (and unset HF_HUB_OFFLINE). "
        f"Cause: {describe_error(cause, target.token)}"
    )


def _access_message(target: _Target, cause: str, *, gated: bool) -> str:
    """Message for "repository not found, private, gated or the token was refused"."""
    if gated:
        problem = f"dataset '{target.repo_id}' is gated: request access on {target.page_url}, then authenticate"
    else:
        problem = (
            f"dataset '{target.repo_id}' was not found on {target.hub_url}, or it is private or gated and this "
            "request is not authorized: check the repository id and, if it needs access, authenticate"
        )
    return (
        f"Cannot access the benchmark data: {problem} with a Hugging Face token that has access: run "
        "`huggingface-cli login` (or `hf auth login`), or set the HF_TOKEN environment variable. "
        f"Cause: {cause}"
    )


def describe_error(error: BaseException, token: str | None = None) -> str:
    """One-line description of a hub error without ``token``, the environment's tokens or anything token-like."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    for secret in (token, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")):
        if secret:
            text = text.replace(secret, "***")
    text = _TOKEN_LIKE.sub("hf_***", text)
    if len(text) > _MAX_CAUSE_CHARS:
        text = text[: _MAX_CAUSE_CHARS - 3] + "..."
    return text

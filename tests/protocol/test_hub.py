"""Offline tests of ``protocol.data_sources`` against the loopback fake hub (``tests/helpers/fakes/hf_hub.py``)."""

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants, hf_hub_download
from huggingface_hub.utils import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

from helm_roboreward.protocol.data_sources import DownloadedSplit, HubDownloadError, download_test_split
from helm_roboreward.protocol.rules import DATASET_ID
from tests.helpers.fakes import unused_port
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.fakes.silent import SilentServer

SHA_MAIN = make_commit_sha("main")
SHA_V0 = make_commit_sha("v0")
ENV_TOKEN = "hf_envTokenForTests0123456789"
MAIN_TEST_SUBSETS = ("bridge", "droid", "jaco_play")


def _make_split(root: Path, split: str, subsets: list[str], videos: int = 2) -> list[str]:
    """Write ``<split>/metadata.jsonl`` and fake mp4 files; return their repo paths."""
    rows = []
    paths = [f"{split}/metadata.jsonl"]
    for subset in subsets:
        for index in range(videos):
            name = f"{subset}/ep{index}.mp4"
            video = root / split / name
            video.parent.mkdir(parents=True, exist_ok=True)
            video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + name.encode())
            rows.append({"file_name": name, "task": "pick", "reward": 1 + index})
            paths.append(f"{split}/{name}")
    (root / split / "metadata.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return paths


@pytest.fixture(autouse=True)
def _isolated_hf_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Online mode, a fake token from the environment, no proxy for the loopback fake."""
    monkeypatch.setenv("HF_TOKEN", ENV_TOKEN)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_OIDC_RESOURCE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def repo_files(tmp_path: Path) -> dict[str, list[str]]:
    """Two commits of a RoboReward-shaped dataset; returns the repo paths of each split of main."""
    main, old = tmp_path / "repo-main", tmp_path / "repo-v0"
    files = {
        "test": _make_split(main, "test", list(MAIN_TEST_SUBSETS)),
        "train": _make_split(main, "train", ["bridge", "droid"]),
        "val": _make_split(main, "val", ["bridge"]),
    }
    (main / "README.md").write_text("# RoboReward (fake)\n")
    _make_split(old, "test", ["bridge"])
    return files


@pytest.fixture
def hub(repo_files: dict[str, list[str]], tmp_path: Path) -> Iterator[FakeHfHub]:
    """The fake hub serving the dataset (paginated tree listings, 3 entries per page)."""
    repo = FakeRepo(
        DATASET_ID,
        commits={SHA_MAIN: tmp_path / "repo-main", SHA_V0: tmp_path / "repo-v0"},
        refs={"main": SHA_MAIN, "v0": SHA_V0},
    )
    with FakeHfHub([repo], page_size=3) as fake:
        yield fake


@pytest.fixture
def cache_dir(tmp_path: Path) -> str:
    return str(tmp_path / "hf-cache")


def _closed_port_url() -> str:
    """URL of a loopback port nothing listens on."""
    return f"http://127.0.0.1:{unused_port()}"


def _local_files(split: DownloadedSplit) -> list[str]:
    root = Path(split.root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_downloads_only_requested_subsets_and_metadata(hub: FakeHfHub, cache_dir: str) -> None:
    split = download_test_split(["bridge", "droid"], cache_dir=cache_dir, endpoint=hub.url)

    expected = ["test/bridge/ep0.mp4", "test/bridge/ep1.mp4", "test/droid/ep0.mp4", "test/droid/ep1.mp4"]
    expected.append("test/metadata.jsonl")
    assert hub.downloaded_files() == sorted(expected)
    assert set(hub.resolve_requests("HEAD")) <= set(expected)
    assert _local_files(split) == sorted(expected)
    assert split == DownloadedSplit(root=split.root, commit=SHA_MAIN, repo_id=DATASET_ID, revision="main")
    assert Path(split.metadata_path).read_text().count("\n") == 6
    assert Path(split.root).name == SHA_MAIN and Path(split.root).is_relative_to(cache_dir)


def test_all_subsets_download_the_whole_test_split_and_nothing_else(
    hub: FakeHfHub, cache_dir: str, repo_files: dict[str, list[str]]
) -> None:
    split = download_test_split(None, cache_dir=cache_dir, endpoint=hub.url)

    assert hub.downloaded_files() == sorted(repo_files["test"])
    assert _local_files(split) == sorted(repo_files["test"])
    resolved = [request.path for request in hub.requests if "/resolve/" in request.path]
    assert resolved and not any("/train/" in path or "/val/" in path or "README" in path for path in resolved)


@pytest.mark.parametrize(
    ("revision", "commit"), [("main", SHA_MAIN), (SHA_MAIN, SHA_MAIN), ("v0", SHA_V0), (SHA_V0, SHA_V0)]
)
def test_commit_is_resolved_for_branches_tags_and_shas(
    hub: FakeHfHub, cache_dir: str, revision: str, commit: str
) -> None:
    split = download_test_split(["bridge"], revision=revision, cache_dir=cache_dir, endpoint=hub.url)

    assert split.commit == commit
    assert split.revision == revision
    assert Path(split.root).name == commit
    assert set(hub.downloaded_files()) == {"test/metadata.jsonl", "test/bridge/ep0.mp4", "test/bridge/ep1.mp4"}


def test_second_call_is_served_from_the_cache(hub: FakeHfHub, cache_dir: str) -> None:
    first = download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url)
    hub.clear_requests()

    second = download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url)

    assert second == first
    assert hub.resolve_requests("GET") == []
    assert hub.resolve_requests("HEAD") == []


def test_adding_a_subset_downloads_only_that_subset(hub: FakeHfHub, cache_dir: str) -> None:
    download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url)
    hub.clear_requests()

    split = download_test_split(["bridge", "jaco_play"], cache_dir=cache_dir, endpoint=hub.url)

    assert hub.downloaded_files() == ["test/jaco_play/ep0.mp4", "test/jaco_play/ep1.mp4"]
    assert (Path(split.root) / "test" / "bridge" / "ep0.mp4").is_file()


_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from helm_roboreward.protocol.data_sources import HubDownloadError, download_test_split

    cache_dir, endpoint = sys.argv[1], sys.argv[2]
    split = download_test_split(["bridge"], cache_dir=cache_dir, endpoint=endpoint)
    try:
        download_test_split(["jaco_play"], cache_dir=cache_dir, endpoint=endpoint)
        error = None
    except HubDownloadError as exc:
        error = str(exc)
    print(json.dumps({"root": split.root, "commit": split.commit, "error": error}))
    """
)


def test_hf_hub_offline_mode_works_from_the_cache(hub: FakeHfHub, cache_dir: str) -> None:
    """Run with HF_HUB_OFFLINE=1 in a fresh interpreter: huggingface_hub reads it at import time."""
    online = download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url)
    hub.clear_requests()
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    completed = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, cache_dir, hub.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["commit"] == SHA_MAIN
    assert result["root"] == online.root
    assert "HF_HUB_OFFLINE is set" in result["error"] and "data=sample" in result["error"]
    assert hub.requests == []


def test_unreachable_hub_without_cache_raises_a_helpful_error(cache_dir: str) -> None:
    endpoint = _closed_port_url()
    started = time.monotonic()

    with pytest.raises(HubDownloadError) as caught:
        download_test_split(["bridge"], cache_dir=cache_dir, endpoint=endpoint)

    message = str(caught.value)
    assert time.monotonic() - started < 10
    assert f"Hugging Face Hub at {endpoint} could not be reached" in message
    for hint in ("data=<local path>", "data=sample", "pre-download", "HF_ENDPOINT", "hf download"):
        assert hint in message
    assert ENV_TOKEN not in message


def test_a_hub_that_never_answers_fails_in_bounded_time(cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub endpoint that accepts and stays silent: every request has a limit (``ROBOREWARD_HUB_TIMEOUT``)."""
    monkeypatch.setenv("ROBOREWARD_HUB_TIMEOUT", "1")
    silent = SilentServer()
    started = time.monotonic()
    try:
        with pytest.raises(HubDownloadError, match="could not be reached"):
            download_test_split(["bridge"], cache_dir=cache_dir, endpoint=silent.url)
    finally:
        silent.close()
    assert time.monotonic() - started < 90 and silent.accepted  # huggingface_hub retries with a backoff


@pytest.mark.parametrize("revision", ["main", SHA_MAIN])
def test_unreachable_hub_falls_back_to_the_cache(hub: FakeHfHub, cache_dir: str, revision: str) -> None:
    online = download_test_split(["bridge"], revision=revision, cache_dir=cache_dir, endpoint=hub.url)
    started = time.monotonic()

    offline = download_test_split(["bridge"], revision=revision, cache_dir=cache_dir, endpoint=_closed_port_url())

    assert offline == online
    assert time.monotonic() - started < 10  # no retry back-off on the dead endpoint


def test_hub_outage_falls_back_to_the_cache(hub: FakeHfHub, cache_dir: str, tmp_path: Path) -> None:
    online = download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url)
    hub.outage_status = 503
    started = time.monotonic()

    assert download_test_split(["bridge"], cache_dir=cache_dir, endpoint=hub.url) == online
    with pytest.raises(HubDownloadError) as caught:
        download_test_split(["bridge"], cache_dir=str(tmp_path / "empty-cache"), endpoint=hub.url)

    assert "503" in str(caught.value) and "data=sample" in str(caught.value)
    assert time.monotonic() - started < 10  # no retry back-off


def test_unknown_revision_is_named(hub: FakeHfHub, cache_dir: str) -> None:
    with pytest.raises(HubDownloadError, match="Revision 'no-such-branch' was not found") as caught:
        download_test_split(["bridge"], revision="no-such-branch", cache_dir=cache_dir, endpoint=hub.url)

    assert DATASET_ID in str(caught.value)
    assert hub.resolve_requests("GET") == []


def test_missing_subset_is_named_with_the_available_ones(hub: FakeHfHub, cache_dir: str) -> None:
    with pytest.raises(HubDownloadError) as caught:
        download_test_split(["bridge", "not_a_subset"], cache_dir=cache_dir, endpoint=hub.url)

    message = str(caught.value)
    assert "not_a_subset" in message and "bridge, droid, jaco_play" in message
    assert "'main'" in message and SHA_MAIN in message
    assert hub.resolve_requests("GET") == []  # failed before downloading anything


def test_subset_missing_in_an_older_revision(hub: FakeHfHub, cache_dir: str) -> None:
    with pytest.raises(HubDownloadError, match=r"droid not found .* revision 'v0'.*Available subset folders: bridge\."):
        download_test_split(["droid"], revision="v0", cache_dir=cache_dir, endpoint=hub.url)


def test_unknown_repository_mentions_the_token(hub: FakeHfHub, cache_dir: str) -> None:
    with pytest.raises(HubDownloadError) as caught:
        download_test_split(["bridge"], repo_id="teetone/NoSuchDataset", cache_dir=cache_dir, endpoint=hub.url)

    message = str(caught.value)
    assert "teetone/NoSuchDataset" in message and "not found" in message
    assert "huggingface-cli login" in message and "HF_TOKEN" in message
    assert ENV_TOKEN not in message


def test_private_repository_needs_the_right_token(tmp_path: Path, cache_dir: str) -> None:
    _make_split(tmp_path / "private", "test", ["bridge"])
    right, wrong = "hf_rightTokenABCDEFGHIJ", "hf_wrongTokenABCDEFGHIJ"
    repo = FakeRepo("lab/private", {SHA_MAIN: tmp_path / "private"}, {"main": SHA_MAIN}, token=right, private=True)
    with FakeHfHub([repo]) as fake:
        with pytest.raises(HubDownloadError, match="HF_TOKEN") as caught:
            download_test_split(["bridge"], repo_id="lab/private", cache_dir=cache_dir, endpoint=fake.url, token=wrong)
        assert wrong not in str(caught.value) and right not in str(caught.value)

        split = download_test_split(
            ["bridge"], repo_id="lab/private", cache_dir=cache_dir, endpoint=fake.url, token=right
        )
    assert split.commit == SHA_MAIN


def test_gated_repository_says_how_to_get_access(tmp_path: Path, cache_dir: str) -> None:
    _make_split(tmp_path / "gated", "test", ["bridge"])
    granted = "hf_grantedABCDEFGH"
    repo = FakeRepo("lab/gated", {SHA_MAIN: tmp_path / "gated"}, {"main": SHA_MAIN}, token=granted, gated=True)
    with FakeHfHub([repo]) as fake:
        with pytest.raises(HubDownloadError) as caught:
            download_test_split(["bridge"], repo_id="lab/gated", cache_dir=cache_dir, endpoint=fake.url)
        page = f"{fake.url}/datasets/lab/gated"

    message = str(caught.value)
    assert "is gated" in message and f"request access on {page}" in message and "HF_TOKEN" in message


@pytest.mark.parametrize("subsets", [[], [""], ["../train"], ["test/bridge"], ["*"], ["bri?ge"]])
def test_invalid_subset_names_are_rejected_before_any_request(hub: FakeHfHub, subsets: list[str]) -> None:
    with pytest.raises(ValueError):
        download_test_split(subsets, cache_dir="unused", endpoint=hub.url)
    assert hub.requests == []


def test_a_single_subset_string_is_accepted(hub: FakeHfHub, cache_dir: str) -> None:
    split = download_test_split("droid", cache_dir=cache_dir, endpoint=hub.url)
    assert (Path(split.root) / "test" / "droid" / "ep1.mp4").is_file()


def test_fake_hub_speaks_the_protocol_huggingface_hub_expects(hub: FakeHfHub, cache_dir: str) -> None:
    """Self-test of the fake: plain HTTP file metadata and the errors huggingface_hub maps."""
    path = hf_hub_download(
        DATASET_ID, "test/metadata.jsonl", repo_type="dataset", cache_dir=cache_dir, endpoint=hub.url
    )
    assert Path(path).read_text().startswith('{"file_name": "bridge/ep0.mp4"')

    request = urllib.request.Request(f"{hub.url}/datasets/{DATASET_ID}/resolve/main/test/bridge/ep0.mp4", method="HEAD")
    with urllib.request.urlopen(request) as response:
        assert response.headers["X-Repo-Commit"] == SHA_MAIN
        assert response.headers["ETag"].startswith('"') and int(response.headers["Content-Length"]) > 0
        assert not [name for name in response.headers if name.lower().startswith("x-xet")]

    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(DATASET_ID, "test/metadata.jsonl", repo_type="dataset", revision="nope", endpoint=hub.url)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("nobody/nothing", "x.txt", repo_type="dataset", cache_dir=cache_dir, endpoint=hub.url)
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(DATASET_ID, "test/absent.txt", repo_type="dataset", cache_dir=cache_dir, endpoint=hub.url)
    api = huggingface_hub.HfApi(endpoint=hub.url)
    listed = {entry.path for entry in api.list_repo_tree(DATASET_ID, "test", repo_type="dataset")}
    assert listed == {"test/metadata.jsonl"} | {f"test/{name}" for name in MAIN_TEST_SUBSETS}

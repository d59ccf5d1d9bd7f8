"""OpenAIVideoClient under HELM's request threads (``helm-run -n N``): what is shared, and that nothing serialises.

No timings (benchmarks/requests_in_flight.py measures the speedups): the loopback fake holds every request until
N of them are in flight at once, so a client that serialised its requests would fail here, whatever the machine's
speed. Then the shared pieces (helm_roboreward/helm_layer/clients/concurrency.py): one ``openai`` client per server
for every instance HELM's AutoClient builds, one SQLite connection per cache file that writes exactly HELM's rows,
reopened when the file goes away, and HELM's own cache path whenever the shared connection fails.
"""

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helm.common.cache import BlackHoleCacheConfig, Cache, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request

from helm_roboreward.helm_layer.clients import concurrency, openai_video_client
from helm_roboreward.helm_layer.clients.concurrency import ProcessSqliteCache, request_cache, shared_openai_client
from helm_roboreward.helm_layer.clients.openai_video_client import OpenAIVideoClient
from tests.helpers.fakes import CHAT, FakeModelServer, Recorded, Reply

THREADS = 16


def make_client(base_url: str, cache_config: Any = None, **kwargs: Any) -> OpenAIVideoClient:
    return OpenAIVideoClient(cache_config=cache_config or BlackHoleCacheConfig(), base_url=base_url,
                             api_key="sk-test", **kwargs)


def frame_request(frame: Path, text: str = "rate the video") -> Request:
    media = [MediaObject(text=text, content_type="text/plain"),
             MediaObject(location=str(frame), content_type="image/jpeg")]
    return Request(model="meta/llama-4-scout-17b-16e-instruct", model_deployment="vllm/llama-4-scout-17b-16e-instruct",
                   multimodal_prompt=MultimediaObject(media), max_tokens=16, temperature=0.0)


def frames(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = folder / f"{index:04d}.jpg"
        path.write_bytes(b"\xff\xd8\xff\xe0 frame %d \xff\xd9" % index)
        paths.append(path)
    return paths


def all_together(count: int) -> Callable[[Recorded], Reply]:
    """Answer only once ``count`` requests are in flight together (a 500 if they never are)."""
    barrier = threading.Barrier(count)

    def behaviour(recorded: Recorded) -> Reply:
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            return Reply(status=500, error="the requests did not arrive together")
        return Reply(text="ANSWER: 3")
    return behaviour


def test_n_threads_have_n_requests_in_flight(tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    paths = frames(tmp_path / "frames", THREADS)
    with FakeModelServer(all_together(THREADS)) as fake:
        client = make_client(fake.base_url, cache, max_retries=0)
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(client.make_request, [frame_request(path) for path in paths]))
        assert [result.error for result in results if not result.success] == []
        assert len(fake.requests_to(CHAT)) == THREADS
        with ThreadPoolExecutor(THREADS) as pool:  # every answer was written: now all served from the cache
            again = list(pool.map(client.make_request, [frame_request(path) for path in paths]))
    assert all(result.cached for result in again)


def test_clients_built_by_racing_threads_share_one_openai_client(tmp_path: Path) -> None:
    """HELM's AutoClient builds a deployment's client on the first request without a lock: N threads, N clients."""
    url = "http://127.0.0.1:9/v1"
    cache = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    barrier = threading.Barrier(THREADS)

    def build(_: int) -> OpenAIVideoClient:
        barrier.wait(timeout=30)
        return make_client(url, cache)

    with ThreadPoolExecutor(THREADS) as pool:
        clients = list(pool.map(build, range(THREADS)))
    assert len({id(client.client) for client in clients}) == 1
    assert clients[0].client is shared_openai_client(url, "sk-test", 4, 600.0)
    assert make_client(url, max_retries=0).client is not clients[0].client  # other settings, another client
    assert make_client("http://127.0.0.1:10/v1").client is not clients[0].client


def test_the_cache_is_helms_own_format(tmp_path: Path) -> None:
    config = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    ours, helms = request_cache(config), Cache(config)
    assert isinstance(ours, ProcessSqliteCache)
    assert ours.get({"request": 1}, lambda: {"answer": "ANSWER: 1"}) == ({"answer": "ANSWER: 1"}, False)
    assert helms.get({"request": 1}, _never) == ({"answer": "ANSWER: 1"}, True)
    assert helms.get({"request": 2}, lambda: {"answer": "ANSWER: 2"}) == ({"answer": "ANSWER: 2"}, False)
    assert ours.get({"request": 2}, _never) == ({"answer": "ANSWER: 2"}, True)
    assert type(request_cache(BlackHoleCacheConfig())) is Cache


def test_simultaneous_misses_are_all_written(tmp_path: Path) -> None:
    config = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    caches = [request_cache(config) for _ in range(THREADS)]  # one per racing client, one connection between them
    barrier = threading.Barrier(THREADS)

    def miss(index: int) -> tuple[dict[str, Any], bool]:
        barrier.wait(timeout=30)
        return caches[index].get({"request": index}, lambda: {"answer": index})

    with ThreadPoolExecutor(THREADS) as pool:
        assert list(pool.map(miss, range(THREADS))) == [({"answer": i}, False) for i in range(THREADS)]
    helms = Cache(config)
    assert [helms.get({"request": i}, _never) for i in range(THREADS)] == [({"answer": i}, True)
                                                                            for i in range(THREADS)]


def test_a_deleted_cache_file_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "vllm.sqlite"
    cache = request_cache(SqliteCacheConfig(str(path)))
    assert cache.get({"request": 1}, lambda: {"answer": 1}) == ({"answer": 1}, False)
    path.unlink()
    assert cache.get({"request": 1}, lambda: {"answer": 2}) == ({"answer": 2}, False)
    assert Cache(SqliteCacheConfig(str(path))).get({"request": 1}, _never) == ({"answer": 2}, True)


def test_a_failing_shared_connection_falls_back_to_helms_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(concurrency, "hwarn", warnings.append)
    config = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    cache = request_cache(config)

    def broken(self: Any) -> Any:
        raise OSError("disk I/O error")

    monkeypatch.setattr(concurrency._SharedStore, "connection", broken)
    assert cache.get({"request": 1}, lambda: {"answer": 1}) == ({"answer": 1}, False)
    assert cache.get({"request": 1}, _never) == ({"answer": 1}, True)
    assert len(warnings) == 2 and "disk I/O error" in warnings[0]
    monkeypatch.undo()
    assert request_cache(config).get({"request": 1}, _never) == ({"answer": 1}, True)


def test_media_is_read_once_and_encoded_only_on_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = frames(tmp_path / "frames", 1)[0]
    opened: list[str] = []
    encoded: list[int] = []
    real_open, real_data_url = open, openai_video_client._data_url

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_data_url(content_type: str, data: bytes) -> str:
        encoded.append(len(data))
        return real_data_url(content_type, data)

    monkeypatch.setattr(openai_video_client, "open", counting_open, raising=False)
    monkeypatch.setattr(openai_video_client, "_data_url", counting_data_url)
    cache = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    with FakeModelServer() as fake:
        first = make_client(fake.base_url, cache).make_request(frame_request(frame))
        second = make_client(fake.base_url, cache).make_request(frame_request(frame))
    assert (first.success, first.cached, second.success, second.cached) == (True, False, True, True)
    assert opened == [str(frame), str(frame)]  # once per request: the key's digest and the body share the bytes
    assert encoded == [frame.stat().st_size]  # base64 only for the miss


def _never() -> dict[str, Any]:
    raise AssertionError("computed although cached")

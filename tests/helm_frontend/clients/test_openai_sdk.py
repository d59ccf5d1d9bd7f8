"""OpenAIVideoClient under HELM's request threads (``helm-run -n N``): one shared ``openai`` client, nothing serialised.

No timings (benchmarks/requests_in_flight.py measures them): the loopback fake holds every request until N of them
are in flight at once, so a client that serialised its requests would fail here, whatever the machine's speed.
Then the shared piece (``openai_video_client.shared_openai_client``): one ``openai`` client per server and
settings for every instance HELM's AutoClient builds; the request cache is HELM's own.
"""

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from helm.common.cache import BlackHoleCacheConfig, Cache, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request

from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient, shared_openai_client
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
        assert type(client.cache) is Cache, "HELM's own request cache"
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
    assert clients[0].client is shared_openai_client(url, "sk-test", 2, 300.0, 10.0)
    assert make_client(url, max_retries=0).client is not clients[0].client  # other settings, another client
    assert make_client(url, timeout_seconds=5.0).client is not clients[0].client
    assert make_client("http://127.0.0.1:10/v1").client is not clients[0].client


def test_the_shared_client_has_the_settings_it_was_asked_for() -> None:
    client = shared_openai_client("http://127.0.0.1:9/v1", "sk-other", 3, 42.0, 4.0)
    assert (str(client.base_url), client.api_key, client.max_retries) == ("http://127.0.0.1:9/v1/", "sk-other", 3)
    assert (client.timeout.read, client.timeout.connect) == (42.0, 4.0)

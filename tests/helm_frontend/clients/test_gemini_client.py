"""The one-message Gemini client: HELM's GoogleGenAIClient with the prompt in one user message, cached apart."""

from google.genai.types import Content, Part
from helm.common.cache import BlackHoleCacheConfig, MongoCacheConfig, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request

from helm_roboreward.helm_frontend.clients.gemini_client import (
    OneMessageGoogleGenAIClient,
    merge_turns,
    separate_cache_config,
)
from tests.helpers import videos


def test_consecutive_user_turns_become_one_message() -> None:
    text, video, answer = Part.from_text(text="prompt"), Part.from_bytes(data=b"v", mime_type="video/mp4"), \
        Part.from_text(text="ok")
    merged = merge_turns([Content(role="user", parts=[text]), Content(role="user", parts=[video]),
                          Content(role="model", parts=[answer]), Content(role="user", parts=[text])])
    assert [(c.role, c.parts) for c in merged] == [("user", [text, video]), ("model", [answer]), ("user", [text])]
    assert merge_turns([]) == []


def test_the_cache_is_kept_apart_from_helms() -> None:
    assert separate_cache_config(SqliteCacheConfig("prod_env/cache/google.sqlite")) == SqliteCacheConfig(
        "prod_env/cache/google-one-message.sqlite")
    assert separate_cache_config(SqliteCacheConfig("cache/google")) == SqliteCacheConfig("cache/google-one-message")
    mongo = separate_cache_config(MongoCacheConfig("mongodb://h/db", "google"))
    assert isinstance(mongo, MongoCacheConfig) and mongo.collection_name == "google-one-message"
    assert separate_cache_config(BlackHoleCacheConfig()) == BlackHoleCacheConfig()


def test_a_multimodal_request_is_one_user_message_text_then_video(tmp_path) -> None:
    path = videos.make_video(tmp_path / "v.mp4", 5)
    client = OneMessageGoogleGenAIClient(SqliteCacheConfig(str(tmp_path / "google.sqlite")), api_key="test-key")
    prompt = MultimediaObject([MediaObject(text="the prompt", content_type="text/plain"),
                               MediaObject(location=str(path), content_type="video/mp4")])
    request = Request(model="google/gemini-2.5-flash", model_deployment="google/gemini-2.5-flash-one-message",
                      multimodal_prompt=prompt)
    (content,) = client._convert_request_to_contents(request)
    assert content.role == "user"
    assert content.parts is not None and [part.text for part in content.parts][:1] == ["the prompt"]
    assert content.parts[1].inline_data is not None
    assert content.parts[1].inline_data.data == path.read_bytes()
    assert content.parts[1].inline_data.mime_type == "video/mp4"
    assert client.cache is not None
    config = client.cache.config
    assert isinstance(config, SqliteCacheConfig) and config.path.endswith("google-one-message.sqlite")

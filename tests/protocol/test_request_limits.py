"""Request limits: the pure check, the providers' documented limits by client class, and declared limits.

Who applies them: ``roboreward estimate`` (every planned row, before anything is sent; tests/presentation) and this
package's video client for vLLM, which never sends a request over its deployment's declared limits (that row
fails alone; tests/clients). A HELM client takes no declared limits: routing refuses them
(tests/official/test_routing.py).
"""

import pytest

from helm_roboreward.protocol.request_limits import (
    MEGABYTE,
    PlannedRequest,
    RequestLimits,
    base64_length,
    deployment_limits,
    limit_report,
)

CLAUDE_CLIENT = "helm.clients.anthropic_client.AnthropicMessagesClient"
OPENAI_RESPONSES = "helm.clients.openai_responses_client.OpenAIResponseClient"
GEMINI_CLIENT = "helm.clients.google_genai_client.GoogleGenAIClient"
VIDEO_CLIENT = "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient"
ANTHROPIC = RequestLimits(max_images=100, max_request_bytes=32 * MEGABYTE, source="Anthropic Messages API")


def request(line: int, images: int = 0, videos: int = 0, sizes: tuple[int, ...] = (),
            text: int = 900) -> PlannedRequest:
    return PlannedRequest(f"metadata line {line}", images, videos, sizes, text)


# --------------------------------------------------------------------------------------------- the check


def test_base64_inflation() -> None:
    assert [base64_length(n) for n in (0, 1, 2, 3, 4, 3_000_000)] == [0, 4, 4, 4, 8, 4_000_000]


def test_requests_within_the_limits_pass() -> None:
    assert limit_report([request(1, images=100, sizes=(100_000,) * 100)], ANTHROPIC, "anthropic/x") is None


def test_too_many_images_names_the_rows_the_limit_and_max_frames() -> None:
    requests = [request(3, images=101, sizes=(1000,) * 101), request(4, images=5, sizes=(1000,) * 5),
                request(9, images=130, sizes=(1000,) * 130)]
    message = limit_report(requests, ANTHROPIC, "anthropic/claude-sonnet-4-5-20250929") or ""
    assert "2 of 3 row(s)" in message and "'anthropic/claude-sonnet-4-5-20250929'" in message
    assert "metadata line 3: 101 images" in message and "metadata line 9: 130 images" in message
    assert "metadata line 4" not in message
    assert "at most 100 images and 32 MB per request (Anthropic Messages API)" in message
    assert "max_frames=100" in message


def test_request_bytes_count_media_at_four_thirds() -> None:
    raw = 25 * MEGABYTE  # fits 32 MB as raw bytes, not once base64-encoded (33.3 MB)
    over = [request(7, images=10, sizes=(raw // 10,) * 10)]
    message = limit_report(over, ANTHROPIC, "anthropic/x") or ""
    assert "metadata line 7: 33.3 MB with base64" in message
    assert "max_side=" in message
    assert limit_report(over, RequestLimits(max_request_bytes=32 * MEGABYTE, inline_base64=False), "vllm/x") is None


def test_native_video_over_the_inline_limit_suggests_frames() -> None:
    limits = RequestLimits(max_request_bytes=100 * MEGABYTE, source="Gemini API inline data")
    assert "video=frames" in (limit_report([request(2, videos=1, sizes=(80 * MEGABYTE,))], limits,
                                           "google/gemini-2.5-pro") or "")


def test_more_than_ten_rows_are_counted_not_listed() -> None:
    requests = [request(line, images=5, sizes=(10,) * 5) for line in range(1, 26)]
    message = limit_report(requests, RequestLimits(max_images=3), "vllm/x") or ""
    assert "25 of 25 row(s)" in message and "and 15 more" in message


def test_limits_are_whole_numbers() -> None:
    with pytest.raises(ValueError, match="max_images=-1 must be a whole number"):
        RequestLimits(max_images=-1)


# --------------------------------------------------------------------------------------------- per client


@pytest.mark.parametrize("client, args, images, megabytes", [
    (CLAUDE_CLIENT, {}, 100, 32),
    (OPENAI_RESPONSES, {}, 500, 50),
    ("helm.clients.openai_client.OpenAIClient", {}, 500, 50),
    (GEMINI_CLIENT, {}, 0, 100),
    (GEMINI_CLIENT, {"genai_use_vertexai": True}, 0, 0),
    ("helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient", {}, 0, 100),
    ("helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient", {}, 0, 0),
    (VIDEO_CLIENT, {}, 0, 0),
    ("helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient", {}, 0, 0),
])
def test_documented_limits_by_client(client: str, args: dict[str, object], images: int, megabytes: int) -> None:
    limits = deployment_limits("some/deployment", client, args)
    assert (limits.max_images, limits.max_request_bytes) == (images, megabytes * MEGABYTE)
    assert "https://" in limits.source or limits.is_empty


def test_anthropic_long_context_models_take_600_images() -> None:
    assert deployment_limits("anthropic/long", CLAUDE_CLIENT, {}, max_sequence_length=1_000_000).max_images == 600
    assert deployment_limits("anthropic/std", CLAUDE_CLIENT, {}, max_sequence_length=200_000).max_images == 100


def test_declared_limits_override_documented_ones_field_by_field() -> None:
    limits = deployment_limits("vllm/declared", VIDEO_CLIENT, {"max_images_per_prompt": 4, "max_request_bytes": 9})
    assert (limits.max_images, limits.max_videos, limits.max_request_bytes) == (4, 0, 9)
    assert "declared by deployment vllm/declared (max_images_per_prompt: 4, max_request_bytes: 9)" in limits.source


def test_file_url_transport_is_not_base64() -> None:
    assert deployment_limits("vllm/local", VIDEO_CLIENT, {"video_transport": "file_url"}).inline_base64 is False


@pytest.mark.parametrize("value", ["three", -1, 0, 2.5, True])
def test_a_bad_declared_limit_names_the_deployment(value: object) -> None:
    with pytest.raises(ValueError, match=r"'vllm/bad-limit-test' declares max_images_per_prompt"):
        deployment_limits("vllm/bad-limit-test", VIDEO_CLIENT, {"max_images_per_prompt": value})

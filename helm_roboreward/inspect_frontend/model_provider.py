"""The package's own clients as an Inspect model provider: ``--model roboreward/<deployment>``.

The offline baselines (``roboreward/baseline/constant-3``, ``roboreward/baseline/uniform-random``) and this
package's vLLM and transformers clients (``roboreward/vllm/roboreward-8b`` sends the mp4, as helm-run does) get the
request helm-run makes: a HELM ``Request`` with the same parts, to the deployment's client class with its
arguments. So the official route of the mp4 families runs unchanged where Inspect's own providers cannot send video.
"""

import mimetypes
import os
from typing import Any

import anyio
from helm.benchmark import model_deployment_registry as deployments  # noqa: TID251 (the provider runs HELM clients)
from helm.common.cache import BlackHoleCacheConfig  # noqa: TID251 (the provider runs HELM clients)
from helm.common.media_object import MediaObject, MultimediaObject  # noqa: TID251 (the provider runs HELM clients)
from helm.common.object_spec import create_object, inject_object_spec_args  # noqa: TID251 (the provider runs HELM clients)
from helm.common.request import Request  # noqa: TID251 (the provider runs HELM clients)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    ContentImage,
    ContentText,
    ContentVideo,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from helm_roboreward.inspect_frontend.sample_media import PROVIDER, RouteError, max_tokens, package_deployment
from helm_roboreward.protocol import rules as protocol

BASE_URL_VARIABLE, API_KEY_VARIABLE = "VLLM_BASE_URL", "VLLM_API_KEY"
"""Where a vLLM deployment's server is (Inspect's own vllm provider reads the same variables)."""


DEFAULT_CONFIG = GenerateConfig()


class RequestFailedError(Exception):
    """The client's request failed after its retries: the task charges it as the official rule says."""


def request_parts(messages: list[ChatMessage]) -> list[MediaObject]:
    """The user messages' parts in order as HELM media objects; a part the clients cannot carry is a ValueError."""
    parts = []
    for message in messages:
        if not isinstance(message, ChatMessageUser):
            raise ValueError(f"the {PROVIDER} provider takes user messages only, got a {message.role} message")
        content = [ContentText(text=message.content)] if isinstance(message.content, str) else message.content
        for part in content:
            if isinstance(part, ContentText):
                parts.append(MediaObject(text=part.text, content_type="text/plain"))
            elif isinstance(part, (ContentImage, ContentVideo)):
                location = part.image if isinstance(part, ContentImage) else part.video
                if location.startswith("data:") or not os.path.isfile(location):
                    raise ValueError(f"the {PROVIDER} provider sends media files, got {location[:40]!r}")
                parts.append(MediaObject(location=location, content_type=mimetypes.guess_type(location)[0] or ""))
            else:
                raise ValueError(f"the {PROVIDER} provider cannot send {part.type} content")
    return parts


@modelapi(name=PROVIDER)
class RoboRewardModelAPI(ModelAPI):
    """One of this package's deployments, through its own HELM client (no HELM request cache)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = DEFAULT_CONFIG, **model_args: Any) -> None:
        """Build the deployment's client; a vLLM deployment needs its server's URL (RouteError otherwise)."""
        super().__init__(model_name, base_url, api_key, [API_KEY_VARIABLE], config)
        if model_args:
            raise RouteError(f"--model {PROVIDER}/{model_name}: unknown model arguments {sorted(model_args)}; the "
                             "deployment's arguments are fixed (roboreward add-model registers another)")
        self.helm_model, client_class = package_deployment(model_name)
        url = base_url or os.environ.get(BASE_URL_VARIABLE)
        if client_class == protocol.OPENAI_VIDEO_CLIENT and not url:
            raise RouteError(f"--model {PROVIDER}/{model_name} needs its vLLM server's URL: --model-base-url "
                             f"http://HOST:8000/v1 or {BASE_URL_VARIABLE} (and {API_KEY_VARIABLE} if it has a key)")
        key = api_key or os.environ.get(API_KEY_VARIABLE) or "EMPTY"
        spec = inject_object_spec_args(
            deployments.get_model_deployment(model_name).client_spec,
            constant_bindings={"cache_config": BlackHoleCacheConfig(), "model_name": self.helm_model},
            provider_bindings={"base_url": lambda: url, "api_key": lambda: key})
        self.client = create_object(spec)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        """Send the request helm-run sends (temperature 0, the protocol's max_tokens unless the config sets them)."""
        request = Request(model=self.helm_model, model_deployment=self.model_name,
                          multimodal_prompt=MultimediaObject(request_parts(input)),
                          temperature=config.temperature if config.temperature is not None else 0.0,
                          max_tokens=config.max_tokens or max_tokens(self.helm_model), num_completions=1,
                          stop_sequences=list(config.stop_seqs or []))
        result = await anyio.to_thread.run_sync(self.client.make_request, request)
        if not result.success or not result.completions:
            raise RequestFailedError(f"{self.model_name}: {result.error or 'no completion'}")
        completion = result.completions[0]
        finish = completion.finish_reason or {}
        usage = None
        if isinstance(finish.get("prompt_tokens"), int) and isinstance(finish.get("completion_tokens"), int):
            usage = ModelUsage(input_tokens=finish["prompt_tokens"], output_tokens=finish["completion_tokens"],
                               total_tokens=finish["prompt_tokens"] + finish["completion_tokens"])
        output = ModelOutput.from_content(model=self.model_name, content=completion.text)
        output.usage = usage
        return output

"""The documented request limits of each provider, by the client class a deployment uses.

The pre-flight check (:mod:`helm_roboreward.core.request_limits`) compares every instance with these before
any request; the routing step resolves them per deployment (:func:`limits_for_deployment`). Sources, as read
for this package (each provider may change them; the message always names the source):

- Anthropic Messages API: "up to 100 images per request" for models with a 200k-token context window, 600 for
  the others; "32 MB request size limit for standard endpoints"
  (https://platform.claude.com/docs/en/build-with-claude/vision). A deployment whose ``max_sequence_length``
  exceeds 200,000 gets the 600-image limit.
- OpenAI (Responses and Chat Completions): 500 images and 50 MB of payload per request
  (https://platform.openai.com/docs/guides/images-vision). Not verified from here: the page was not in the
  documentation this package could search; the numbers are the ones OpenAI published before.
- Gemini API (``GoogleGenAIClient`` without Vertex AI): inline data below 100 MB
  (https://ai.google.dev/gemini-api/docs/video-understanding, "Inline Data < 100MB"; the page said 20 MB for the
  whole request before Google raised the limit:
  https://blog.google/innovation-and-ai/technology/developers-tools/gemini-api-new-file-limits). Vertex AI has
  other limits and is not checked.
- vLLM and other servers: the limits a deployment declares with the client arguments ``max_images_per_prompt`` /
  ``max_videos_per_prompt`` (mirroring the server's ``--limit-mm-per-prompt``) and ``max_request_bytes`` (a
  proxy's body limit); declared values override the documented ones field by field (so a test deployment can
  declare tighter ones). In-process clients (transformers) and the offline baselines have no limits.
"""

from helm.benchmark.model_deployment_registry import ModelDeployment

from helm_roboreward.core.request_limits import MEGABYTE, RequestLimits
from helm_roboreward.helm_layer.model_registry import (
    HELM_GEMINI_CLIENT,
    ONE_MESSAGE_GEMINI_CLIENT,
    REQUEST_LIMIT_ARGS,
    declared_request_limits,
)

ANTHROPIC_CLIENTS = ("helm.clients.anthropic_client.AnthropicMessagesClient",)
OPENAI_CLIENTS = (
    "helm.clients.openai_responses_client.OpenAIResponseClient",
    "helm.clients.openai_client.OpenAIClient",
)
GEMINI_API_CLIENTS = (HELM_GEMINI_CLIENT, ONE_MESSAGE_GEMINI_CLIENT)

ANTHROPIC_DOCS = "https://platform.claude.com/docs/en/build-with-claude/vision"
OPENAI_DOCS = "https://platform.openai.com/docs/guides/images-vision"
GEMINI_DOCS = "https://ai.google.dev/gemini-api/docs/video-understanding"

ANTHROPIC_MAX_IMAGES = 100
ANTHROPIC_MAX_IMAGES_LONG_CONTEXT = 600
ANTHROPIC_LONG_CONTEXT = 200_000
"""Above this context window (tokens) Anthropic's image limit is the larger one."""
ANTHROPIC_MAX_REQUEST_BYTES = 32 * MEGABYTE
OPENAI_MAX_IMAGES = 500
OPENAI_MAX_REQUEST_BYTES = 50 * MEGABYTE
GEMINI_MAX_INLINE_BYTES = 100 * MEGABYTE

_DECLARED_FIELDS = dict(zip(REQUEST_LIMIT_ARGS, ("max_images", "max_videos", "max_request_bytes"), strict=True))


def documented_limits(deployment: ModelDeployment) -> RequestLimits:
    """The provider's documented limits for the deployment's client (empty when none are documented)."""
    client = deployment.client_spec.class_name
    inline = deployment.client_spec.args.get("video_transport", "data_url") != "file_url"
    if client in ANTHROPIC_CLIENTS:
        long_context = (deployment.max_sequence_length or 0) > ANTHROPIC_LONG_CONTEXT
        images = ANTHROPIC_MAX_IMAGES_LONG_CONTEXT if long_context else ANTHROPIC_MAX_IMAGES
        return RequestLimits(max_images=images, max_request_bytes=ANTHROPIC_MAX_REQUEST_BYTES,
                             source=f"Anthropic Messages API, {ANTHROPIC_DOCS}")
    if client in OPENAI_CLIENTS:
        return RequestLimits(max_images=OPENAI_MAX_IMAGES, max_request_bytes=OPENAI_MAX_REQUEST_BYTES,
                             source=f"OpenAI API, {OPENAI_DOCS}")
    if client in GEMINI_API_CLIENTS and deployment.client_spec.args.get("genai_use_vertexai") is not True:
        return RequestLimits(max_request_bytes=GEMINI_MAX_INLINE_BYTES,
                             source=f"Gemini API inline data, {GEMINI_DOCS}")
    return RequestLimits(inline_base64=inline)


def limits_for_deployment(deployment: ModelDeployment) -> RequestLimits:
    """The request limits of one deployment: the provider's, overridden by what its configuration declares.

    Raises:
        ValueError: A declared limit is not a whole number >= 0 (the message names the deployment and the fix).
    """
    limits = documented_limits(deployment)
    declared = declared_request_limits(deployment.name)
    if not declared:
        return limits
    values: dict[str, int] = {}
    for key, value in declared.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"roboreward: model deployment {deployment.name!r} declares {key}: {value!r}; it must be a whole "
                "number >= 0 (0: no limit; for vLLM the server's --limit-mm-per-prompt value). Fix it in the "
                "deployment's client_spec args (model_deployments.yaml under --local-path)."
            )
        values[_DECLARED_FIELDS[key]] = value
    declared_names = ", ".join(f"{key}: {value}" for key, value in declared.items())
    source = f"declared by deployment {deployment.name} ({declared_names})"
    if limits.source:
        source += f"; otherwise {limits.source}"
    return RequestLimits(
        max_images=values.get("max_images", limits.max_images),
        max_videos=values.get("max_videos", limits.max_videos),
        max_request_bytes=values.get("max_request_bytes", limits.max_request_bytes),
        inline_base64=limits.inline_base64,
        source=source,
    )

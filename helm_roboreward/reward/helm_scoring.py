"""The HELM side of a reward call: the run spec helm-run would build, its adapter, and HELM's client context.

Nothing here re-implements HELM: the ``roboreward`` run entry goes through HELM's own run-spec factory (so this
package's routing picks the deployment, media, token allowance and decoding as for any run), the request comes
from HELM's own multimodal adapter, and it is sent through HELM's ``LocalContext`` (the executor's: client
factory, ``<local_path>/cache`` SQLite request cache, retries). That is why a benchmark row's request is
byte-identical to helm-run's (tests/reward/test_same_request.py).
"""

import logging
import os
from dataclasses import dataclass

from helm.benchmark.adaptation.adapter_spec import AdapterSpec
from helm.benchmark.adaptation.adapters.adapter_factory import AdapterFactory
from helm.benchmark.adaptation.adapters.multimodal.generation_multimodal_adapter import GenerationMultimodalAdapter
from helm.benchmark.model_deployment_registry import get_model_deployment
from helm.benchmark.run_spec_factory import construct_run_specs
from helm.benchmark.scenarios.scenario import TEST_SPLIT, Input, Instance
from helm.benchmark.window_services.tokenizer_service import TokenizerService
from helm.common.cache_backend_config import BlackHoleCacheBackendConfig, SqliteCacheBackendConfig
from helm.common.local_context import LocalContext
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.object_spec import parse_object_spec
from helm.common.request import Request, RequestResult
from helm.proxy.services.service import CACHE_DIR

from helm_roboreward.helm_frontend.plugin import load_registries
from helm_roboreward.protocol.rules import FRAME_FIELDS, FrameOptions, build_prompt
from helm_roboreward.reward.inputs import RewardModelError

ENTRY_OPTIONS = ("video", "fps", "last_frame", "max_frames", "max_side", "layout", "decoding", "score")
"""Run-entry arguments a reward model takes (docs/protocol.md); the rest (data, subset, failed) name a run."""


@dataclass(frozen=True)
class Routed:
    """What routing decided for the model: the run spec's adapter settings and media."""

    adapter_spec: AdapterSpec
    native_video: bool
    frame_options: FrameOptions
    client_class: str


def entry_description(model: str, deployment: str | None, options: dict[str, str]) -> str:
    """The ``roboreward`` run entry that stands for the model: any subset (routing does not look at it)."""
    for key, value in options.items():
        if key not in ENTRY_OPTIONS:
            raise RewardModelError(f"options: {key!r} is not a reward option; use {', '.join(ENTRY_OPTIONS)}")
        if any(character in value for character in ",=") or not value:
            raise RewardModelError(f"options: {key}={value!r} must be a non-empty value without ',' or '='")
    for what, value in (("model", model), ("deployment", deployment or "")):
        if any(character in value for character in ",=:"):
            raise RewardModelError(f"{what} {value!r} cannot hold ',', '=' or ':' (HELM's run-entry syntax)")
    parts = ["subset=all", "data=sample", *(f"{key}={value}" for key, value in options.items()), f"model={model}"]
    if deployment:
        parts.append(f"model_deployment={deployment}")
    return "roboreward:" + ",".join(parts)


def load_helm_registries(local_path: str) -> None:
    """HELM's registries as helm-run loads them (once per process)."""
    try:
        load_registries(local_path)
    except ValueError as error:  # another local_path already loaded in this process, or unreadable YAML
        raise RewardModelError(str(error)) from None


def route_model(model: str, deployment: str | None, options: dict[str, str], local_path: str) -> Routed:
    """HELM's registries as helm-run loads them, then the run spec helm-run would build for this model."""
    load_helm_registries(local_path)
    description = entry_description(model, deployment, options)
    try:
        run_specs = construct_run_specs(parse_object_spec(description))
    except Exception as error:  # HELM and the routing raise ValueError, KeyError, ... naming the problem
        raise RewardModelError(f"{model}: {error}") from None
    if len(run_specs) != 1:
        raise RewardModelError(f"model {model!r} names {len(run_specs)} models; name one (org/name)")
    spec = run_specs[0]
    args = spec.scenario_spec.args
    frame_options = FrameOptions(**{field: args[field] for field in FRAME_FIELDS if field in args})
    client = get_model_deployment(spec.adapter_spec.model_deployment).client_spec.class_name
    return Routed(spec.adapter_spec, args["video"] == "native", frame_options, client)


def _without_key_lookup_warnings(record: logging.LogRecord) -> bool:
    """Drops HELM's ``Could not find key ...`` warnings (``helm/common/credentials_utils.provide_api_key``).

    HELM warns while building any client whose key is not in ``credentials.conf``, also when the client needs none (a
    vLLM server) or finds it elsewhere (``OPENAI_API_KEY``); printed first, it named a key nobody had to set. A
    client that cannot be built raises, and :meth:`HelmSide.build_client` names what to put where.
    """
    return not record.getMessage().lstrip().startswith("Could not find key")


class HelmSide:
    """HELM's client context and adapter for one routed model; thread-safe as helm-run's executor uses them."""

    def __init__(self, routed: Routed, local_path: str, cache: bool) -> None:
        path = os.path.abspath(local_path)
        backend = SqliteCacheBackendConfig(os.path.join(path, CACHE_DIR)) if cache else BlackHoleCacheBackendConfig()
        os.makedirs(os.path.join(path, CACHE_DIR), exist_ok=True)
        self.context = LocalContext(base_path=path, cache_backend_config=backend)
        self.local_path = path
        self.routed = routed
        adapter = AdapterFactory.get_adapter(routed.adapter_spec, TokenizerService(self.context))
        assert isinstance(adapter, GenerationMultimodalAdapter)  # the run spec's method: generation_multimodal
        self.adapter = adapter

    def build_client(self) -> None:
        """Build the deployment's client now, so that a missing credential fails at start, not per request.

        HELM builds a client on its first request; its factory method is the one way to build it as HELM does.
        """
        deployment = self.routed.adapter_spec.model_deployment
        helm_logger = logging.getLogger("helm")
        helm_logger.addFilter(_without_key_lookup_warnings)
        try:
            self.context.client._get_client(deployment)
        except Exception as error:  # each client raises its own type for a missing key or server URL
            host = deployment.split("/", 1)[0]
            raise RewardModelError(
                f"model deployment {deployment} cannot be used: {type(error).__name__}: {error}. Put its "
                f"credentials in {self.local_path}/credentials.conf ({host}ApiKey, and {host}BaseUrl for a "
                "served model), or its arguments in model_deployments.yaml"
            ) from None
        finally:
            helm_logger.removeFilter(_without_key_lookup_warnings)

    def request(self, task: str, content_type: str, media_paths: tuple[str, ...], instance_id: str) -> Request:
        """The request helm-run's adapter makes for an instance holding this prompt and media."""
        content = [MediaObject(text=build_prompt(task), content_type="text/plain")]
        content += [MediaObject(location=path, content_type=content_type) for path in media_paths]
        instance = Instance(input=Input(multimedia_content=MultimediaObject(content)), references=[],
                            split=TEST_SPLIT, id=instance_id)
        request: Request = self.adapter.generate_requests(instance, 0, [])[0].request
        return request

    def send(self, request: Request) -> RequestResult:
        """HELM's ``LocalContext.make_request``: the client, its cache, HELM's retries."""
        return self.context.make_request(request)

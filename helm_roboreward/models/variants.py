"""Twin deployments: the same model and credentials with the client or arguments an option asks for.

``layout=one_message`` runs Gemini through this package's one-message client, ``decoding=greedy`` sets the package
clients' ``decoding`` to greedy, ``score=expected`` asks them for ``top_logprobs``. Twins are registered when a run
asks for one (and in HELM's Slurm worker, which cannot know); they chain in one order (``x-greedy-logprobs``).
"""

import dataclasses

from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
)

from helm_roboreward.models.registry import (
    LOGPROBS_CLIENTS,
    TWIN_SUFFIXES,
    departures_served,
    keep_helm_defaults,
    register_deployment,
)
from helm_roboreward.protocol import CHECKPOINT, GREEDY, HELM_GEMINI_CLIENT, ONE_MESSAGE_GEMINI_CLIENT

LOGPROBS_TOP_N = 20  # the most OpenAI-compatible servers return (vLLM's default --max-logprobs)


def has_twin(option: str, deployment: ModelDeployment) -> bool:
    """True when ``deployment`` gets a twin serving ``option``'s departure."""
    client, model = deployment.client_spec, (deployment.model_name or "").lower()
    if option == "layout":
        return client.class_name == HELM_GEMINI_CLIENT and model.startswith("google/gemini")
    if client.class_name not in LOGPROBS_CLIENTS:
        return False
    return not client.args.get("top_logprobs") if option == "score" else client.args.get("decoding") == CHECKPOINT


def twin(option: str, deployment: ModelDeployment) -> ModelDeployment:
    """The twin of ``deployment`` serving ``option``'s departure."""
    args, class_name = dict(deployment.client_spec.args), deployment.client_spec.class_name
    if option == "layout":
        class_name = ONE_MESSAGE_GEMINI_CLIENT
    elif option == "score":
        args["top_logprobs"] = LOGPROBS_TOP_N
    else:
        args["decoding"] = GREEDY
    return dataclasses.replace(deployment, name=deployment.name + TWIN_SUFFIXES[option],
                               client_spec=ClientSpec(class_name=class_name, args=args))


def register_variant_twins() -> list[str]:
    """Register the twins of every deployment that has them (idempotent); returns the names added."""
    added: list[str] = []
    options = list(TWIN_SUFFIXES)
    # From the option after the last one served: x -> x-greedy -> x-greedy-logprobs, never x-logprobs-greedy.
    pending = [(d, max((options.index(o) + 1 for o in departures_served(d.client_spec)), default=0))
               for d in list(ALL_MODEL_DEPLOYMENTS)]
    while pending:
        deployment, start = pending.pop()
        for index in range(start, len(options)):
            if has_twin(options[index], deployment):
                made = twin(options[index], deployment)
                if made.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
                    register_deployment(made)
                    added.append(made.name)
                    pending.append((made, index + 1))
    if added:
        keep_helm_defaults()
    return added


def serving(deployment_name: str, departures: dict[str, str]) -> str:
    """The deployment serving the departures asked for; one its client has no twin for changes nothing."""
    register_variant_twins()
    for option in TWIN_SUFFIXES:
        deployment = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment_name)  # None: one HELM generates, no twins
        if option not in departures or deployment is None:
            continue
        if option not in departures_served(deployment.client_spec) and has_twin(option, deployment):
            deployment_name += TWIN_SUFFIXES[option]
    return deployment_name

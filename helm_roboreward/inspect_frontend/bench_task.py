"""The Inspect task ``helm_roboreward/roboreward_bench``: RoboRewardBench on the protocol package (docs/inspect.md).

``inspect eval helm_roboreward/roboreward_bench --model <model> -T subset=bridge -T data=hf``. The task parameters are
the run-entry options that apply outside HELM; their defaults are the official settings. The solver sends what
helm-run's client sends (one user message: the prompt, then the frames or the mp4; official Gemini: one user turn
per part) at temperature 0 with the protocol's max_tokens, and charges a request that failed after its retries as
the official rule does.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import (
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    ContentVideo,
    GenerateConfig,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import LimitExceededError

from helm_roboreward.inspect_frontend.progress_scorer import FAILED_KEY, progress_score
from helm_roboreward.inspect_frontend.sample_media import (
    CONTENT_TYPE_KEY,
    MEDIA_KEY,
    Route,
    RouteError,
    load_samples,
    route,
    settings_of,
)
from helm_roboreward.protocol import __version__
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.rules import FrameOptions

MEDIA_FOLDER = "roboreward_media"
"""Where the frames and mp4s are prepared (under the working directory unless ``-T media_dir=`` says otherwise)."""


def message_parts(state: TaskState) -> list[Content]:
    """The prompt, then each frame or the mp4, as files (Inspect's log holds them base64 for its viewer)."""
    parts: list[Content] = [ContentText(text=state.input_text)]
    for path in state.metadata[MEDIA_KEY]:
        if str(state.metadata[CONTENT_TYPE_KEY]).startswith("video/"):
            parts.append(ContentVideo(video=path, format="mp4"))
        else:
            parts.append(ContentImage(image=path))
    return parts


@solver
def progress_request(turn_per_part: bool = False) -> Solver:
    """Ask for the progress score as helm-run's client does; a failed request is recorded, not raised."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        parts = message_parts(state)
        state.messages = [ChatMessageUser(content=[part]) for part in parts] if turn_per_part \
            else [ChatMessageUser(content=parts)]
        try:
            return await generate(state)
        except LimitExceededError:
            raise
        except Exception as error:  # after the provider's retries: HELM's executor makes it an empty answer
            state.metadata[FAILED_KEY] = f"{type(error).__name__}: {error}"
            state.output = ModelOutput.from_content(model=str(get_model()), content="")
            return state

    return solve


@task
def roboreward_bench(subset: str = "all", data: str = "hf", revision: str = protocol.DATASET_REVISION,
                     video: str = protocol.AUTO, fps: float = protocol.OFFICIAL_FRAMES_PER_SECOND,
                     last_frame: bool = False, max_frames: int = 0, max_side: int = 0,
                     layout: str = protocol.OFFICIAL, failed: str = protocol.MAX_ERROR,
                     media_dir: str = MEDIA_FOLDER) -> Task:
    """RoboRewardBench for the active model; every parameter's default is the official setting (README's table)."""
    if failed not in protocol.FAILED_POLICIES:
        raise RouteError(f"-T failed={failed}: give one of {', '.join(protocol.FAILED_POLICIES)}")
    try:
        options = FrameOptions(frames_per_second=float(fps), include_last_frame=bool(last_frame),
                               max_frames=int(max_frames), max_side=int(max_side))
    except ValueError as error:
        raise RouteError(f"-T {error}") from None
    routed: Route = route(str(get_model()), video, layout)
    samples = load_samples(str(subset), str(data), str(revision), routed.video, options, media_dir)
    settings = settings_of(str(subset), str(data), str(revision), routed.video, options, failed)
    return Task(
        dataset=MemoryDataset(samples, name=f"roboreward-{subset}"),
        solver=progress_request(routed.turn_per_part),
        scorer=progress_score(failed),
        config=GenerateConfig(temperature=0.0, max_tokens=routed.max_tokens),
        version=protocol.PROMPT_VERSION,
        metadata={"settings": settings, "video": routed.video, "data": str(data), "deployment": routed.deployment,
                  "dataset": protocol.DATASET_ID, "package_version": __version__},
    )

"""RoboReward as a reward function: score a rollout exactly as the benchmark scores a row (docs/reward_api.md).

:class:`RewardModel` routes the model as a ``roboreward`` run entry would (deployment, frames or mp4, token
allowance, decoding), prepares the video with the scenario's own media code, builds the request with HELM's
adapter and sends it through HELM's client context (client factory, request cache, retries): the request for a
benchmark row is byte-identical to the one ``helm-run`` sends. The answer is read by the official parse rule.

Importing this module imports neither HELM nor PyAV; building a :class:`RewardModel` does.
"""

import hashlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from helm_roboreward.protocol import __version__
from helm_roboreward.protocol import media_preparation as preparation
from helm_roboreward.protocol.media_preparation import recorded_path
from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE, PROMPT_VERSION, parse_progress_score
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.protocol.score_probabilities import SCORE_TOKEN_LOGPROBS, expected_score, score_distribution
from helm_roboreward.protocol.video_decoding import MediaWriteError, VideoError
from helm_roboreward.reward.inputs import (
    INPUTS_FOLDER,
    Frames,
    RewardInputError,
    RewardModelError,
    check_count,
    check_fps,
    check_frames,
    check_task,
    verified_mp4,
    video_file,
)

if TYPE_CHECKING:
    from helm.common.request import Request, RequestResult

    from helm_roboreward.reward.helm_scoring import HelmSide, Routed  # noqa: F401  (annotations)

MEDIA_FOLDER = "roboreward_media"
"""Under ``local_path`` unless ``media_dir`` is given: ``inputs/`` (videos given as bytes or frames), frames, native
mp4s."""
DEFAULT_WORKERS = 8
_MEDIA_LOCK = threading.Lock()
"""One media preparation at a time per process: the frame extractor shares one swscale context (media.decoding),
which is not thread-safe (concurrent extraction crashed the process). Cached media take milliseconds to verify."""


@dataclass(frozen=True)
class Reward:
    """One rollout's reward."""

    score: float | None
    """The score the official rule parses (1..5 for a well-behaved model; not clamped); None: unparseable or failed."""
    progress: float | None
    """``(score - 1) / 4`` clipped to 0..1 (LeRobot's progress scale); None with ``score``."""
    success: bool
    """``score == 5``."""
    expected_score: float | None
    """Probability-weighted mean of 1..5 over the answer token, where the client returns log-probabilities
    (``options={"score": "expected"}`` on a deployment that has them); else None."""
    output: str
    """The model's raw answer ("" when the request failed)."""
    failed: bool = False
    """The request failed (after HELM's and the client's retries) or the input could not be used: never a score."""
    error: str | None = None
    field: str | None = None
    """For an input that could not be used inside a batch: the field (``video``); None for a failed request."""
    cached: bool = False
    """Served from HELM's request cache."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the server's answer)."""
        return asdict(self)


def progress_of(score: float | None) -> float | None:
    """LeRobot's 0..1 progress of a score (clipped), None for None."""
    if score is None or not math.isfinite(score):
        return None
    return min(1.0, max(0.0, (score - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)))


REWARD_VALUES = ("score", "progress", "expected_score", "expected_progress")
"""The numbers a reward can be read as: what the TRL and verl adapters' ``value=`` and the server's ``?value=`` pick."""


def reward_value(reward: Reward, value: str) -> float | None:
    """The number ``value`` (one of :data:`REWARD_VALUES`) of a reward; None when it failed or has no such number."""
    if reward.failed:
        return None
    number = progress_of(reward.expected_score) if value == "expected_progress" else getattr(reward, value)
    return None if number is None or not math.isfinite(number) else float(number)


def failed_reward(error: str, field: str | None = None) -> Reward:
    """The reward of a request that failed, or of an input that could not be used (``field``)."""
    return Reward(None, None, False, None, "", failed=True, error=error, field=field)


def reward_of(result: "RequestResult") -> Reward:
    """A HELM request result read by the official parse rule; a failed request is ``failed``, never a score."""
    if not result.success or not result.completions:
        return failed_reward(result.error or "the client returned no completion")
    completion = result.completions[0]
    text = completion.text
    score = parse_progress_score(text)
    expected = None
    candidates = (completion.finish_reason or {}).get(SCORE_TOKEN_LOGPROBS)
    if isinstance(candidates, list):
        distribution = score_distribution(text, candidates)
        expected = expected_score(distribution) if distribution is not None else None
    return Reward(score, progress_of(score), score == MAX_SCORE, expected, text, cached=bool(result.cached))


@dataclass(frozen=True)
class RewardItem:
    """One rollout to score: the task and the video (an mp4 path or bytes, or frames with ``fps``)."""

    task: str
    video: Any
    fps: float | None = None


ItemLike = RewardItem | Sequence[Any] | Mapping[str, Any]


def as_item(item: ItemLike, field: str) -> RewardItem:
    """A :class:`RewardItem` from an item, a ``(task, video[, fps])`` tuple or a ``{"task", "video", "fps"}`` dict."""
    if isinstance(item, RewardItem):
        return item
    if isinstance(item, Mapping):
        unknown = sorted(set(item) - {"task", "video", "fps"})
        if unknown or "task" not in item or "video" not in item:
            raise RewardInputError(field, f"needs keys task and video (and fps for frames), got {sorted(item)}")
        return RewardItem(item["task"], item["video"], item.get("fps"))
    if isinstance(item, Sequence) and not isinstance(item, str | bytes) and len(item) in (2, 3):
        return RewardItem(*item)
    raise RewardInputError(field, "must be a RewardItem, a (task, video[, fps]) tuple or a dict")


def check_item(item: RewardItem) -> RewardItem:
    """The item with its task, fps and frames checked (cheap: nothing decoded, nothing written)."""
    check_task(item.task)
    if isinstance(item.video, bytes | bytearray | memoryview | str | os.PathLike):
        if item.fps is not None:
            check_fps(item.fps)
            raise RewardInputError("fps", "applies to frames only; an mp4 carries its own frame rate")
        return item
    frames = check_frames(item.video, item.fps)
    return RewardItem(item.task, frames, None)


class RewardModel:
    """A model as a reward function, with the benchmark's exact protocol.

    Args:
        model: A model a run entry accepts (``teetone/roboreward-8b``, ``openai/gpt-5-mini-2025-08-07``, ...).
        deployment: The model deployment (default: the one ``helm-run`` would pick).
        local_path: helm-run's ``--local-path``: model files, ``credentials.conf`` and the request cache.
        options: Run-entry options that change the official defaults (``video``, ``fps``, ``last_frame``,
            ``max_frames``, ``max_side``, ``layout``, ``decoding``, ``score``), as a dict or ``"k=v,k2=v2"``.
        media_dir: Where prepared media live (default ``<local_path>/roboreward_media``).
        cache: Use HELM's request cache (``<local_path>/cache``), as helm-run does.
        verbose: Say on stderr what is being loaded (``RewardModel: ...`` lines; importing HELM alone can take
            minutes on a busy machine) and how long the model took to be ready.

    Raises:
        RewardModelError: Unknown model or deployment, a bad option, or a client that cannot be built (a missing
            credential): at construction, never per request.
    """

    def __init__(self, model: str, deployment: str | None = None, local_path: str = "prod_env",
                 options: Mapping[str, object] | str | None = None, media_dir: str | None = None,
                 cache: bool = True, verbose: bool = True) -> None:
        started = time.monotonic()
        say = _say if verbose else _silent
        say(f"loading HELM and its model registries ({os.path.abspath(local_path)})")
        from helm_roboreward.reward.helm_scoring import HelmSide, load_helm_registries, route_model

        self.model = model
        self.options = option_dict(options)
        self.local_path = os.path.abspath(local_path)
        self.cache = cache
        load_helm_registries(local_path)
        say(f"routing {model}" + (f" on {deployment}" if deployment else ""))
        self.routed: Routed = route_model(model, deployment, self.options, local_path)
        self.deployment: str = self.routed.adapter_spec.model_deployment
        say(f"building the client of {self.deployment} ({self.routed.client_class.rsplit('.', 1)[-1]})")
        self._helm: HelmSide = HelmSide(self.routed, local_path, cache)
        self._helm.build_client()
        self.media_dir = recorded_path(os.path.abspath(media_dir or os.path.join(local_path, MEDIA_FOLDER)))
        self._inputs_folder = os.path.join(self.media_dir, INPUTS_FOLDER)
        self._prepare = preparation.prepare_one
        say(f"{model} ready via {self.deployment} ({'native video' if self.routed.native_video else 'frames'}) in "
            f"{time.monotonic() - started:.1f} s")

    @property
    def settings(self) -> dict[str, Any]:
        """What the rewards depend on: model, deployment, media, generation settings, protocol version."""
        spec = self.routed.adapter_spec
        return {
            "model": self.model, "deployment": self.deployment, "client": self.routed.client_class,
            "video": "native" if self.routed.native_video else "frames",
            "frame_options": None if self.routed.native_video else asdict(self.routed.frame_options),
            "max_tokens": spec.max_tokens, "temperature": spec.temperature, "num_completions": spec.num_outputs,
            "options": dict(self.options), "prompt_version": PROMPT_VERSION, "package_version": __version__,
            "cache": os.path.join(self.local_path, "cache") if self.cache else None,
        }

    def request_for(self, task: str, video: Any, fps: float | None = None) -> "Request":
        """The HELM request for one rollout (its media prepared): what :meth:`score` sends.

        Raises:
            RewardInputError: A bad task, fps or frames, or a video that does not decode (``field`` says which).
        """
        item = check_item(RewardItem(task, video, fps))
        path = video_file(item.video, self._inputs_folder)
        digest = file_digest(path)  # outside the lock: only frame extraction must run one at a time
        if not isinstance(item.video, Frames):  # an mp4 given: verified, or remuxed (frames: encoded here)
            shown = os.fspath(video) if isinstance(video, str | os.PathLike) else "the video given"
            path, digest = verified_mp4(path, digest, self._inputs_folder, shown)
        try:
            with _MEDIA_LOCK:
                media = self._prepare(path, self.media_dir, self.routed.native_video, self.routed.frame_options,
                                      digest)
        except MediaWriteError:
            raise
        except VideoError as error:
            raise RewardInputError("video", _without_inputs_folder(str(error), path, video)) from None
        digest = hashlib.sha256(f"{media.video_sha256}|{task}".encode()).hexdigest()[:16]
        return self._helm.request(task, media.content_type, media.paths, f"reward-{digest}")

    def send(self, request: "Request") -> Reward:
        """Send a request built by :meth:`request_for`; a failure is a ``failed`` reward, never an exception."""
        try:
            result = self._helm.send(request)
        except Exception as error:  # HELM's executor would fail the run; a reward call reports it instead
            return failed_reward(f"{type(error).__name__}: {error}")
        return reward_of(result)

    def score(self, task: str, video: Any, fps: float | None = None) -> Reward:
        """The reward of one rollout.

        Args:
            task: The instruction the robot followed.
            video: An mp4 path, mp4 bytes, or frames (uint8 ``(T, H, W, 3)`` array or list of ``(H, W, 3)``).
            fps: Frames per second, for frames only.

        Raises:
            RewardInputError: The input cannot be used (``field`` names it). A failed request is not an error:
                its reward has ``failed`` True.
        """
        return self.send(self.request_for(task, video, fps))

    def score_many(self, items: Iterable[ItemLike], max_workers: int = DEFAULT_WORKERS,
                   on_result: Callable[[int, Reward], None] | None = None) -> list[Reward]:
        """The rewards of many rollouts, in order, ``max_workers`` at a time.

        Every item's task, fps and frames are checked before anything is sent (:class:`RewardInputError` naming
        ``items[i]``); a video that then does not decode gives that item a ``failed`` reward with ``field``, and any
        other error of one item (a full media folder) a ``failed`` reward with the error: the others go on.
        ``on_result(index, reward)`` is called as each finishes (from a worker thread): a progress bar, a writer.
        """
        max_workers = check_count(max_workers, "max_workers")
        checked: list[RewardItem] = []
        for index, item in enumerate(items):
            try:
                checked.append(check_item(as_item(item, "item")))
            except RewardInputError as error:
                raise error.within(f"items[{index}]") if error.field != "item" else RewardInputError(
                    f"items[{index}]", error.message) from None

        def one(index: int) -> Reward:
            item = checked[index]
            try:
                reward = self.score(item.task, item.video, item.fps)
            except RewardInputError as error:
                reward = failed_reward(error.message, f"items[{index}].{error.field}")
            except Exception as error:  # one item's failure must not lose the others' results
                reward = failed_reward(f"{type(error).__name__}: {error}")
            if on_result is not None:
                on_result(index, reward)
            return reward

        if not checked:
            return []
        with ThreadPoolExecutor(max_workers=min(max_workers, len(checked)),
                                thread_name_prefix="roboreward-reward") as pool:
            return list(pool.map(one, range(len(checked))))


def option_dict(options: Mapping[str, object] | str | None) -> dict[str, str]:
    """Options as run-entry text values (``"video=frames,max_frames=16"`` or a dict); bools become 0/1."""
    if options is None:
        return {}
    if isinstance(options, str):
        pairs: dict[str, object] = {}
        for part in (part.strip() for part in options.split(",")):
            if not part:
                continue
            key, equals, value = part.partition("=")
            if not equals:
                raise RewardModelError(f"options: {part!r} must be key=value")
            pairs[key.strip()] = value.strip()
        options = pairs
    return {str(key): str(int(value)) if isinstance(value, bool | np.bool_) else str(value)
            for key, value in options.items()}


def _say(line: str) -> None:
    print(f"RewardModel: {line}", file=sys.stderr, flush=True)


def _silent(line: str) -> None:
    pass


def _without_inputs_folder(message: str, path: str, video: Any) -> str:
    """A decoding error about a file in the inputs folder, phrased about the input (whose path users never see)."""
    if isinstance(video, str | os.PathLike):
        return message
    return message.replace(path, "the video given")

"""RoboRewardBench's evaluation protocol, rule by rule in the order of docs/protocol.md (which gives their sources).

Every official default is declared here once; each option changes one and is named in the run name. Pure: no HELM,
no I/O.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

# --- 1. The dataset and its subsets -------------------------------------------------------------------------

DATASET_ID = "teetone/RoboReward"
DATASET_REVISION = "main"  # a branch: no commit could be verified offline; each run records the resolved commit
DATASET_URL = "https://huggingface.co/datasets/teetone/RoboReward"
PAPER_URL = "https://arxiv.org/abs/2601.00675"
LEADERBOARD_URL = "https://crfm.stanford.edu/helm/robo-reward-bench/v0.0.1/#/leaderboard"
TEST_SPLIT = "test"
METADATA_FILE = "metadata.jsonl"
PROMPT_VERSION = "1"  # changes whenever the prompt, the frame rule's defaults or the parse rule change
MIN_SCORE = 1
MAX_SCORE = 5
RUBRIC_SCORES = tuple(range(MIN_SCORE, MAX_SCORE + 1))  # every score the rubric gives

# How run_spec.json names (and tells apart) our runs.
SCENARIO_CLASS = "helm_roboreward.helm_frontend.scenario.RoboRewardScenario"


@dataclass(frozen=True)
class Subset:
    """One source dataset of the benchmark: a leaderboard column."""

    id: str  # folder name under test/, the first component of file_name
    display_name: str
    robot: str  # Open X-Embodiment robot type, for the per-robot breakdown
    natural: bool = False  # every row is a natural rollout (no clips or counterfactual relabels)
    num_rows: int = 0  # rows in the published split (0: not published)
    short_display_name: str = ""  # header when display_name is longer than HELM's viewer shows (~25 characters)


OFFICIAL_SUBSETS: tuple[Subset, ...] = (  # the 23 test subsets, in the official leaderboard order
    Subset("robo_arena", "RoboArena", "Franka", natural=True, num_rows=1000),
    Subset("austin_sirius_dataset_converted_externally_to_rlds", "Austin Sirius", "Franka", num_rows=87),
    Subset("berkeley_autolab_ur5", "Berkeley Autolab UR5", "UR5", num_rows=100),
    Subset("berkeley_fanuc_manipulation", "Berkeley Fanuc Manipulation", "Fanuc Mate", num_rows=91,
           short_display_name="Berkeley Fanuc"),
    Subset("berkeley_mvp_converted_externally_to_rlds", "Berkeley MVP", "xArm", num_rows=71),
    Subset("berkeley_rpt_converted_externally_to_rlds", "Berkeley RPT", "Franka", num_rows=86),
    Subset("bridge", "Berkeley Bridge", "WidowX", num_rows=100),
    Subset("cmu_play_fusion", "CMU Play Fusion", "Franka", num_rows=92),
    Subset("dlr_edan_shared_control_converted_externally_to_rlds", "DLR Wheelchair Shared Control", "DLR EDAN",
           num_rows=19, short_display_name="DLR Wheelchair"),
    Subset("droid", "DROID", "Franka", num_rows=100),
    Subset("fractal20220817_data", "RT-1 Robot Action", "Google Robot", num_rows=100),
    Subset("iamlab_cmu_pickup_insert_converted_externally_to_rlds", "CMU Franka Pick-Insert", "Franka", num_rows=83),
    Subset("jaco_play", "USC Jaco Play", "Jaco 2", num_rows=100),
    Subset("kaist_nonprehensile_converted_externally_to_rlds", "KAIST Nonprehensile Objects", "Franka", num_rows=53,
           short_display_name="KAIST Nonprehensile"),
    Subset("roboturk", "Roboturk", "Sawyer", num_rows=97),
    Subset("stanford_hydra_dataset_converted_externally_to_rlds", "Stanford HYDRA", "Franka", num_rows=91),
    Subset("taco_play", "Freiburg Franka Play", "Franka", num_rows=91),
    Subset("tokyo_u_lsmo_converted_externally_to_rlds", "LSMO", "Cobotta", num_rows=71),
    Subset("ucsd_kitchen_dataset_converted_externally_to_rlds", "UCSD Kitchen", "xArm", num_rows=95),
    Subset("ucsd_pick_and_place_dataset_converted_externally_to_rlds", "UCSD Pick Place", "xArm", num_rows=100),
    Subset("utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds", "Tokyo PR2 Tabletop Manipulation", "PR2",
           num_rows=73, short_display_name="Tokyo PR2 Tabletop"),
    Subset("utokyo_xarm_bimanual_converted_externally_to_rlds", "UTokyo xArm Bimanual", "xArm Bimanual", num_rows=71),
    Subset("viola", "Austin VIOLA", "Franka", num_rows=60),
)
SAMPLE_SUBSETS: tuple[Subset, ...] = (  # the bundled offline sample (data=sample); never mixed with official columns
    Subset("sim_arena", "Sim Arena (sample)", "Franka (simulated)", natural=True),
    Subset("sim_panda", "Sim Panda (sample)", "Franka (simulated)"),
    Subset("sim_kuka", "Sim KUKA (sample)", "KUKA iiwa (simulated)"),
)

ALL_KNOWN_SUBSETS: dict[str, Subset] = {subset.id: subset for subset in OFFICIAL_SUBSETS + SAMPLE_SUBSETS}
OFFICIAL_SUBSET_IDS: list[str] = [subset.id for subset in OFFICIAL_SUBSETS]
SAMPLE_SUBSET_IDS: list[str] = [subset.id for subset in SAMPLE_SUBSETS]
ROBOTS: list[str] = sorted({subset.robot for subset in OFFICIAL_SUBSETS + SAMPLE_SUBSETS})
UNKNOWN_ROBOT = "Unknown"


def subset_info(subset_id: str) -> Subset:
    """A subset's entry; a local copy's unknown subsets get a neutral one."""
    return ALL_KNOWN_SUBSETS.get(subset_id) or Subset(subset_id, subset_id, UNKNOWN_ROBOT)


def subset_order(subsets: Iterable[str]) -> list[str]:
    """Official leaderboard order, then the sample's, then any other subset alphabetically."""
    rank = {subset: index for index, subset in enumerate(OFFICIAL_SUBSET_IDS + SAMPLE_SUBSET_IDS)}
    return sorted(set(subsets), key=lambda subset: (rank.get(subset, len(rank)), subset))


def subset_group(subset: str) -> str:
    """The HELM run group of one subset (a leaderboard column)."""
    return f"roboreward_{subset}"


PARENT_GROUP, SAMPLE_GROUP, ALL_SUBSETS_GROUP = "roboreward", "roboreward_sample", subset_group("all")
SUBSET_PARENT_GROUPS = (PARENT_GROUP, SAMPLE_GROUP)  # leaderboards of subset columns: the benchmark's, the sample's
LEADERBOARD_GROUPS = (*SUBSET_PARENT_GROUPS, ALL_SUBSETS_GROUP)  # in the order a suite's first one is shown


def robot_slug(robot: str) -> str:
    """A robot name as metric names hold it (``Google Robot`` -> ``google_robot``)."""
    return "_".join(part for part in "".join(ch.lower() if ch.isalnum() else "_" for ch in robot).split("_") if part)


# --- 2. The prompt: one text part, then the video or its frames -----------------------------------------------

RUBRIC_PROMPT_TEMPLATE = (
    "Given the task, assign a discrete progress score reward (1,2,3,4,5) for the robot in the video"
    " in the format: ANSWER: <score>\n"
    "Rubric for end-of-episode progress (judge only the final state without time limits):\n"
    "1 - No Success: Final state shows no goal-relevant change for the command.\n"
    "2 - Minimal Progress: Final state shows a small but insufficient change toward the goal.\n"
    "3 - Partial Completion: The final state shows good progress toward the goal but violates more than"
    " one requirement or a major requirement.\n"
    "4 - Near Completion: Final state is correct in region and intent but misses a single minor requirement.\n"
    "5 - Perfect Completion: Final state satisfies all requirements.\n"
    "\n"
    "Task: {task}"
)
"""The exact text of the RoboReward model cards; ``{task}`` is the row's task, verbatim."""


def build_prompt(task: str) -> str:
    """The text part of a request."""
    return RUBRIC_PROMPT_TEMPLATE.replace("{task}", task)


# --- 3. Frames for models that do not take video: every ``int(fps)``-th frame from 0, native size ------------

OFFICIAL_FRAMES_PER_SECOND = 1.0


def exact_number(value: float) -> str:
    """A number as run names show it, reading back as the same float (``2``, ``0.25``, ``0.2500001``)."""
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e16 else repr(number)


@dataclass(frozen=True)
class FrameOptions:
    """How frames are sampled and stored; the defaults are the official rule."""

    frames_per_second: float = OFFICIAL_FRAMES_PER_SECOND
    include_last_frame: bool = False  # last_frame=1: add the final frame when the stride skips it (the rubric's state)
    max_frames: int = 0  # at most this many frames, evenly spaced; 0: no cap
    max_side: int = 0  # downscale so the longer side is at most this; 0: native size
    jpeg_quality: int = 95  # OpenCV's imwrite default (the official extractor)

    def __post_init__(self) -> None:
        fps, official = self.frames_per_second, ": 0 is the official rule"
        if not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be a positive number, got {fps!r}: frames kept per second of video (1 is the "
                             "official rule)")
        if self.max_frames < 0:
            raise ValueError(f"max_frames must be 0 (no cap) or positive, got {self.max_frames!r}{official}")
        if self.max_side < 0 or 0 < self.max_side < 16:
            raise ValueError(f"max_side must be 0 (native size) or at least 16 pixels, got {self.max_side!r}{official}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be in 1..100, got {self.jpeg_quality!r}")

    def run_name_options(self) -> list[str]:
        """The non-default options as exact run-name parts, in a fixed order."""
        parts = []
        if self.frames_per_second != OFFICIAL_FRAMES_PER_SECOND:
            parts.append(f"fps={exact_number(self.frames_per_second)}")
        if self.include_last_frame:
            parts.append("last_frame=1")
        if self.max_frames:
            parts.append(f"max_frames={self.max_frames}")
        if self.max_side:
            parts.append(f"max_side={self.max_side}")
        return parts


FRAME_FIELDS = ("frames_per_second", "include_last_frame", "max_frames", "max_side")  # scenario args when not default


def frame_stride(native_fps: float, frames_per_second: float = OFFICIAL_FRAMES_PER_SECOND) -> int:
    """``max(int(native_fps // 1), 1)`` officially; a missing or broken frame rate keeps every frame."""
    if not math.isfinite(native_fps) or native_fps <= 0:
        return 1
    if frames_per_second == OFFICIAL_FRAMES_PER_SECOND:
        return max(int(native_fps // 1), 1)
    return max(int(math.floor(native_fps / frames_per_second + 1e-9)), 1)  # 3.0 / 0.1 is 29.999...


def select_frame_indices(num_frames: int, native_fps: float, options: FrameOptions = FrameOptions()) -> list[int]:
    """The frame indices to keep: strictly increasing in ``[0, num_frames)`` (a 73-frame 10-fps clip: 0..70)."""
    if num_frames <= 0:
        return []
    indices = list(range(0, num_frames, frame_stride(native_fps, options.frames_per_second)))
    if options.include_last_frame and indices[-1] != num_frames - 1:
        indices.append(num_frames - 1)
    if options.max_frames and len(indices) > options.max_frames:
        if options.max_frames == 1:
            return [indices[-1] if options.include_last_frame else indices[0]]
        span = len(indices) - 1
        positions = sorted({round(i * span / (options.max_frames - 1)) for i in range(options.max_frames)})
        indices = [indices[p] for p in positions]
    return indices


def scaled_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The stored size under ``max_side`` (aspect kept, never upscaled)."""
    if max_side <= 0 or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(2, int(round(width * scale))), max(2, int(round(height * scale)))


# --- 4. Which model gets what: the routing table and the generation settings ---------------------------------

HELM_GEMINI_CLIENT = "helm.clients.google_genai_client.GoogleGenAIClient"
ONE_MESSAGE_GEMINI_CLIENT = "helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient"
TRANSFORMERS_CLIENT = "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient"
OPENAI_VIDEO_CLIENT = "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient"

# Model names (case-insensitive) that officially got the mp4: Gemini, Qwen3-VL, RoboReward (a Qwen3-VL fine-tune),
# Qwen2.5-VL; the tag marks video models they miss. The others, or behind a client not sending video/mp4: frames.
NATIVE_VIDEO_MODEL_PATTERNS: tuple[str, ...] = ("google/gemini*", "*qwen3-vl*", "*roboreward*", "*qwen2.5-vl*")
NATIVE_VIDEO_TAG = "ROBOREWARD_NATIVE_VIDEO_TAG"
VIDEO_CLIENT_CLASSES: tuple[str, ...] = (
    HELM_GEMINI_CLIENT, "helm.clients.vertexai_client.VertexAIChatClient", ONE_MESSAGE_GEMINI_CLIENT,
    OPENAI_VIDEO_CLIENT, TRANSFORMERS_CLIENT, "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient",
    "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient")

# The client arguments with which a deployment of our video client (no other) declares its server's per-request
# limits (vLLM's --limit-mm-per-prompt, a proxy's body limit) -> the RequestLimits field each sets.
DECLARED_LIMIT_ARGS = {"max_images_per_prompt": "max_images", "max_videos_per_prompt": "max_videos",
                       "max_request_bytes": "max_request_bytes"}

# Temperature 0, one completion and no stop sequence for every model (the adapter spec); Qwen3-VL and RoboReward in
# process sample with their checkpoint's generation config (the official client passed only max_new_tokens).
DEFAULT_MAX_TOKENS = 5000
REASONING_TOKEN_ALLOWANCE = 60_000  # OpenAI and Gemini models reason in their output tokens: max_tokens 65,000
REASONING_MODEL_PATTERNS = ("openai/*", "google/gemini*")

# --- 5. Parsing and scoring -------------------------------------------------------------------------------------

_NUMBER = r"-?\d+(?:\.\d+)?"  # Python's \d: any Unicode decimal digit, as in the official regex
_ANSWER_PATTERN = re.compile(r"(?i)\banswer\b\s*:\s*(" + _NUMBER + r")")
_LEADING_NUMBER_PATTERN = re.compile(r"^\s*(" + _NUMBER + r")\b")
MAX_PARSED_MAGNITUDE = 1e75  # larger is unparseable: HELM squares the squared error (its variance) and would overflow
UNPARSEABLE_ABS_ERROR = float(MAX_SCORE - MIN_SCORE)
WITHIN_ONE = 1.0  # peer harnesses' "within 1" accuracy: an error at most this (not official; reported beside it)


def within_one(abs_error: float) -> float:
    """1 when the error is at most :data:`WITHIN_ONE` (an unparseable answer, error 4, is not), else 0."""
    return 1.0 if abs_error <= WITHIN_ONE else 0.0


def official_number_match(completion: str) -> re.Match[str] | None:
    """The official rule's match in ``completion.strip()`` (offsets count there; group 1: the number; None: none).

    The first ``answer: <n>`` with ``answer`` a whole word (``final_answer: 3`` does not match), else a leading number.
    """
    text = completion.strip()
    return _ANSWER_PATTERN.search(text) or _LEADING_NUMBER_PATTERN.search(text)


def parse_progress_score(completion: str) -> float | None:
    """The score the official rule reads, not clamped (``ANSWER: 0`` is 0, ``3.5`` is 3.5); None: unparseable."""
    match = official_number_match(completion)
    if match is None:
        return None
    value = float(match.group(1))
    return value if math.isfinite(value) and abs(value) <= MAX_PARSED_MAGNITUDE else None


@dataclass(frozen=True)
class ScoredPrediction:
    """The per-instance error terms of one prediction."""

    predicted: float | None  # None when unparseable
    gold_score: int
    abs_error: float
    squared_error: float
    exact_match: float
    invalid_output: float
    signed_error: float | None  # predicted - gold score (positive: over-rewarding); None when unparseable
    false_success: float  # a 5 for a row whose gold score is below 5
    missed_success: float  # no 5 for a row whose gold score is 5 (unparseable counts as a miss)
    within_one: float


def maximum_error_score(gold_score: int, invalid_output: bool) -> ScoredPrediction:
    """The charge for an answer without a score (``invalid_output`` False: a failed request, no answer at all)."""
    return ScoredPrediction(None, gold_score, UNPARSEABLE_ABS_ERROR, UNPARSEABLE_ABS_ERROR**2, 0.0,
                            float(invalid_output), None, 0.0, float(gold_score == MAX_SCORE),
                            within_one(UNPARSEABLE_ABS_ERROR))


def score_prediction(completion: str, gold_score: int) -> ScoredPrediction:
    """Every per-instance error term of one completion against the gold score."""
    predicted = parse_progress_score(completion)
    if predicted is None:
        return maximum_error_score(gold_score, invalid_output=True)
    error = predicted - gold_score
    return ScoredPrediction(predicted, gold_score, abs(error), error * error, float(predicted == gold_score), 0.0,
                            error, float(predicted == MAX_SCORE and gold_score < MAX_SCORE),
                            float(gold_score == MAX_SCORE and predicted != MAX_SCORE), within_one(abs(error)))


# --- 6. The options: each run-entry argument, its official value first -----------------------------------------

OFFICIAL = "official"
FRAMES, NATIVE, AUTO = "frames", "native", "auto"
VIDEO_MODES = (FRAMES, NATIVE, AUTO)  # video=: auto routes by rule 4
# failed=: a request that failed after retries costs error 4 (HELM's executor makes it an empty answer), or leaves
# every statistic; failed_request counts it either way.
MAX_ERROR, SKIP = "max_error", "skip"
FAILED_POLICIES = (MAX_ERROR, SKIP)
PARSED, EXPECTED = "parsed", "expected"
SCORE_MODES = (PARSED, EXPECTED)  # score=: also the expected score over the answer token's probabilities
ONE_MESSAGE = "one_message"
LAYOUTS = (OFFICIAL, ONE_MESSAGE)  # layout=: Gemini gets text and video in one user message, not one turn each
GREEDY = "greedy"
DECODINGS = (OFFICIAL, GREEDY)  # decoding=: the checkpoint-sampling families decode greedily too
# A client's decoding: the request's temperature, the checkpoint's generation config (official Qwen3-VL), or greedy
REQUEST, CHECKPOINT = "request", "checkpoint"
CLIENT_DECODINGS = (REQUEST, CHECKPOINT, GREEDY)

"""RoboReward as a TRL reward function: an entry of ``reward_funcs`` for ``GRPOTrainer`` and its kin.

TRL calls each reward function with keyword arguments only: ``prompts``, ``completions``, ``completion_ids``, every
dataset column but ``prompt`` (one value per completion), ``trainer_state``, ``log_extra``, ``log_metric`` and,
with environments, ``environments``; it takes back one float per completion, ``None`` meaning "no reward for this
one" (trl 1.16.0, ``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._calculate_rewards``). :class:`TRLReward` reads
each row's task and video from the columns it is told, scores them all with ``RewardModel.score_many`` and returns
the chosen number of each reward (docs/rl_rewards.md).
"""

from collections.abc import Callable, Sequence
from typing import Any

from helm_roboreward.reward.api import DEFAULT_WORKERS, RewardItem, RewardModel
from helm_roboreward.reward.inputs import RewardInputError
from helm_roboreward.rl_rewards.reward_values import check_value, shared_model, value_of

TRAINER_KEYWORDS = frozenset({"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                              "environments"})
"""What TRL passes besides the dataset columns."""

VideoSource = str | Callable[[Any, dict[str, Any]], Any]
"""A dataset column name, or a function ``(completion, row) -> video`` (a rollout the completion made)."""


class TRLReward:
    """A TRL reward function scoring each row's rollout video with a :class:`RewardModel`.

    Args:
        model: A :class:`RewardModel`, or a model name (built once per process with ``model_options``:
            ``deployment``, ``local_path``, ``options``, ``media_dir``, ``cache``, as ``RewardModel`` takes them).
        task_column: The dataset column holding each row's task.
        video_column: The dataset column holding each row's video (an mp4 path, mp4 bytes or frames), or a function
            ``(completion, row) -> video``.
        fps_column: The column holding the frame rate of videos given as frames (None: mp4s only).
        value: ``score`` (1..5), ``progress`` (0..1), ``expected_score`` or ``expected_progress``.
        on_failure: What a failed request or an unparseable answer returns (None: TRL leaves this reward out).
        max_workers: Requests at a time.
        name: The name TRL logs the reward under (``rewards/<name>/mean``).

    Raises:
        RewardModelError: The model cannot be built (unknown, a bad option, a missing credential).
        ValueError: A value the model's options do not give.
    """

    def __init__(self, model: RewardModel | str, *, task_column: str = "task", video_column: VideoSource = "video",
                 fps_column: str | None = None, value: str = "score", on_failure: float | None = None,
                 max_workers: int = DEFAULT_WORKERS, name: str = "roboreward", **model_options: Any) -> None:
        self.model = model if isinstance(model, RewardModel) else shared_model(model, **model_options)
        self.value = check_value(value, self.model.options)
        self.task_column = task_column
        self.video_column = video_column
        self.fps_column = fps_column
        self.on_failure = on_failure
        self.max_workers = max_workers
        self.__name__ = name

    def items(self, completions: Sequence[Any] | None, columns: dict[str, Sequence[Any]]) -> list[RewardItem]:
        """The rollouts of one batch, row by row.

        Raises:
            ValueError: A column the reward needs is missing, or columns of different lengths.
        """
        wanted = [self.task_column] + [name for name in (self.video_column, self.fps_column) if isinstance(name, str)]
        missing = [name for name in wanted if name not in columns]
        if missing:
            raise ValueError(f"TRLReward: the batch has no dataset column {missing[0]!r} (columns: {sorted(columns)}); "
                             "name the columns holding each row's task and video with task_column= and video_column=")
        rows = len(columns[self.task_column])
        for name in wanted:
            if len(columns[name]) != rows:
                raise ValueError(f"TRLReward: column {name!r} has {len(columns[name])} values, "
                                 f"{self.task_column!r} {rows}")
        items = []
        for index in range(rows):
            row = {name: values[index] for name, values in columns.items()}
            if isinstance(self.video_column, str):
                video = row[self.video_column]
            else:
                video = self.video_column(None if completions is None else completions[index], row)
            fps = row[self.fps_column] if self.fps_column is not None else None
            items.append(RewardItem(row[self.task_column], video, fps))
        return items

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 **kwargs: Any) -> list[float | None]:
        """One reward per completion, in order.

        Raises:
            ValueError: A missing column; RewardInputError: a bad task, fps or frames in a row (its column and row
                named). A video that does not decode is a failed reward (``on_failure``), not an error.
        """
        columns = {key: value for key, value in kwargs.items() if key not in TRAINER_KEYWORDS}
        items = self.items(completions, columns)
        try:
            rewards = self.model.score_many(items, max_workers=self.max_workers)
        except RewardInputError as error:
            raise self._in_columns(error) from None
        values = [value_of(reward, self.value) for reward in rewards]
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric) and rewards:
            log_metric(f"{self.__name__}/without_value", sum(v is None for v in values) / len(values))
        if callable(log_extra):
            log_extra(f"{self.__name__}_answer", [reward.output for reward in rewards])
        return [self.on_failure if number is None else number for number in values]

    def _in_columns(self, error: RewardInputError) -> RewardInputError:
        """``items[3].task`` as the dataset's ``task[3]``."""
        head, _, part = error.field.partition(".")
        row = head.removeprefix("items[").removesuffix("]")
        video = self.video_column if isinstance(self.video_column, str) else "video_column()"
        column = {"task": self.task_column, "video": video, "fps": self.fps_column or video}.get(part, part)
        return RewardInputError(f"{column}[{row}]" if row.isdigit() else error.field, error.message)

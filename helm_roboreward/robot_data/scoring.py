"""Scoring the working copy's rows with a :class:`~helm_roboreward.reward.RewardModel`, ``-n`` at a time.

Each row goes through :meth:`RewardModel.score` (the benchmark's request, HELM's client, request cache and
retries). The rows are scored in daemon threads rather than by :meth:`RewardModel.score_many`: its pool threads
are joined when the interpreter exits, so Ctrl-C would wait for the requests in flight (a silent server: the
client's time limit and retries, up to 15 minutes a row with the vLLM client). Here the command ends at once: an
answer is committed to HELM's request cache before its row counts as done, and the requests in flight are
abandoned (a rerun sends them again).
"""

import threading
from collections.abc import Sequence

from tqdm import tqdm

from helm_roboreward.reward.api import Reward, RewardModel, failed_reward
from helm_roboreward.reward.inputs import RewardInputError

WAIT_SECONDS = 0.5
"""How long the main thread waits at a time: Ctrl-C reaches it between waits at the latest."""


class _Rows:
    """The rows left to score, the rewards so far, and the first error that stopped a worker."""

    def __init__(self, model: RewardModel, items: Sequence[tuple[str, str]]) -> None:
        self.model = model
        self.items = items
        self.rewards: list[Reward | None] = [None] * len(items)
        self.done = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.changed = threading.Condition()
        self._next = 0

    def _take(self) -> int | None:
        with self.changed:
            if self.stop.is_set() or self._next >= len(self.items):
                return None
            self._next += 1
            return self._next - 1

    def work(self) -> None:
        """One worker: score rows until none is left or the scoring stopped."""
        while (index := self._take()) is not None:
            task, video = self.items[index]
            try:
                reward = self.model.score(task, video)
            except RewardInputError as error:  # the clip no longer decodes (damaged since the import): this row fails
                reward = failed_reward(f"{video}: {error.message}", error.field)
            except BaseException as error:  # ours (a full disk under the media folder): stop, never a score
                with self.changed:
                    self.error = self.error or error
                    self.stop.set()
                    self.changed.notify_all()
                return
            with self.changed:
                self.rewards[index] = reward
                self.done += 1
                self.changed.notify_all()


def score_rows(model: RewardModel, items: Sequence[tuple[str, str]], threads: int, description: str,
               progress: bool = True) -> list[Reward]:
    """The reward of every ``(task, mp4 path)``, in order, ``threads`` at a time, with a progress bar.

    A failed request is a ``failed`` reward (never a score). An error that is not about one row (the media folder
    cannot be written) stops the scoring and is raised; so is Ctrl-C, at once (the module's docstring says why).
    """
    rows = _Rows(model, items)
    workers = [threading.Thread(target=rows.work, name=f"roboreward-label-{number}", daemon=True)
               for number in range(min(threads, len(items)))]
    try:
        with tqdm(total=len(items), desc=description, unit="request", disable=not progress) as bar:
            for worker in workers:
                worker.start()
            with rows.changed:
                while rows.done < len(items) and rows.error is None:
                    rows.changed.wait(WAIT_SECONDS)
                    bar.update(rows.done - bar.n)
    finally:
        rows.stop.set()  # after Ctrl-C or an error: no worker takes another row
    if rows.error is not None:
        raise rows.error
    return [reward for reward in rows.rewards if reward is not None]

"""The RoboReward rubric prompt (published on the RoboReward-4B/8B model cards; docs/protocol.md, section 2).

The prompt is the only text a model receives: one user message, this text first, then the
video or its frames. No system prompt, no in-context examples, no captions between frames.
"""

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
"""The exact prompt text; ``{task}`` is the row's task instruction."""


def build_prompt(task: str) -> str:
    """Fill the task instruction into the rubric prompt.

    Args:
        task: The task instruction of one metadata row, used verbatim.

    Returns:
        The complete text part of the request.
    """
    return RUBRIC_PROMPT_TEMPLATE.replace("{task}", task)

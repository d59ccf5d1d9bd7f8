"""The protocol's fixed texts, copied (not imported from the package) so tests compare the package against them."""

RUBRIC = (
    "Given the task, assign a discrete progress score reward (1,2,3,4,5) for the robot in the video in the format: "
    "ANSWER: <score>\n"
    "Rubric for end-of-episode progress (judge only the final state without time limits):\n"
    "1 - No Success: Final state shows no goal-relevant change for the command.\n"
    "2 - Minimal Progress: Final state shows a small but insufficient change toward the goal.\n"
    "3 - Partial Completion: The final state shows good progress toward the goal but violates more than one "
    "requirement or a major requirement.\n"
    "4 - Near Completion: Final state is correct in region and intent but misses a single minor requirement.\n"
    "5 - Perfect Completion: Final state satisfies all requirements.\n"
    "\n"
    "Task: "
)
"""PROTOCOL section 3, verbatim (the prompt published on the RoboReward model cards), up to the task: copied from
PROTOCOL.md section 3 with the 4-space indentation removed."""

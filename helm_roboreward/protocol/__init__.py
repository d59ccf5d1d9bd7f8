"""RoboRewardBench's protocol, HELM-free: rows, prompt, frames, media, parse and scoring (docs/protocol.md).

Every front-end (HELM, the reward API, robot-data tools) builds on these modules; none of them imports HELM.
"""

__version__ = "0.1.0"

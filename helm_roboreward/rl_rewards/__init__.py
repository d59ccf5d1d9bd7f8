"""RoboReward as the reward of the RL frameworks people train with (docs/rl_rewards.md).

- :mod:`.trl_reward`: :class:`~helm_roboreward.rl_rewards.trl_reward.TRLReward`, a ``reward_funcs`` entry of TRL's
  ``GRPOTrainer``;
- :mod:`.verl_reward`: ``compute_score`` / ``compute_score_async``, verl's ``custom_reward_function``;
- :mod:`.reward_values`: what they share (the reward's number, one model per process).

Each scores through :class:`~helm_roboreward.reward.RewardModel` (the benchmark's exact protocol); importing this
package loads no HELM (building the model does).
"""

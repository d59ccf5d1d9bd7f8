"""Your own robot data: LeRobot datasets imported as a local copy, scored by any reward model, exported.

- :mod:`~helm_roboreward.robot_data.lerobot_format`: reading a LeRobotDataset (v2.1 and v3.0 layouts): its info,
  cameras and file paths; :mod:`~helm_roboreward.robot_data.lerobot_episodes`: its episodes, checked;
- :mod:`~helm_roboreward.robot_data.episode_clips`: cutting an episode (or a prefix of it) out of its video;
- :mod:`~helm_roboreward.robot_data.labels`: episode selections and their gold scores (labels: a file or
  ``next.success``);
- :mod:`~helm_roboreward.robot_data.importing`: writing the local copy in the benchmark layout;
- :mod:`~helm_roboreward.robot_data.labelling`: scoring every episode through the reward API
  (:mod:`~helm_roboreward.robot_data.scoring`: ``-n`` rows at a time, a progress bar, Ctrl-C at once);
- :mod:`~helm_roboreward.robot_data.progress`: prefix anchors and LeRobot's per-frame progress schema;
- :mod:`~helm_roboreward.robot_data.predictions_export`: a suite's predictions as a ``datasets`` dataset
  (:mod:`~helm_roboreward.robot_data.export_files`: where it is written, atomically, and pushed);
- :mod:`~helm_roboreward.robot_data.hub_source`, :mod:`~helm_roboreward.protocol.data_sources`: hub datasets,
  and a time limit on every hub request.

No module here imports HELM: labelling builds a :class:`~helm_roboreward.reward.RewardModel`, which loads it.
docs/own_robot_data.md is the guide.
"""

"""Simulated RoboRewardBench sample: scripted pybullet rollouts labelled from simulator state.

Only :mod:`labels` and :mod:`records` are importable without pybullet; they hold the rubric
thresholds and the row formats that the tests check the sample against.
"""

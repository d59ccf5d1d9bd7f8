"""What inspect-ai loads through this package's ``inspect_ai`` entry point: the task and the model provider.

Importing registers ``helm_roboreward/roboreward_bench`` (the task) and ``roboreward`` (the provider, so
``--model roboreward/baseline/constant-3`` runs offline) in inspect-ai's registry, and does nothing else.
"""

from helm_roboreward.inspect_frontend.bench_task import progress_request, roboreward_bench
from helm_roboreward.inspect_frontend.model_provider import RoboRewardModelAPI
from helm_roboreward.inspect_frontend.progress_scorer import progress_score

__all__ = ["RoboRewardModelAPI", "progress_request", "progress_score", "roboreward_bench"]

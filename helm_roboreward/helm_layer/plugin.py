"""The HELM plugin entry point (group ``helm``): importing it registers everything helm-run needs.

- the ``roboreward`` run spec (by importing :mod:`helm_roboreward.helm_layer.run_specs`);
- the routing-aware model expanders (``video=auto`` resolved per model);
- the package's model metadata and deployments (offline baselines, served models), for names
  that ``--local-path`` (``prod_env/``) did not already define.
"""

from helm_roboreward.helm_layer.model_registry import register_package_models
from helm_roboreward.helm_layer.run_specs import install_expanders

install_expanders()
register_package_models()

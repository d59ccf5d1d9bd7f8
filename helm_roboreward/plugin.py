"""The HELM plugin entry point (group ``helm``): importing it registers what helm-run needs, and only adds.

- the ``roboreward`` run spec (by importing :mod:`helm_roboreward.run_specs`), which routes each
  model officially itself (HELM's run expanders are untouched, and none is added);
- the package's model metadata and deployments (offline baselines, in-process and served models), for names
  that ``--local-path`` (``prod_env/``) did not already define. The package's models carry HELM's
  ``UNSUPPORTED_MODEL_TAG``, so they join none of HELM's model groups (``model=vlm``, ``model=all``, ...), and
  its deployments of HELM's models never become their default: other benchmarks' runs stay as stock HELM builds
  them (tests/official/test_good_guest.py).
"""

import helm_roboreward.run_specs  # noqa: F401  (registers the roboreward run spec function)
from helm_roboreward.models.registry import register_package_models

register_package_models()

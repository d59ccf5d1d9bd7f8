"""The HELM plugin entry point (group ``helm``): registers the ``roboreward`` run spec and the package's models.

It only adds: HELM's run expanders are untouched, the package's models join none of HELM's model groups (their
``UNSUPPORTED_MODEL_TAG``) and never become a default deployment (tests/official/test_good_guest.py).
"""

import helm_roboreward.run_specs  # noqa: F401  (registers the roboreward run spec function)
from helm_roboreward.models.registry import register_package_models

register_package_models()

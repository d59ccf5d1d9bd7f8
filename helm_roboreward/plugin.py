"""Stable import path of the plugin module (``helm-run --plugins helm_roboreward.plugin``).

The ``helm`` entry point names :mod:`helm_roboreward.helm_layer.plugin`, which this module imports: importing
either registers the run spec, the routing-aware expanders and the package's models once.
"""

import helm_roboreward.helm_layer.plugin  # noqa: F401

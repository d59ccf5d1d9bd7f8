"""The HELM layer: the only part of the package that imports HELM.

The scenario, the ``roboreward`` run spec and its per-model routing, the metric, the summarizer, the clients,
the model registry and the plugin entry point.

HELM records some of these classes by dotted path (``run_spec.json``, model deployment YAML,
``--summarizer-class-name``); those paths stay importable where earlier versions had them
(``helm_roboreward.scenario``, ``helm_roboreward.metrics``, ``helm_roboreward.summarizer``,
``helm_roboreward.run_specs``, ``helm_roboreward.clients.*``).
"""

"""Model tools: ``roboreward models``, ``add-model`` and ``estimate``."""

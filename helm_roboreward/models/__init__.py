"""The models a ``roboreward`` run knows, and the tools that manage them.

The package's model files and their registration with HELM, the catalogue (families, media, credentials),
retired models, and the helpers of ``roboreward add-model`` and ``roboreward estimate``.
"""

"""The HELM front-end: the plugin, run spec, scenario, metric, clients and summarizer HELM loads by class path.

The class paths HELM records in its files are fixed (tests/test_layout.py pins them).
"""

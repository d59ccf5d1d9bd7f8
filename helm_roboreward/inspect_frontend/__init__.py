"""The Inspect front-end: the ``roboreward_bench`` task, the ``roboreward`` model provider, and Inspect logs as rows.

``inspect eval helm_roboreward/roboreward_bench`` loads ``registry`` through the ``inspect_ai`` entry point (the
``inspect`` extra). This file imports nothing, so ``log_rows`` reads a log where inspect-ai is not installed.
"""

"""The pure core: the benchmark's constants and subsets, the prompt, scoring, the stats catalogue, the instance record.

No I/O and no HELM: everything else builds on these.
"""

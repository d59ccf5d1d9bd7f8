"""Publishing a suite's results: the comparability rule, the run manifest, the Hub's eval results, the LaTeX table.

docs/publishing.md describes each file this package writes and where its facts come from.
"""

"""Publishing a suite's results: the comparability rule, the run manifest, the Hub's eval results, LaTeX."""

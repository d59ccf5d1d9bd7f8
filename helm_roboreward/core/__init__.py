"""The pure core (no HELM): constants, subsets, prompt, scoring, stats catalogue, instance record, safe file writes."""

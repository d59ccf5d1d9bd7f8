"""The data (imports the core only; no HELM): metadata rows with kind and episode, and where they come from."""

"""HELM clients added by helm-roboreward: offline baselines and the OpenAI-compatible video client."""

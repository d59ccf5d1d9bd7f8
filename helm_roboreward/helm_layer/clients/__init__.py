"""HELM clients added by helm-roboreward.

Offline baselines, the in-process transformers client for Qwen3-VL and RoboReward (the official path), the
OpenAI-compatible video client (vLLM) and the one-message Gemini client.
"""

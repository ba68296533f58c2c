"""Inference for the trainer: vLLM with in-flight weight updates."""

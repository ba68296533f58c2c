"""Trainer adapter: asynchronous RL and SFT over verifiers environments."""

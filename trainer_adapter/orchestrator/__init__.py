"""The orchestrator's pure parts: rollout records, advantages, the difficulty buffer, staleness, packing."""

"""The machinery of one rollout: model calls, era detection, the turn loop's helpers."""

"""Weights from trainer to inference nodes without a shared filesystem: shards on HTTP relays (docs/inference.md)."""

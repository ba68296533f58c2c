"""A tiny model built in code: a byte-level tokenizer with a chat template and a small Qwen2 decoder."""

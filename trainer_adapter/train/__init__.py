"""The trainer: FSDP2 over torch.distributed, micro-batch forward passes, checkpoints, weight export, SFT."""

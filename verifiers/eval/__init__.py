"""Running many rollouts, saving them as they finish, and summarising a run."""

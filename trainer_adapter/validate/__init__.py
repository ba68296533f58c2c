"""Checks on rollouts that untrusted inference workers submit: commitments to hidden states, termination,
sampling, data assignment, value bounds and schema (docs/validation.md)."""

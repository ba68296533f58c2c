"""``vf-train``, the trainer's command line (the ``verifiers-trainer`` distribution's console script)."""

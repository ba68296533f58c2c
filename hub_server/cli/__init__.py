"""``vf-hub``, the Hub's command line (the ``verifiers-hub`` distribution's console script).

Imports nothing itself: ``hub_entry`` must load on a venv without the Hub's dependencies to name their install.
"""

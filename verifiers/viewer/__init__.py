"""``vf-tui``: a terminal viewer for the runs ``vf-eval`` writes under ``outputs/evals/<env>--<model>/<run_id>/``.

The loading layer (:mod:`~verifiers.viewer.runs`, :mod:`~verifiers.viewer.rollouts`,
:mod:`~verifiers.viewer.transcript`, :mod:`~verifiers.viewer.reward_filter`) is plain Python and never imports
Textual; only :mod:`verifiers.viewer.app` and :mod:`verifiers.viewer.screens` do (the ``tui`` extra). Every
text taken from a results file reaches the screen as plain text, never as markup.
"""

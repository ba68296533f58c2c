"""The tuple era (verifiers 0.1.x) adapted to the SDK's State-era core.

The core is written once, for the State era. Everything the tuple era calls or answers differently lives
here, reached from the core only at its seams:

* :mod:`verifiers.compat.turns`: the turn loop's and the scoring's conventions
  (:func:`~verifiers.compat.turns.conventions_for`), chosen when an environment is built from the era that
  :mod:`verifiers.rollout.era` and :mod:`verifiers.rollout.declared_era` decide;
* :mod:`verifiers.compat.calls`: the tuple era's ``rollout(client, model, prompt, ...)`` and
  ``env_response`` answering ``(messages, state)``;
* :mod:`verifiers.compat.scoring`: ``score_rollout(prompt, completion, ...)``, ``score_rollouts`` and rubric
  overrides of that shape.

The package imports nothing on its own: each seam imports the module it needs.
"""

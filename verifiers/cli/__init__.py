"""The SDK's command-line entry points (``vf-eval``, ``vf-init``, ``vf-tui``, ``vf-scripted-server``): thin typer
apps over library calls. The Hub's ``vf-hub`` is :mod:`hub_server.cli`, the trainer's ``vf-train``
:mod:`trainer_adapter.cli`: each script ships in the distribution whose code it runs."""

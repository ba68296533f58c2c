"""The Hub's check worker (``vf-hub worker check``): a process beside the index that runs uploaded
environments, only ever inside sandboxes, to check versions and re-score pushed results.

The index process never imports this package (an import-linter contract): it only queues checks and shows
their outcomes (``hub_server.services.server_checks``).
"""

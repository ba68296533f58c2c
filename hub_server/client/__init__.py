"""The client side of the Hub: JSON API calls, uploads, builds, install commands (used by ``vf-hub``)."""

from hub_server.client.api import HubClient
from hub_server.client.build import ProjectSource, build_dists, read_project
from hub_server.client.config import hub_token, hub_url, save_login

__all__ = ["HubClient", "ProjectSource", "build_dists", "hub_token", "hub_url", "read_project", "save_login"]

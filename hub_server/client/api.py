"""A small typed client of the Hub's JSON API and upload endpoint (what ``vf-hub`` uses)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import httpx

from hub_server.client.config import DEFAULT_HUB_URL
from hub_server.distributions import parse_filename
from hub_server.errors import BadRequest, Conflict, Forbidden, HubError, NotAuthenticated, NotFound, RateLimited

_ERRORS: dict[int, type[HubError]] = {400: BadRequest, 401: NotAuthenticated, 403: Forbidden, 404: NotFound,
                                      409: Conflict}
_TIMEOUT = httpx.Timeout(30.0, read=300.0, write=300.0)


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text.strip()
    if response.status_code == 429:
        raise RateLimited(str(detail), int(response.headers.get("retry-after", "60")))
    error = _ERRORS.get(response.status_code, HubError)
    raise error(f"{response.status_code}: {detail}")


def _hub_shaped(response: httpx.Response) -> bool:
    """Whether an error response has the Hub's JSON API error body (``{"detail": ...}``)."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and "detail" in body


def _digests(path: Path) -> dict[str, str]:
    sha256, blake2 = hashlib.sha256(), hashlib.blake2b(digest_size=32)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha256.update(chunk)
            blake2.update(chunk)
    return {"sha256_digest": sha256.hexdigest(), "blake2_256_digest": blake2.hexdigest()}


class HubClient:
    """The Hub at ``url``, as the holder of ``token`` (or anonymously)."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=_TIMEOUT)

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, f"/api/v1{path}", **kwargs)
        if not response.is_success and not _hub_shaped(response):
            # e.g. the README's scripted model server on the default port: its 404 would read as "no such project"
            raise HubError(f"{self.url} does not look like an Environments Hub: it answered {response.status_code} "
                           f"to {method} /api/v1{path} with {response.text.strip()[:200]!r}. Point vf-hub at the Hub "
                           f"with --hub URL or VF_HUB_URL (default {DEFAULT_HUB_URL}).")
        _raise_for(response)
        result: dict[str, Any] = response.json()
        return result

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            raise HubError(f"cannot reach the Hub at {self.url} ({type(error).__name__}: {error}); start one with "
                           "vf-hub serve, or point vf-hub at it with --hub URL or VF_HUB_URL") from None

    def whoami(self) -> dict[str, Any]:
        return self._call("GET", "/whoami")

    def search(self, query: str = "", owner: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"q": query, "limit": limit, **({"owner": owner} if owner else {})}
        projects: list[dict[str, Any]] = self._call("GET", "/projects", params=params)["projects"]
        return projects

    def info(self, owner: str, name: str) -> dict[str, Any]:
        return self._call("GET", f"/projects/{owner}/{name}")

    def create_project(self, owner: str, name: str, private: bool) -> dict[str, Any]:
        return self._call("POST", "/projects", json={"owner": owner, "name": name, "private": private})

    def set_refuse_failing_checks(self, owner: str, name: str, refuse: bool) -> dict[str, Any]:
        """The owner's policy: whether versions failing the Hub's own check are yanked."""
        return self._call("PATCH", f"/projects/{owner}/{name}", json={"refuse_failing_checks": refuse})

    def yank(self, owner: str, name: str, version: str, reason: str = "") -> dict[str, Any]:
        return self._call("POST", f"/projects/{owner}/{name}/versions/{version}/yank", json={"reason": reason})

    def unyank(self, owner: str, name: str, version: str) -> dict[str, Any]:
        return self._call("POST", f"/projects/{owner}/{name}/versions/{version}/unyank")

    def create_token(self, permission: str, owner: str | None, project: str | None, expires_days: int,
                     description: str = "") -> dict[str, Any]:
        body = {"permission": permission, "owner": owner, "project": project, "expires_days": expires_days,
                "description": description}
        return self._call("POST", "/tokens", json=body)

    def list_tokens(self) -> list[dict[str, Any]]:
        tokens: list[dict[str, Any]] = self._call("GET", "/tokens")["tokens"]
        return tokens

    def revoke_token(self, public_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/tokens/{public_id}")

    def upload(self, path: Path, owner: str | None = None) -> str:
        """Upload one distribution file through the legacy API (the same request twine sends)."""
        parsed = parse_filename(path.name)
        fields = {":action": "file_upload", "protocol_version": "1", "name": parsed.name,
                  "version": str(parsed.version), "filetype": parsed.packagetype, **_digests(path)}
        endpoint = f"/{owner}/legacy/" if owner else "/legacy/"
        with open(path, "rb") as handle:
            response = self._send("POST", endpoint, data=fields,
                                  files={"content": (path.name, handle, "application/octet-stream")})
        _raise_for(response)
        return response.text.strip()

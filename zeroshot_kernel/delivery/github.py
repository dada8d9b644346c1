"""The GitHub REST calls delivery makes (httpx); the base URL is configurable for GitHub
Enterprise (``https://HOST/api/v3``). The token comes from the ``github`` connection
(``GH_TOKEN``) and is sent only as the Authorization header, never logged."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from zeroshot_kernel.exceptions import OperationFailed

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
MERGE_METHODS = ("squash", "merge", "rebase")
"""Preference order among the methods a repository allows."""


class GitHubError(OperationFailed):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"GitHub answered {status}: {message}")


def repository_slug(url: str) -> str:
    """``owner/name`` from a remote URL (https, ssh or scp-like); ``""`` when unknown."""
    match = re.search(r"[:/]([^/:]+)/([^/]+?)(?:\.git)?/?$", url)
    return f"{match.group(1)}/{match.group(2)}" if match else ""


@dataclass(frozen=True)
class Pull:
    number: int
    head_sha: str
    state: str
    merged: bool
    mergeable: bool | None
    mergeable_state: str
    url: str

    @classmethod
    def of(cls, data: dict[str, Any]) -> Pull:
        return cls(
            int(data["number"]),
            str(data["head"]["sha"]),
            str(data["state"]),
            bool(data.get("merged", False)),
            data.get("mergeable"),
            str(data.get("mergeable_state") or "unknown"),
            str(data.get("html_url", "")),
        )


class GitHub:
    """One repository's pull requests, reviews, checks and merges."""

    def __init__(
        self,
        repository: str,
        token: str,
        *,
        api_url: str = DEFAULT_API_URL,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.repository = repository
        self._client = httpx.AsyncClient(
            base_url=api_url.rstrip("/"),
            transport=transport,
            timeout=30.0,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "zeroshot-delivery",
            },
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def _call(self, method: str, path: str, *, ok404: bool = False, **kwargs: Any) -> Any:
        response = await self._client.request(method, f"/repos/{self.repository}{path}", **kwargs)
        if ok404 and response.status_code == 404:
            return None
        if response.status_code >= 400:
            try:
                message = str(response.json().get("message", response.text))
            except ValueError:
                message = response.text
            raise GitHubError(response.status_code, message)
        return response.json() if response.content else None

    async def repo(self) -> dict[str, Any]:
        data: dict[str, Any] = await self._call("GET", "")
        return data

    async def find_pull(self, head: str, base: str) -> Pull | None:
        owner = self.repository.split("/")[0]
        found = await self._call(
            "GET", "/pulls", params={"head": f"{owner}:{head}", "base": base, "state": "open"}
        )
        return Pull.of(found[0]) if found else None

    async def open_pull(self, head: str, base: str, title: str, body: str) -> Pull:
        return Pull.of(
            await self._call(
                "POST", "/pulls", json={"head": head, "base": base, "title": title, "body": body}
            )
        )

    async def update_pull(self, number: int, title: str, body: str) -> Pull:
        return Pull.of(
            await self._call("PATCH", f"/pulls/{number}", json={"title": title, "body": body})
        )

    async def pull(self, number: int) -> Pull:
        return Pull.of(await self._call("GET", f"/pulls/{number}"))

    async def reviews(self, number: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await self._call("GET", f"/pulls/{number}/reviews")
        return found

    async def review_comments(self, number: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await self._call("GET", f"/pulls/{number}/comments")
        return found

    async def protection(self, branch: str) -> dict[str, Any]:
        found: dict[str, Any] | None = await self._call(
            "GET", f"/branches/{branch}/protection", ok404=True
        )
        return found or {}

    async def check_runs(self, sha: str) -> list[dict[str, Any]]:
        found = await self._call("GET", f"/commits/{sha}/check-runs")
        runs: list[dict[str, Any]] = found.get("check_runs", [])
        return runs

    async def merge(self, number: int, sha: str, method: str) -> dict[str, Any]:
        done: dict[str, Any] = await self._call(
            "PUT", f"/pulls/{number}/merge", json={"sha": sha, "merge_method": method}
        )
        return done

"""A loopback stand-in for GitHub: the REST endpoints software-change delivery uses,
served on 127.0.0.1, backed by a real bare repository on disk for branch heads and merges.
It is not GitHub; it answers the same paths and fields delivery reads, and lets a test
script reviews, check runs, conflicts, merge policy and required approvals.

Endpoints: ``GET /repos/O/R``; ``GET|POST /repos/O/R/pulls``; ``GET|PATCH
/repos/O/R/pulls/N``; ``GET /repos/O/R/pulls/N/reviews``; ``GET /repos/O/R/pulls/N/comments``;
``GET /repos/O/R/branches/B/protection`` (404 when unprotected); ``GET
/repos/O/R/commits/SHA/check-runs``; ``PUT /repos/O/R/pulls/N/merge``.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-token-0123456789"


@dataclass
class GitHubState:
    remote: Path
    owner: str = "octo"
    name: str = "project"
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    """Reviews; ``commit_id`` ``"FIRST_HEAD"`` stands for the first head a pull had."""
    comments: list[dict[str, Any]] = field(default_factory=list)
    protection: dict[str, Any] | None = None
    check_names: tuple[str, ...] = ()
    pending_polls: int = 0
    """How many check-run reads answer in_progress before the checks complete."""
    conclusion: str = "success"
    conflict_on_first_head: bool = False
    merge_methods: dict[str, bool] = field(
        default_factory=lambda: {
            "allow_merge_commit": False,
            "allow_squash_merge": False,
            "allow_rebase_merge": True,
        }
    )
    calls: list[tuple[str, str]] = field(default_factory=list)
    check_polls: int = 0
    merged_with: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def head(self, branch: str) -> str:
        done = subprocess.run(
            ["git", "rev-parse", f"refs/heads/{branch}"],
            cwd=self.remote,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip()

    def pull_view(self, number: int) -> dict[str, Any]:
        pull = self.pulls[number]
        sha = self.head(pull["head"])
        pull.setdefault("first_head", sha)
        conflict = self.conflict_on_first_head and sha == pull["first_head"]
        return {
            "number": number,
            "state": "closed" if pull["merged"] else "open",
            "merged": pull["merged"],
            "title": pull["title"],
            "body": pull["body"],
            "head": {"ref": pull["head"], "sha": sha},
            "base": {"ref": pull["base"]},
            "mergeable": not conflict,
            "mergeable_state": "dirty" if conflict else "clean",
            "html_url": f"http://github.invalid/{self.owner}/{self.name}/pull/{number}",
        }

    def reviews_view(
        self, number: int, items: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """Reviews (or ``items``) with ``FIRST_HEAD`` replaced by the pull's first head."""
        first = self.pulls[number].get("first_head", "")
        return [
            {**r, "commit_id": first if r.get("commit_id") == "FIRST_HEAD" else r.get("commit_id")}
            for r in (self.reviews if items is None else items)
        ]


class _Handler(BaseHTTPRequestHandler):
    state: GitHubState

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        document: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return document

    def _route(self, method: str) -> None:
        state = self.state
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, {"message": "Bad credentials"})
            return
        parts = urlsplit(self.path)
        prefix = f"/repos/{state.owner}/{state.name}"
        if not parts.path.removeprefix("/api/v3").startswith(prefix):
            self._send(404, {"message": "Not Found"})
            return
        path = parts.path.removeprefix("/api/v3")[len(prefix) :]
        with state.lock:
            state.calls.append((method, path))
            status, body = self._answer(method, path, parse_qs(parts.query))
        self._send(status, body)

    def _answer(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        state = self.state
        if path == "" and method == "GET":
            return 200, {"full_name": f"{state.owner}/{state.name}", **state.merge_methods}
        if path == "/pulls" and method == "GET":
            head = query.get("head", [""])[0].split(":", 1)[-1]
            return 200, [
                state.pull_view(n)
                for n, p in state.pulls.items()
                if p["head"] == head and not p["merged"]
            ]
        if path == "/pulls" and method == "POST":
            body = self._body()
            number = len(state.pulls) + 1
            state.pulls[number] = {
                "head": body["head"],
                "base": body["base"],
                "title": body["title"],
                "body": body["body"],
                "merged": False,
            }
            return 201, state.pull_view(number)
        match = re.fullmatch(r"/pulls/(\d+)(/\w+)?", path)
        if match and int(match.group(1)) in state.pulls:
            number, tail = int(match.group(1)), match.group(2) or ""
            if tail == "" and method == "GET":
                return 200, state.pull_view(number)
            if tail == "" and method == "PATCH":
                state.pulls[number].update(self._body())
                return 200, state.pull_view(number)
            if tail == "/reviews":
                return 200, state.reviews_view(number)
            if tail == "/comments":
                return 200, state.reviews_view(number, state.comments)
            if tail == "/merge" and method == "PUT":
                return self._merge(number, self._body())
        if re.fullmatch(r"/branches/[^/]+/protection", path):
            return (
                (404, {"message": "Branch not protected"})
                if state.protection is None
                else (200, state.protection)
            )
        if re.fullmatch(r"/commits/\w+/check-runs", path):
            state.check_polls += 1
            done = state.check_polls > state.pending_polls
            return 200, {
                "total_count": len(state.check_names),
                "check_runs": [
                    {
                        "name": name,
                        "status": "completed" if done else "in_progress",
                        "conclusion": state.conclusion if done else None,
                    }
                    for name in state.check_names
                ],
            }
        return 404, {"message": "Not Found"}

    def _merge(self, number: int, body: dict[str, Any]) -> tuple[int, Any]:
        state = self.state
        pull = state.pulls[number]
        required = ((state.protection or {}).get("required_pull_request_reviews") or {}).get(
            "required_approving_review_count", 0
        )
        approvals = sum(r["state"] == "APPROVED" for r in state.reviews)
        if approvals < required:
            return 405, {
                "message": "At least 1 approving review is required by reviewers with write access."
            }
        method = body.get("merge_method", "merge")
        allowed = {
            "merge": "allow_merge_commit",
            "squash": "allow_squash_merge",
            "rebase": "allow_rebase_merge",
        }[method]
        if not state.merge_methods.get(allowed):
            return 405, {"message": f"{method} merges are not allowed on this repository."}
        sha = state.head(pull["head"])
        if body.get("sha") != sha:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}
        subprocess.run(
            ["git", "update-ref", f"refs/heads/{pull['base']}", sha], cwd=state.remote, check=True
        )  # the head is fast-forward here
        pull["merged"] = True
        state.merged_with = method
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_PUT(self) -> None:
        self._route("PUT")


@contextmanager
def github_server(state: GitHubState) -> Iterator[str]:
    """Serve ``state`` on 127.0.0.1; yields the API base URL."""
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v3"
    finally:
        server.shutdown()
        server.server_close()

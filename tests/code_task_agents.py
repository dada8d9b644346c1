"""A scripted model for code-task research runs over the openai harness: the loopback
chat server (``chat_server``) answers each role as a competent agent would. Its scouts
propose a rule, its researcher writes a given file into the candidate, and its reviewer
asks to adopt whatever the engine measured (adoption stays the trusted code's decision).
A stand-in for a model server, not a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CLAIM = "measured log10_error -15 on every seed; adopt"


def competent(edit: str, path: str = "quadrature.py", briefed: str = "def rule(budget):") -> Any:
    """A scripted model: proposes a better rule, writes ``edit`` as ``path`` (after
    checking that the parent's ``briefed`` text was in its brief), and reviews by the
    engine's evidence in its input (adopt only what was measured)."""

    def respond(body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        node = prompt.split("`", 2)[1]
        if node.startswith("scout_"):
            strategy = node.removeprefix("scout_")
            return {
                "output": {
                    "proposal": {
                        "strategy": strategy,
                        "approach": f"{strategy}:gauss-legendre",
                        "paramsJson": "{}",
                        "rationale": "a higher-order rule within 64 calls",
                    }
                },
                "signals": {},
                "diagnostic": None,
            }
        if node == "researcher":
            assert briefed in prompt  # the parent's file, briefed
            return {
                "change": {
                    "parentId": "c000",
                    "strategy": "exploration",
                    "approach": "exploration:gauss-legendre",
                    "rationale": CLAIM,
                    "edits": [{"path": path, "kind": "contents", "text": edit}],
                }
            }
        evidence = json.loads(prompt.split("# Input (JSON)\n\n", 1)[1].split("\n\n# ", 1)[0])[
            "evidence"
        ]
        return {
            "output": None,
            "signals": {"verdict": "accepted"},
            "diagnostic": {
                "reason": CLAIM,
                "corrections": "",
                "title": "Gauss-Legendre",
                "description": evidence["diff"][:200],
                "adopt": evidence["status"] == "measured",
            },
        }

    return respond


def research(
    workspace: Path,
    base_url: str,
    study: str,
    *,
    task: str = "quadrature",
    options: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``zeroshot research run TASK --harness openai --base-url URL --iterations 1``, with
    no key and no base URL of this environment's."""
    clean = {
        k: v
        for k, v in {**os.environ, **(env or {})}.items()
        if k not in ("OPENAI_API_KEY", "ZEROSHOT_OPENAI_BASE_URL")
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "research",
            "run",
            task,
            "--harness",
            "openai",
            "--base-url",
            base_url,
            "--iterations",
            "1",
            "--study",
            study,
            *options,
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean,
    )

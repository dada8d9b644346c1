"""``zeroshot providers`` as a user runs it (a real subprocess): installed CLIs with their
versions (stand-ins here), satisfied connections by name only, and ``--check`` against
the stand-in CLIs and a loopback chat-completions server (a stand-in for a hosted API)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server
from harness_support import BIN_ENV, install_standin

# slow: a real zeroshot process per call, stand-in CLIs and a loopback server
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel", "providers"]
CREDENTIALS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GH_TOKEN",
    "OPENAI_BASE_URL",
)


def providers(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    return subprocess.run(
        [*ZEROSHOT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**clean, **env},
    )


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_lists_clis_with_versions_and_connections_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    secret = f"sk-{uuid.uuid4().hex}"
    missing = str(tmp_path / "no-such-codex")
    result = providers(
        tmp_path,
        "--json",
        OPENAI_API_KEY=secret,
        ZEROSHOT_CLAUDE_BIN=os.environ[BIN_ENV["claude"]],
        ZEROSHOT_CODEX_BIN=missing,
    )
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout
    found = report(result)
    clis = {c["name"]: c for c in found["clis"]}
    assert clis["claude"]["installed"] and "Claude Code stand-in" in clis["claude"]["version"]
    assert not clis["codex"]["installed"]
    assert clis["claude"]["egress"] == [
        "api.anthropic.com:443",
        "claude.ai:443",
        "statsig.anthropic.com:443",
    ]
    assert "api.openai.com:443" in clis["codex"]["egress"]
    connections = {c["name"]: c for c in found["connections"]}
    assert connections["openai"] == {
        "name": "openai",
        "env": "OPENAI_API_KEY",
        "satisfied": True,
        "baseUrl": "https://api.openai.com/v1",
    }
    assert connections["github"]["satisfied"] is False

    text = providers(
        tmp_path,
        OPENAI_API_KEY=secret,
        ZEROSHOT_CODEX_BIN=missing,
        ZEROSHOT_CLAUDE_BIN=os.environ[BIN_ENV["claude"]],
        ZEROSHOT_AGENT_EGRESS="gpu-box:8000",
    )
    assert "claude     2.0.0 (Claude Code stand-in)" in text.stdout
    assert (
        "its box reaches api.anthropic.com:443, claude.ai:443, gpu-box:8000, "
        "statsig.anthropic.com:443 and nothing else"
    ) in text.stdout
    assert "not installed (put it on PATH or set ZEROSHOT_CODEX_BIN)" in text.stdout
    assert "openai     OPENAI_API_KEY       set" in text.stdout
    assert secret not in text.stdout


def test_check_sends_one_tiny_request_per_configured_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    install_standin(tmp_path, "codex", monkeypatch)
    plan = {"connections": {"local": {"env": "ZS_LOCAL_LLM_KEY", "baseUrl": "placeholder"}}}
    with chat_server({"reply": "increment"}) as server:
        plan["connections"]["local"]["baseUrl"] = server.base_url
        result = providers(
            tmp_path,
            "--check",
            "--json",
            "--runtime",
            json.dumps(plan),
            ZS_LOCAL_LLM_KEY="local-key-1234",
            ANTHROPIC_API_KEY="ak-test-1234",
            ZEROSHOT_CLAUDE_BIN=os.environ[BIN_ENV["claude"]],
            ZEROSHOT_CODEX_BIN=os.environ[BIN_ENV["codex"]],
        )
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {c["provider"]: c for c in report(result)["checks"]}
    assert set(checks) == {"claude", "codex", "local"}
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["local"]["detail"] == f"{server.base_url}: 1 model(s)"
    assert [r["path"] for r in server.requests] == ["/v1/models"]
    assert server.requests[0]["headers"]["Authorization"] == "Bearer local-key-1234"


def test_a_failing_check_exits_nonzero(tmp_path: Path) -> None:
    # A minimal codex stand-in that answers --version and fails every turn with a 401,
    # as codex exec --json does without credentials.
    codex = tmp_path / "codex"
    codex.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "codex-cli 0.0.1 (stand-in)"; exit 0; fi\n'
        'echo \'{"type":"turn.failed","error":{"message":"401 Unauthorized"}}\'\n'
        "exit 1\n"
    )
    codex.chmod(0o755)
    result = providers(
        tmp_path,
        "--check",
        ZEROSHOT_CLAUDE_BIN=str(tmp_path / "none"),
        ZEROSHOT_CODEX_BIN=str(codex),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = [line for line in result.stdout.splitlines() if "FAIL" in line]
    assert line.startswith("  codex      FAIL codex is not authenticated")
    assert line.endswith(": 401 Unauthorized")

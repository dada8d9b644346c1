"""The claude and codex harnesses, end to end: real runs (detached controllers) whose
agents are stand-in CLIs speaking each CLI's documented output format as real
subprocesses (``tests/agent_standins``)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from engine_support import assert_trace, controller_pid, finish, kill, make_workspace, trace, wire
from harness_support import (
    calls,
    controller_logs,
    hang_file,
    hung_name,
    install_standin,
    judged_step,
    ledger_bytes,
    no_env,
    one_step,
    refine_loop,
    script,
)
from support import processes_named, wait_until

from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.events import NodeCompleted

# slow: real runs whose agents are stand-in CLI processes
pytestmark = pytest.mark.slow

CLIS = ["claude", "codex"]
CREDENTIAL = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
CONNECTION = {"claude": "anthropic", "codex": "openai"}


def completions(run: Run) -> list[NodeCompleted]:
    return [e for _, e in run.events() if isinstance(e, NodeCompleted)]


@pytest.mark.parametrize("cli", CLIS)
def test_a_step_answers_through_the_cli(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"increment": "value"}])
    run = ws.submit(one_step(cli), {"value": 41})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 42}}
    [completed] = completions(run)
    assert completed.usage is not None
    assert completed.usage.input_tokens and completed.usage.output_tokens
    [call] = calls(ws)
    assert call["resumed"] is None
    assert call["head"] == "# Task (step `work`)"
    if cli == "claude":
        assert call["argv"][:3] == ["-p", "--output-format", "json"]
        assert "acceptEdits" in call["argv"]
        denied = call["argv"][call["argv"].index("--disallowedTools") + 1].split(",")
        assert "Bash(git commit:*)" in denied and "Bash(git push:*)" in denied
        assert completed.usage.cost_usd == pytest.approx(0.0015)
    else:
        assert call["argv"][:2] == ["exec", "--json"]
        assert call["argv"][call["argv"].index("--sandbox") + 1] == "workspace-write"


@pytest.mark.parametrize("cli", CLIS)
def test_a_verifier_runs_read_only(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, judge=[{"gate": 3}])
    run = ws.submit(judged_step(cli), {"value": 5})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 5}}
    [call] = calls(ws)
    argv = call["argv"]
    if cli == "claude":
        assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
        assert argv[argv.index("--allowedTools") + 1] == (
            "Read,Grep,Glob,Bash(git diff:*),Bash(git log:*),Bash(git show:*),Bash(git status:*)"
        )
        assert "--disallowedTools" not in argv
    else:
        assert argv[argv.index("--sandbox") + 1] == "read-only"


@pytest.mark.parametrize("cli", CLIS)
def test_a_malformed_reply_is_corrected_in_the_same_session(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(
        ws,
        work=[{"text": "Sure! The answer is 8."}, {"json": {"value": "8"}}, {"json": {"value": 8}}],
    )
    run = ws.submit(one_step(cli), {"value": 7})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 8}}
    first, second, third = calls(ws)
    assert first["resumed"] is None
    assert second["resumed"] == third["resumed"] == first["session"]
    assert second["head"] == third["head"] == "Your last reply was not accepted:"
    logs = [log.line for _, log in run.logs()]
    assert any("reply 1 rejected: the reply is not JSON" in line for line in logs)
    assert any("reply 2 rejected: output.value: expected an integer" in line for line in logs)
    [completed] = completions(run)
    assert completed.usage is not None and completed.usage.output_tokens is not None
    assert completed.usage.output_tokens == 3 * (20 if cli == "claude" else 30)


@pytest.mark.parametrize("cli", CLIS)
def test_three_malformed_replies_are_malformed(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"json": {"value": 1, "extra": True}}])
    run = ws.submit(one_step(cli), {"value": 7})

    # The error is not routed, so the run goes on with the state unchanged.
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 7}}
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire() == {
        "status": "error",
        "code": "malformed",
        "reason": "malformed_result",
    }
    assert completed.detail is not None and "output.extra: unknown field" in completed.detail
    assert len(calls(ws)) == 3


@pytest.mark.parametrize("cli", CLIS)
def test_a_hang_is_killed_with_its_whole_process_group_at_the_timeout(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"hang": True}])
    run = ws.submit(one_step(cli, timeout_ms=3_000), {"value": 7})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 7}}
    assert_trace(
        trace(run),
        ["run_started", "started work#1", "completed work#1 timeout", "terminal succeeded"],
    )
    # The agent named itself, a child and a setsid daemon: none is left on the host.
    name = hung_name()
    wait_until(
        lambda: not processes_named(name),
        timeout=5,
        message="the agent, child and daemon gone",
    )


@pytest.mark.parametrize("cli", CLIS)
def test_a_crash_is_a_crash(cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"crash": True}])
    run = ws.submit(one_step(cli), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire() == {
        "status": "error",
        "code": "crash",
        "reason": "declared_failure",
    }
    assert completed.detail is not None and "exit" in completed.detail
    assert any("crashed on purpose" in log.line for _, log in run.logs())


@pytest.mark.parametrize("cli", CLIS)
def test_an_unparseable_stream_is_a_crash(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"garbage": True}])
    run = ws.submit(one_step(cli), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire()["code"] == "crash"


@pytest.mark.parametrize("cli", CLIS)
def test_a_declined_task_is_a_refusal(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"refuse": "this would delete the production database"}])
    run = ws.submit(one_step(cli), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire() == {
        "status": "error",
        "code": "refusal",
        "reason": "policy_denied",
    }
    assert completed.detail == "the agent declined: this would delete the production database"
    assert len(calls(ws)) == 1


@pytest.mark.parametrize("cli", CLIS)
def test_the_cli_reporting_missing_credentials_is_authentication_required(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    no_env(monkeypatch, CREDENTIAL[cli])
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"require_env": CREDENTIAL[cli], "increment": "value"}])
    run = ws.submit(one_step(cli), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire() == {
        "status": "error",
        "code": "refusal",
        "reason": "authentication_required",
    }
    assert len(calls(ws)) == 1


@pytest.mark.parametrize("cli", CLIS)
def test_a_declared_but_unset_credential_is_refused_before_the_cli_runs(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    no_env(monkeypatch, CREDENTIAL[cli])
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"increment": "value"}])
    run = ws.submit(one_step(cli, connections=[CONNECTION[cli]]), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire()["reason"] == "authentication_required"
    assert calls(ws) == []


@pytest.mark.parametrize("cli", CLIS)
def test_a_missing_cli_binary_is_refused_with_a_clear_detail(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    monkeypatch.setenv(f"ZEROSHOT_{cli.upper()}_BIN", str(tmp_path / "nowhere" / cli))
    ws = make_workspace(tmp_path / "ws")
    run = ws.submit(one_step(cli), {"value": 7})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire()["code"] == "refusal"
    assert completed.detail is not None
    assert f"the {cli} CLI was not found" in completed.detail
    assert f"ZEROSHOT_{cli.upper()}_BIN" in completed.detail


@pytest.mark.parametrize("cli", CLIS)
def test_node_instance_scope_continues_one_session_across_loop_iterations(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, bump=[{"increment": "value"}], gate=[{"gate": 3}])
    run = ws.submit(refine_loop(cli, "node_instance", "execution"), {"value": 0})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 3}}
    bumps = [c for c in calls(ws) if c["node"] == "bump"]
    gates = [c for c in calls(ws) if c["node"] == "gate"]
    assert len(bumps) == len(gates) == 3
    # bump: one session, continued on every revisit
    assert bumps[0]["resumed"] is None
    assert [c["resumed"] for c in bumps[1:]] == [bumps[0]["session"]] * 2
    assert {c["session"] for c in bumps} == {bumps[0]["session"]}
    # gate (execution scope): a fresh session every time
    assert all(c["resumed"] is None for c in gates)
    assert len({c["session"] for c in gates}) == 3


@pytest.mark.parametrize("cli", CLIS)
def test_an_unclean_turn_drops_the_node_instance_session(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    # iteration 1 fine, iteration 2 crashes (bump errors, the loop goes on), then fine
    script(
        ws,
        bump=[{"increment": "value"}, {"crash": True}, {"increment": "value"}],
        gate=[{"gate": 2}],
    )
    run = ws.submit(refine_loop(cli, "node_instance", "execution"), {"value": 0})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    bumps = [c for c in calls(ws) if c["node"] == "bump"]
    assert len(bumps) == 3
    assert bumps[1]["resumed"] == bumps[0]["session"]
    assert bumps[2]["resumed"] is None  # the crash dropped the session


@pytest.mark.parametrize("cli", CLIS)
def test_a_connection_secret_reaches_the_agent_but_no_record(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv(CREDENTIAL[cli], secret)
    ws = make_workspace(tmp_path / "ws")
    # The agent has the key (it prints it), and echoes it in a reply that gets corrected.
    script(
        ws,
        work=[
            {"require_env": CREDENTIAL[cli], "leak_env": CREDENTIAL[cli], "text": f"key {secret}"},
            {"require_env": CREDENTIAL[cli], "increment": "value"},
        ],
    )
    run = ws.submit(one_step(cli, connections=[CONNECTION[cli]]), {"value": 1})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    lines = [log.line for _, log in run.logs()]
    assert "debug: key is <redacted>" in lines
    assert all(secret not in line for line in lines)
    stored = ledger_bytes(ws)
    assert secret.encode() not in stored
    assert b"<redacted>" in stored
    assert secret not in controller_logs(ws)


def test_status_shows_the_tokens_and_cost_agents_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"text": "not json"}, {"increment": "value"}])
    run = ws.submit(one_step("claude"), {"value": 1})
    finish(run)

    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "status",
            run.id,
            "--ledger",
            str(ws.ledger_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ws.root,
    )
    assert shown.returncode == 0, shown.stderr
    # two turns of 115 input (100 + 10 cache creation + 5 cache read) and 20 output tokens
    assert "  usage:  230 input + 40 output tokens, $0.0030" in shown.stdout
    (execution,) = [
        e.completion.reference.execution for _, e in run.events(kinds={"node_completed"})
    ]
    assert f"    work             {execution}  230 input + 40 output tokens" in shown.stdout
    as_json = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "status",
            run.id,
            "--json",
            "--ledger",
            str(ws.ledger_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ws.root,
    )
    usage = json.loads(as_json.stdout)["usage"]
    each = {"inputTokens": 230, "outputTokens": 40, "costUsd": usage["total"]["costUsd"]}
    assert usage == {
        "total": each,
        "executions": [{"execution": execution, "node": "work", "usage": each}],
    }
    assert round(each["costUsd"], 4) == 0.003


@pytest.mark.parametrize("cli", CLIS)
def test_an_agent_dies_with_its_controller(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"hang": True}])
    run = ws.submit(one_step(cli, timeout_ms=60_000), {"value": 7})
    wait_until(hang_file().exists, timeout=10, message="the agent to start hanging")
    name = hung_name()
    wait_until(
        lambda: len(processes_named(name)) == 3,
        timeout=10,
        message="agent, child and daemon",
    )

    kill(controller_pid(ws.client, run.id))
    wait_until(
        lambda: not processes_named(name),
        timeout=5,
        message="the orphaned agent, its child and its daemon to be killed",
    )


def test_codex_is_sent_one_continue_after_a_terminal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "codex", monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"turn_failed": True}, {"increment": "value"}])
    run = ws.submit(one_step("codex"), {"value": 1})

    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 2}}
    failed, continued = calls(ws)
    assert continued["resumed"] == failed["session"]
    assert continued["head"] == "Continue"


@pytest.mark.parametrize("cli", CLIS)
def test_an_error_the_agent_reports_twice_is_a_crash(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"turn_failed": True}])
    run = ws.submit(one_step(cli), {"value": 1})

    finish(run)
    [completed] = completions(run)
    assert completed.completion.outcome.to_wire()["code"] == "crash"
    assert len(calls(ws)) == (2 if cli == "codex" else 1)


@pytest.mark.parametrize(
    "stderr",
    [
        "OAuth token has expired. Please obtain a new token or refresh your existing token.",
        "Error: session expired; log in again",
    ],
)
def test_an_expired_login_reported_on_stderr_only_is_authentication_required(stderr: str) -> None:
    """The CLI exits non-zero with no JSON result and says why only on stderr."""
    from zeroshot_kernel.harness.agent_cli import CliRun
    from zeroshot_kernel.harness.claude_harness import read_result

    turn = read_result(CliRun(returncode=1, stdout=[], stderr_tail=[stderr]))
    assert turn.failure is not None
    outcome = turn.failure.outcome.to_wire()
    assert (outcome["code"], outcome["reason"]) == ("refusal", "authentication_required")
    assert turn.failure.detail is not None and stderr in turn.failure.detail
    crashed = read_result(CliRun(returncode=1, stdout=[], stderr_tail=["segmentation fault"]))
    assert crashed.failure is not None and crashed.failure.outcome.to_wire()["code"] == "crash"

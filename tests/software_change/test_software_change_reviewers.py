"""Software-change reviewers on the claude and codex harnesses see the change: real runs of
the template with the agent CLI stand-ins, whose recorded prompts must carry the base
revision, the diff of the writer's change and the check receipts recorded so far (the
reviewers' brief, :mod:`zeroshot_kernel.software_change.review.briefs`); claude reviewers may run
read-only git and the declared checks, claude writers may not commit or move branches;
``--harness codex`` runs without ``--model``. And the brief's parts on their own: the
diff's budget, new files, ``.zeroshot/`` left out, the recorded base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness_support import agent_home, install_standin
from software_change_support import (
    REVIEWERS,
    WRITERS,
    agent_bindings,
    git,
    repository,
    start_change,
    verdict,
)
from support import zeroshot

from zeroshot_kernel.harness.claude_harness import (
    GIT_READ_TOOLS,
    WRITER_DENIED_TOOLS,
    command_rules,
)
from zeroshot_kernel.ledger.events import SucceededResult
from zeroshot_kernel.software_change.review.briefs import (
    base_revision,
    change_diff,
    declared_checks,
)

# slow: real software-change runs with agent stand-in processes
pytestmark = pytest.mark.slow

FEATURE = "def answer():\n    return 42\n"
REVIEWER_NODES = set(REVIEWERS)


def standin_script(repo: Path, nodes: dict[str, list[dict[str, Any]]]) -> None:
    """What the stand-ins answer; the script sits in their configuration folder (outside
    the change: the only place besides the worktree their box lets them write)."""
    (agent_home() / "standin.json").write_text(json.dumps(nodes))


def recorded_calls(repo: Path) -> list[dict[str, Any]]:
    path = agent_home() / ".standin" / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def writer_script() -> dict[str, list[dict[str, Any]]]:
    return {
        "worker": [
            {"write": {"src/feature.py": FEATURE, "README.md": "project, changed\n"}, "json": None}
        ],
        "review_repair": [
            {"write": {"src/feature.py": FEATURE + "\n\nANSWER = answer()\n"}, "json": None}
        ],
    }


def test_claude_reviewers_see_the_base_the_diff_and_the_receipts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _ = repository(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    standin_script(
        repo,
        {
            **writer_script(),
            "acceptance": [verdict("accepted")],
            "code": [verdict("rejected", "src/feature.py:2 needs a constant"), verdict("accepted")],
        },
    )
    checks = ("echo feature-checked", "test -f src/feature.py")
    change = start_change(repo, delivery="none", checks=checks, nodes=agent_bindings())
    result = change.wait()
    assert isinstance(result, SucceededResult), result

    made = recorded_calls(repo)
    reviews = [c for c in made if c["node"] in REVIEWER_NODES]
    assert [c["node"] for c in reviews].count("code") == 2
    assert {c["node"] for c in reviews} == {"acceptance", "code"}
    for call in reviews:
        prompt = call["prompt"]
        assert f"Base revision: {base}" in prompt
        assert "+def answer():" in prompt and "src/feature.py" in prompt
        assert "-project\n+project, changed" in prompt  # the tracked file's change too
        assert ".standin" not in prompt  # .zeroshot/ is not part of the change
        assert "## Check receipts recorded so far" in prompt
        assert "`path:line`" in prompt  # asked to cite what it saw
        argv = call["argv"]
        assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
        allowed = argv[argv.index("--allowedTools") + 1]
        assert allowed == ",".join(
            [
                "Read,Grep,Glob",
                *GIT_READ_TOOLS,
                "Bash(echo feature-checked:*)",
                "Bash(test -f src/feature.py:*)",
            ]
        )
        assert "--disallowedTools" not in argv
        assert Path(call["cwd"]).resolve() == change.worktree.resolve()
    first, second = [c["prompt"] for c in reviews if c["node"] == "code"]
    # The first pass sees the checks trusted code ran just before it, on its tree; the
    # second also the first gate's and the repair's change
    assert "- `echo feature-checked` -> exit 0 (receipt " in first
    # with what the command printed, as trusted code captured it
    assert "  output (tail, quoted):\n```\nfeature-checked\n```" in first
    assert "- `test -f src/feature.py` -> exit 0 (receipt " in first
    assert "recorded by review_snapshot, boxed, on the tree under review" in first
    assert "ANSWER = answer()" not in first
    assert "- `echo feature-checked` -> exit 0 (receipt " in second
    assert "- `test -f src/feature.py` -> exit 0 (receipt " in second
    assert "recorded by review_gate, boxed, on an earlier tree (" in second
    assert "+ANSWER = answer()" in second

    writes = [c for c in made if c["node"] in WRITERS]
    assert {c["node"] for c in writes} == {"worker", "review_repair"}
    for call in writes:
        argv = call["argv"]
        assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
        denied = argv[argv.index("--disallowedTools") + 1]
        assert denied == WRITER_DENIED_TOOLS
        assert set(denied.split(",")) == {
            f"Bash(git {c}:*)"
            for c in (
                "commit",
                "push",
                "reset",
                "checkout",
                "branch",
                "tag",
                "remote",
                "config",
                "rebase",
                "merge",
            )
        }
    assert (change.worktree / "src" / "feature.py").read_text().startswith(FEATURE)


def test_a_micro_owner_verification_is_briefed_with_receipts_from_its_first_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _ = repository(tmp_path)
    standin_script(repo, {**writer_script(), "acceptance": [verdict("accepted")]})
    change = start_change(
        repo,
        delivery="none",
        tier="micro",
        checks=("echo feature-checked",),
        nodes={k: v for k, v in agent_bindings().items() if k != "code"},  # micro: owner only
    )
    assert isinstance(change.wait(), SucceededResult)
    (owner,) = [c["prompt"] for c in recorded_calls(repo) if c["node"] in REVIEWER_NODES]
    assert "- `echo feature-checked` -> exit 0 (receipt " in owner
    assert "recorded by review_snapshot, boxed, on the tree under review" in owner
    assert "  output (tail, quoted):\n```\nfeature-checked\n```" in owner


def test_a_secret_a_check_prints_reaches_neither_the_ledger_nor_a_brief(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check never sees the controller's credentials (its box's environment is an
    allow-list), so a check printing one prints nothing secret; the secret is nowhere in
    the briefs or the ledger."""
    secret = "sk-check-printed-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _ = repository(tmp_path)
    standin_script(
        repo,
        {**writer_script(), "acceptance": [verdict("accepted")], "code": [verdict("accepted")]},
    )
    change = start_change(
        repo,
        delivery="none",
        checks=("sh -c 'echo key=$OPENAI_API_KEY'",),
        nodes=agent_bindings(),
    )
    assert isinstance(change.wait(), SucceededResult)
    reviews = [c for c in recorded_calls(repo) if c["node"] in REVIEWER_NODES]
    assert reviews and all("key=\n" in c["prompt"] for c in reviews)
    assert all(secret not in c["prompt"] for c in reviews)
    ledger_files = list((repo / ".zeroshot").glob("ledger.db*"))
    assert ledger_files
    for path in ledger_files:
        assert secret.encode() not in path.read_bytes(), path


def test_a_high_risk_integration_review_sees_the_receipts_of_the_tree_it_reviews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _ = repository(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    standin_script(
        repo,
        {
            **writer_script(),
            "early_correction": [{"json": None}],
            **{name: [verdict("accepted")] for name in REVIEWERS},
        },
    )
    change = start_change(
        repo, delivery="none", tier="high-risk", checks=("true",), nodes=agent_bindings("high-risk")
    )
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    reviews = {c["node"]: c["prompt"] for c in recorded_calls(repo) if c["node"] in REVIEWER_NODES}
    assert set(reviews) == {"seam_review", "acceptance", "code", "integration_review"}
    for prompt in reviews.values():
        assert f"Base revision: {base}" in prompt and "+def answer():" in prompt
    final = reviews["integration_review"]
    assert "- `true` -> exit 0 (receipt " in final
    assert "recorded by review_gate, boxed, on the tree under review" in final


@pytest.mark.parametrize("tier_flag", ["--tier", "--profile"])  # --profile: deprecated
def test_change_run_on_codex_needs_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tier_flag: str
) -> None:
    install_standin(tmp_path, "codex", monkeypatch)
    repo, _ = repository(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    standin_script(repo, {**writer_script(), "acceptance": [verdict("accepted")]})
    done = zeroshot(
        repo,
        "change",
        "run",
        "Add src/feature.py",
        "--harness",
        "codex",
        "--delivery",
        "none",
        tier_flag,
        "micro",
        "--check",
        "true",
        "--ledger",
        str(repo / ".zeroshot" / "ledger.db"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "finished: succeeded" in done.stdout, done.stdout
    assert ": tier micro, delivery none" in done.stdout, done.stdout
    deprecated = "note: `zeroshot change run --profile` is deprecated; use --tier"
    assert (deprecated in done.stderr.splitlines()) == (tier_flag == "--profile"), done.stderr
    made = recorded_calls(repo)
    assert [c["node"] for c in made] == ["worker", "acceptance"]
    for call in made:
        assert "--model" not in call["argv"] and "-m" not in call["argv"]
    worker, review = made
    assert worker["argv"][worker["argv"].index("--sandbox") + 1] == "workspace-write"
    assert review["argv"][review["argv"].index("--sandbox") + 1] == "read-only"
    assert f"Base revision: {base}" in review["prompt"]
    assert "+def answer():" in review["prompt"]
    # micro too: the checks ran on the reviewed tree just before the owner verification
    assert "- `true` -> exit 0 (receipt " in review["prompt"]
    assert "recorded by review_snapshot, boxed, on the tree under review" in review["prompt"]


# --- the brief's parts ---------------------------------------------------------------------


def small_repo(root: Path) -> tuple[Path, str]:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@example.invalid")
    (root / "kept.txt").write_text("one\ntwo\n")
    (root / ".gitignore").write_text("ignored/\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    return root, git(root, "rev-parse", "HEAD")


def test_the_diff_holds_tracked_and_new_files_but_not_the_runs_own(tmp_path: Path) -> None:
    repo, base = small_repo(tmp_path / "r")
    (repo / "kept.txt").write_text("one\nTWO\n")
    (repo / "new.py").write_text("x = 1\n")
    (repo / ".zeroshot").mkdir()
    (repo / ".zeroshot" / "log.txt").write_text("run files\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "out.bin").write_text("build output\n")
    git(repo, "commit", "-q", "-am", "an agent's commit still counts against the base")
    (repo / "kept.txt").write_text("one\nTWO\nthree\n")
    diff = change_diff(repo, base)
    assert diff.files == ["M kept.txt", "A new.py (new file, not yet added)"]
    assert "-two\n+TWO\n+three" in diff.text and "+x = 1" in diff.text
    assert "run files" not in diff.text and "build output" not in diff.text
    assert not diff.cut and diff.omitted_count == 0


def test_a_diff_over_the_budget_says_how_much_was_cut(tmp_path: Path) -> None:
    repo, base = small_repo(tmp_path / "r")
    (repo / "a.txt").write_text("".join(f"line {n}\n" for n in range(200)))
    (repo / "b.txt").write_text("more\n")
    diff = change_diff(repo, base, budget=500)
    assert diff.cut and diff.shown_bytes <= 500 and diff.omitted_count == 2
    assert diff.omitted == ["a.txt (quoted in part)", "b.txt"]
    assert diff.text.endswith("\n") and "+line 0" in diff.text and "+more" not in diff.text


def test_the_base_is_the_recorded_one_and_checks_become_rules() -> None:
    sha = "a" * 40
    assert base_revision({"delivery": {"baseRevision": sha}, "trust": {}}) == sha
    assert base_revision({"trust": {"baseRevision": sha}}) == sha
    assert base_revision({"trust": {"baseRevision": "0" * 40}}) is None
    assert base_revision(None) is None
    run_input = {"review": {"checks": ["pytest -q", "  ", "sh -c 'a (b)'", "ruff check ."]}}
    assert declared_checks(run_input) == ["pytest -q", "sh -c 'a (b)'", "ruff check ."]
    assert command_rules(declared_checks(run_input)) == [
        "Bash(pytest -q:*)",
        "Bash(ruff check .:*)",
    ]

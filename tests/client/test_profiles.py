"""Saved profiles at a target, as a user drives them: ``zeroshot target add``, then
``zeroshot profile save | list | show | delete`` and ``zeroshot run --profile``, each a real
subprocess, on a SQLite file and on a real PostgreSQL server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import Workspace, finish, wire
from support import zeroshot as run_cli

from zeroshot_kernel.client import Client
from zeroshot_kernel.profiles import ProfileNotFound, TemplateSource
from zeroshot_kernel.templates import TemplateOptions, expand_template, single_worker

# slow: a zeroshot process per command, detached controllers, PostgreSQL
pytestmark = pytest.mark.slow


def zeroshot(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(ws.root, *args, **env)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def write_scenario(ws: Workspace) -> None:
    graph, runtime = g.seq_graph()
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(runtime))
    (ws.root / "input.json").write_text(json.dumps({"value": 3}))


def test_save_list_show_run_and_delete_a_profile_at_a_target(
    ws: Workspace, ledger_url: str
) -> None:
    write_scenario(ws)
    ok(zeroshot(ws, "target", "add", "shared", "--ledger", ledger_url))
    saved = ok(
        zeroshot(
            ws,
            "profile",
            "save",
            "inc-double",
            "--graph",
            "graph.json",
            "--runtime",
            "plan.json",
            "--input",
            "input.json",
            "--title",
            "inc then double",
            "--target",
            "shared",
        )
    )
    assert "saved profile inc-double" in saved

    listed = json.loads(ok(zeroshot(ws, "profile", "list", "--json", "--target", "shared")))
    assert [p["name"] for p in listed] == ["inc-double"]
    shown = json.loads(
        ok(zeroshot(ws, "profile", "show", "inc-double", "--json", "--target", "shared"))
    )
    graph, runtime = g.seq_graph()
    expected = Client(workspace=str(ws.root)).validate(graph, input={"value": 3}, runtime=runtime)
    assert expected.admitted is not None
    assert shown["graph"] == graph and shown["runtime"] == expected.admitted.runtime.to_wire()
    assert shown["input"] == {"value": 3} and shown["title"] == "inc then double"
    assert shown["identity"] == expected.admitted.identity
    text = ok(zeroshot(ws, "profile", "show", "inc-double", "--target", "shared"))
    assert "step inc" in text and "step double" in text and expected.admitted.identity in text
    # The workspace's own ledger holds no profile: the profile lives at its target.
    assert "no profiles at" in ok(zeroshot(ws, "profile", "list"))

    ran = zeroshot(ws, "run", "--profile", "inc-double", "--target", "shared")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "succeeded" in ran.stdout
    shared = Client(ledger_url, workspace=str(ws.root))
    (summary,) = shared.runs()
    assert summary.title == "inc then double"
    assert shared.ledger.admitted(summary.run_id)["identity"] == shown["identity"]
    assert wire(shared.run(summary.run_id).wait(5)) == {
        "status": "succeeded",
        "output": {"value": 8},
    }
    again = zeroshot(
        ws,
        "run",
        "--profile",
        "inc-double",
        "--input",
        '{"value": 10}',
        "--detach",
        "--json",
        "--target",
        "shared",
    )
    run_id = json.loads(ok(again))["runId"]
    assert wire(finish(shared.run(run_id))) == {"status": "succeeded", "output": {"value": 22}}

    taken = zeroshot(
        ws,
        "profile",
        "save",
        "inc-double",
        "--graph",
        "graph.json",
        "--runtime",
        "plan.json",
        "--target",
        "shared",
    )
    assert taken.returncode == 2 and "--replace" in taken.stderr
    ok(zeroshot(ws, "profile", "delete", "inc-double", "--target", "shared"))
    assert json.loads(ok(zeroshot(ws, "profile", "list", "--json", "--target", "shared"))) == []
    missing = zeroshot(ws, "run", "--profile", "inc-double", "--target", "shared")
    assert missing.returncode == 2 and "no profile 'inc-double'" in missing.stderr
    # Runs made from a deleted profile keep their own admitted copy.
    assert shared.ledger.admitted(summary.run_id)["identity"] == shown["identity"]
    shared.close()


def test_validate_only_reports_what_the_inline_graph_would(ws: Workspace) -> None:
    write_scenario(ws)
    ok(
        zeroshot(
            ws,
            "profile",
            "save",
            "p",
            "--graph",
            "graph.json",
            "--runtime",
            "plan.json",
            "--input",
            "input.json",
        )
    )
    assert "admissible" in ok(zeroshot(ws, "run", "--profile", "p", "--validate-only"))

    def both(*extra: str) -> tuple[subprocess.CompletedProcess[str], ...]:
        inline = zeroshot(
            ws,
            "run",
            "graph.json",
            "--runtime",
            "plan.json",
            "--input",
            "input.json",
            "--validate-only",
            "--json",
            *extra,
        )
        profiled = zeroshot(ws, "run", "--profile", "p", "--validate-only", "--json", *extra)
        return inline, profiled

    # A bad input given at run time replaces the default in both.
    inline, profiled = both("--input", '{"value": "three"}')
    assert inline.returncode == profiled.returncode == 1
    assert json.loads(profiled.stdout) == json.loads(inline.stdout)
    assert json.loads(inline.stdout)["diagnostics"][0]["code"] == "schema_safety"
    # The workers' module went away since the profile was saved: the same runtime checks.
    (ws.root / "engine_workers.py").unlink()
    inline, profiled = both()
    assert inline.returncode == profiled.returncode == 1
    rejected = json.loads(profiled.stdout)
    assert rejected == json.loads(inline.stdout) and rejected["status"] == "rejected"
    assert {d["code"] for d in rejected["diagnostics"]} == {"invalid_graph_shape"}
    assert Client(workspace=str(ws.root)).runs() == []


def test_a_rejected_submission_is_not_saved(ws: Workspace) -> None:
    write_scenario(ws)
    bad = zeroshot(
        ws,
        "profile",
        "save",
        "p",
        "--graph",
        "graph.json",
        "--runtime",
        "plan.json",
        "--input",
        '{"value": "three"}',
    )
    assert bad.returncode == 1
    assert "schema_safety at input › value" in bad.stdout and "not saved" in bad.stderr
    assert "no profiles at" in ok(zeroshot(ws, "profile", "list"))
    both = zeroshot(ws, "run", "graph.json", "--profile", "p")
    assert both.returncode == 2 and "one of them" in both.stderr


WORKER = "def work(value, context):\n    return None\n"


def test_a_profile_keeps_its_graph_after_its_template_changes(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.root / "sw_workers.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(ws.root))
    expansion = expand_template("single-worker", TemplateOptions(task="tidy up"))
    runtime = {
        "harness": "python",
        "nodes": {"worker": {"kind": "agent", "callable": "sw_workers:work"}},
    }
    client = ws.client
    saved = client.save_profile(
        "tidy",
        expansion.graph,
        runtime=runtime,
        input=expansion.input,
        template=TemplateSource(name="single-worker", options={"task": "tidy up"}),
    )
    before = client.submit_profile("tidy", in_process=True)
    assert wire(finish(before))["status"] == "succeeded"

    monkeypatch.setattr(single_worker, "WORKER_INSTRUCTIONS", "Do it differently now.")
    changed = expand_template("single-worker", TemplateOptions(task="tidy up"))
    now = client.validate(changed.graph, input=changed.input, runtime=runtime)
    assert now.admitted is not None and now.admitted.identity != saved.identity

    after = client.submit_profile("tidy", in_process=True)
    assert wire(finish(after))["status"] == "succeeded"
    stored = client.profiles.get("tidy")
    assert stored.identity == saved.identity and stored.graph == expansion.graph
    assert stored.template == TemplateSource(name="single-worker", options={"task": "tidy up"})
    for run in (before, after):
        admitted = client.ledger.admitted(run.id)
        assert admitted["identity"] == saved.identity
        (worker,) = admitted["graph"]["root"]["children"][:1]
        assert worker["instructions"] == expansion.graph["root"]["children"][0]["instructions"]
    with pytest.raises(ProfileNotFound, match="saved: tidy"):
        client.submit_profile("tydi")


def test_profile_save_expands_a_template(ws: Workspace) -> None:
    saved = ok(
        zeroshot(
            ws,
            "profile",
            "save",
            "branin",
            "--template",
            "auto-research",
            "--task",
            "branin",
            "--iterations",
            "2",
        )
    )
    assert "saved profile branin" in saved
    shown = json.loads(ok(zeroshot(ws, "profile", "show", "branin", "--json")))
    expansion = expand_template("auto-research", TemplateOptions(task="branin", iterations=2))
    assert shown["graph"] == expansion.graph and shown["input"] == expansion.input
    assert shown["template"] == {
        "name": "auto-research",
        "options": {"task": "branin", "iterations": 2, "push": False, "harness": "local"},
    }
    assert "template: auto-research --task branin --iterations 2" in ok(
        zeroshot(ws, "profile", "show", "branin")
    )
    assert "admissible" in ok(zeroshot(ws, "run", "--profile", "branin", "--validate-only"))
    refused = zeroshot(ws, "profile", "save", "c", "--template", "software-change")
    assert refused.returncode == 2 and "zeroshot change run" in refused.stderr
    neither = zeroshot(ws, "profile", "save", "c")
    assert neither.returncode == 2 and "exactly one of --template and --graph" in neither.stderr
    # a research task that cannot be loaded would pass admission and fail every run
    for task in (["--task", "no-such-task"], []):
        missing = zeroshot(ws, "profile", "save", "c", "--template", "auto-research", *task)
        assert missing.returncode == 2, missing.stdout
        assert ("no bundled task is named" if task else "needs --task") in missing.stderr
    assert [p["name"] for p in json.loads(ok(zeroshot(ws, "profile", "list", "--json")))] == [
        "branin"
    ]


def test_workers_in_the_workspace_import_from_any_folder_below_it(ws: Workspace) -> None:
    """Admission imports python workers with the workspace first on the path, as the
    controller runs them, wherever below the workspace the command is given."""
    write_scenario(ws)
    below = ws.root / "notes" / "deeper"
    below.mkdir(parents=True)
    files = ("--runtime", "../../plan.json", "--input", "../../input.json")
    checked = run_cli(below, "validate", "../../graph.json", *files)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    saved = run_cli(below, "profile", "save", "p", "--graph", "../../graph.json", *files)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    ran = run_cli(below, "run", "--profile", "p")
    assert ran.returncode == 0 and "succeeded" in ran.stdout, ran.stdout + ran.stderr


def test_a_bad_profile_name_is_refused_in_one_line_before_anything_is_saved(
    tmp_path: Path,
) -> None:
    """Every name the profile store cannot hold (a path, empty, too long, a slash, not
    ASCII, a trailing newline, huge) is refused in one short line naming the rule, before
    the template is expanded or a ledger created."""
    folder = tmp_path / "bare"
    folder.mkdir()
    for name in ("../x", "", "a" * 65, "a/b", "é", "t\n", "n" * 3000):
        done = run_cli(
            folder, "profile", "save", name, "--template", "auto-research", "--task", "branin"
        )
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        [line] = done.stderr.splitlines()
        assert line.startswith("error: profile name ") and "must match" in line, line
        assert "validation error" not in line and "pydantic" not in line
        assert len(line) < 200
    assert list(folder.iterdir()) == []

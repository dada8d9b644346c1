"""The workspace is the nearest folder holding ``.zeroshot/`` or ``.git``, as git finds its
repository: a repository inside a folder that once held a workspace keeps its own ledger,
and its change commands see the same repository their runs were made in."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support import zeroshot

from zeroshot_kernel.client import Client
from zeroshot_kernel.workspace import find_workspace, ledger_url


def git_repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(folder), "add", "a.txt"], check=True)
    identity = ["-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "-C", str(folder), *identity, "commit", "-qm", "first"], check=True)
    return folder


def test_a_repository_inside_an_older_workspace_is_a_workspace_of_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / ".zeroshot").mkdir()
    repository = git_repository(tmp_path / "project")
    (repository / "src").mkdir()
    assert find_workspace(repository / "src") == repository
    assert Client(workspace=str(repository / "src")).workspace == repository
    assert ledger_url(None, find_workspace(repository)).endswith(
        str(repository / ".zeroshot" / "ledger.db")
    )
    assert find_workspace(tmp_path / "elsewhere") == tmp_path  # no marker below: the outer one


def test_a_workspace_folder_inside_a_repository_is_the_nearer_one(tmp_path: Path) -> None:
    repository = git_repository(tmp_path / "project")
    (repository / "study" / ".zeroshot").mkdir(parents=True)
    assert find_workspace(repository / "study") == repository / "study"
    assert find_workspace(repository) == repository


def test_change_commands_in_a_nested_repository_use_it(tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    repository = git_repository(tmp_path / "project")
    cleaned = zeroshot(repository, "change", "clean", "--dry-run")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "not a git repository" not in cleaned.stderr

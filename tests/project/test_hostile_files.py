"""Hostile files where zeroshot reads recorded research files or writes outputs: forged
manifests (``../`` names, links to a private file, FIFOs, ``/dev/zero``, 100,000-deep
nesting), links planted where restore, exports and batches write, formula cells, two
batches sharing one output folder, and crash-report folders made by someone else.

Each case goes through the real ``zeroshot`` command (or the study browser widget, or the
Python API), and asserts its exit status, its one-line error, time and memory bounds, and,
from the file system, that nothing was written where it must not be: the victim folders
outside the workspace and the targets of planted links are compared byte for byte.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from zeroshot_widgets import StudyBrowser

from zeroshot_kernel.auto_research.candidate_detail import candidate_detail
from zeroshot_kernel.auto_research.candidates import store_candidate
from zeroshot_kernel.auto_research.protocol import ResearchResult
from zeroshot_kernel.auto_research.records import (
    ResearchRecords,
    RoundPass,
    RoundRecord,
    StudyRecord,
)
from zeroshot_kernel.batch import create_batch, read_results
from zeroshot_kernel.client import Client

# slow: child processes bounded in time and memory, real batches, exports and restores
pytestmark = pytest.mark.slow

MEMORY_LIMIT = 1024**3
"""Address space for one refused command: reading ``/dev/zero`` or a huge file whole would
pass it (the issue saw 5.4 GB)."""
DEADLINE_S = 60
QUICK_S = 20.0
"""A refusal reads nothing unbounded and starts no kernel: well within this on a busy
2-core machine (kernel start retries alone took 16 s)."""
SECRET = "PRIVATE-KEY-7f3a"
FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def zeroshot(
    cwd: Path,
    *args: str,
    limited: bool = True,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """The real command, with no traceback whatever happens; ``limited``: in bounded
    memory and the quick time bound (a refusal)."""
    started = time.monotonic()
    ran = subprocess.run(
        [*prefix, sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S if limited else 300,
        preexec_fn=_limited if limited else None,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent), **(env or {})},
        errors="backslashreplace",
    )
    if limited:
        assert time.monotonic() - started < QUICK_S, (args, time.monotonic() - started)
    assert "Traceback" not in ran.stdout + ran.stderr, ran.stderr[-3000:]
    return ran


def refused(ran: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one-line error of exit status 2."""
    assert ran.returncode == 2, (ran.returncode, ran.stdout[-500:], ran.stderr[-500:])
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: "), line
    assert "internal error" not in line and "RecursionError" not in line, line
    for word in words:
        assert word in line, (word, line)
    return line


def tree(folder: Path) -> dict[str, tuple[int, str]]:
    """Every entry below ``folder`` (links not followed): mode and content or target."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            content = "-> " + os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = ""
        found[str(path.relative_to(folder))] = (info.st_mode, content)
    return found


# --- a study with two candidates, and a victim outside the workspace ---------------------


class Setting:
    """A workspace whose study ``s`` holds candidates ``c000`` and ``c001`` (c001 has a
    folder ``sub``) and a decided round, and a victim folder outside it with a 0600
    secret, a folder standing for ``~/.ssh``."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        (self.workspace / ".zeroshot").mkdir(parents=True)
        self.victim = root / "victim"
        (self.victim / "ssh").mkdir(parents=True)
        self.secret = self.victim / "id_rsa"
        self.secret.write_text(SECRET)
        self.secret.chmod(0o600)
        (self.victim / "ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA kept\n")
        self.records = ResearchRecords(self.workspace, "s")
        source = root / "candidate"
        (source / "sub").mkdir(parents=True)
        (source / "params.json").write_text('{"x": 1}\n')
        store_candidate(
            self.records, source, candidate_id="c000", parent_id="", round_number=0, params={}
        )
        (source / "params.json").write_text('{"x": 2}\n')
        (source / "sub" / "a.py").write_text("A = 1\n")
        (source / "sub" / "b.py").write_text("B = 2\n")
        params = {"x": FORMULAS[0], "y": FORMULAS[1], "z": FORMULAS[4], "w": FORMULAS[5]}
        self.manifest = store_candidate(
            self.records,
            source,
            candidate_id="c001",
            parent_id="c000",
            round_number=1,
            params=params,
        )
        self.records.write_round(_decided_round(self.manifest.content_sha256))
        (self.records.root / "study.json").write_text(
            json.dumps(StudyRecord(task="t", run_offsets={}).to_wire())
        )

    def candidate(self, name: str = "c001") -> Path:
        return self.records.candidate_dir(name)

    def forge(self, **changes: object) -> None:
        """Rewrite c001's manifest with ``changes`` (camelCase keys, as on disk)."""
        path = self.candidate() / "manifest.json"
        document = json.loads(path.read_text())
        document.update(changes)
        path.write_text(json.dumps(document))


def _decided_round(sha256: str) -> RoundRecord:
    result = ResearchResult.model_validate(
        {
            "round": 1,
            "parentId": "c000",
            "candidateId": "c001",
            "strategy": "exploration",
            "approach": FORMULAS[3],
            "params": {"x": FORMULAS[2]},
            "measureStatus": "measured",
            "experimentStatus": "ok",
            "metric": -1.5,
            "metricRepeats": [-1.5],
            "incumbentId": "c000",
            "gain": 0.5,
            "noiseFloor": 0.1,
            "evidence": FORMULAS[3],
            "disposition": "adopt",
            "justification": "+SUM(1)",
            "bytesVerified": True,
            "candidateSha256": sha256,
            "reconsidered": False,
            "reconsiderationDue": False,
        }
    )
    return RoundRecord(round=1, passes=[RoundPass(status="done", pass_id="p1")], result=result)


@pytest.fixture
def setting(tmp_path: Path) -> Setting:
    return Setting(tmp_path)


def content_sha(files: dict[str, str]) -> str:
    lines = "".join(f"{digest}  {path}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def restore(setting: Setting, target: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return zeroshot(setting.workspace, "research", "restore", "s", "c001", str(target), *extra)


def assert_untouched(setting: Setting, before: dict[str, tuple[int, str]]) -> None:
    assert tree(setting.victim) == before
    assert setting.secret.read_text() == SECRET


# --- research restore ----------------------------------------------------------------------


def test_a_clean_restore_writes_exactly_the_candidate(setting: Setting, tmp_path: Path) -> None:
    target = tmp_path / "best"
    ran = restore(setting, target)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("restored c001 of study s into") and "3 file(s)" in ran.stdout
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        "params.json",
        "sub",
        "sub/a.py",
        "sub/b.py",
    ]


@pytest.mark.parametrize("where", ["candidateId", "a file's path"])
def test_a_manifest_that_names_bytes_outside_the_study_is_refused(
    setting: Setting, tmp_path: Path, where: str
) -> None:
    """The forged manifest matches the bytes it names (the victim's own candidate folder):
    restore must refuse the name, not copy from outside the study."""
    outside = setting.victim / "candidates" / "x" / "source"
    outside.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    files = {"secret.txt": hashlib.sha256(SECRET.encode()).hexdigest()}
    climb = "../" * 16
    forged: dict[str, object] = {}
    if where == "candidateId":
        forged["candidateId"] = climb + str(outside.parent).lstrip("/")
        victim_manifest = json.loads((setting.candidate() / "manifest.json").read_text())
        victim_manifest.update(forged, files=files, contentSha256=content_sha(files))
        (outside.parent / "manifest.json").write_text(json.dumps(victim_manifest))
    else:
        files = {climb + str(outside / "secret.txt").lstrip("/"): files["secret.txt"]}
    before = tree(setting.victim)
    setting.forge(**forged, files=files, contentSha256=content_sha(files))
    target = tmp_path / "restored"

    line = refused(restore(setting, target), "nothing was written")
    assert SECRET not in line
    assert "manifest names another candidate" in line or "not a relative path inside" in line
    assert not target.exists()
    assert_untouched(setting, before)
    detail = candidate_detail(setting.workspace, "s", "c001")
    assert not detail.verified and detail.files == () and SECRET not in detail.diff


@pytest.mark.parametrize("link", ["a source file", "the source folder", "the candidate folder"])
def test_a_link_among_the_recorded_files_is_never_followed(
    setting: Setting, tmp_path: Path, link: str
) -> None:
    """Even with a manifest forged to hold the linked secret's hash."""
    files = {"params.json": hashlib.sha256(SECRET.encode()).hexdigest()}
    setting.forge(files=files, contentSha256=content_sha(files))
    source = setting.candidate() / "source"
    if link == "a source file":
        for path in list(source.rglob("*"))[::-1]:
            path.unlink() if path.is_file() else path.rmdir()
        (source / "params.json").symlink_to(setting.secret)
    elif link == "the source folder":
        linked = setting.victim / "folder"
        linked.mkdir()
        (linked / "params.json").write_text(SECRET)
        os.rename(source, tmp_path / "moved-source")
        source.symlink_to(linked)
    else:
        linked = setting.victim / "candidate"
        os.rename(setting.candidate(), linked)
        setting.candidate().symlink_to(linked)
    before = tree(setting.victim)
    target = tmp_path / "restored"

    line = refused(restore(setting, target))
    assert "symbolic link" in line or "not a regular file" in line, line
    assert SECRET not in line and not target.exists()
    assert_untouched(setting, before)
    detail_problem = None
    try:
        detail = candidate_detail(setting.workspace, "s", "c001")
        assert not detail.verified and detail.files == ()
    except ValueError as problem:  # the manifest itself is behind the link
        detail_problem = str(problem)
    assert detail_problem is None or "symbolic link" in detail_problem


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(40 * 1024 * 1024)  # 40 MB of NUL bytes, past the record limit


def _deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _folder(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize(
    "plant",
    [_fifo, _dev_zero, _huge, _deep, _folder],
    ids=["fifo", "dev-zero", "40 MB", "nested 100,000 deep", "folder"],
)
def test_a_manifest_that_cannot_be_a_record_is_refused_in_bounded_time_and_memory(
    setting: Setting, tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    manifest = setting.candidate() / "manifest.json"
    manifest.unlink()
    plant(manifest)
    target = tmp_path / "restored"
    refused(restore(setting, target), "manifest of c001", "nothing was written")
    assert not target.exists()
    # the readers of the same records: the study list and the candidate export
    listed = zeroshot(setting.workspace, "research", "studies")
    assert listed.returncode in (0, 2) and len(listed.stderr.splitlines()) <= 1
    exported = zeroshot(setting.workspace, "research", "export", "s", "--candidates", "--csv", "-")
    if exported.returncode != 0:
        refused(exported)


def test_records_behind_links_or_fifos_do_not_hang_the_study_views(setting: Setting) -> None:
    rounds = setting.records.round_path(1)
    rounds.unlink()
    os.mkfifo(rounds)
    study = setting.records.root / "study.json"
    study.unlink()
    study.symlink_to(setting.secret)
    for args in (("research", "studies"), ("research", "export", "s", "--csv", "-")):
        ran = zeroshot(setting.workspace, *args)
        assert SECRET not in ran.stdout + ran.stderr
        assert ran.returncode in (0, 2) and len(ran.stderr.splitlines()) <= 1, ran.stderr


def test_force_over_a_linked_subfolder_replaces_the_link_and_says_so(
    setting: Setting, tmp_path: Path
) -> None:
    target = tmp_path / "restored"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    (target / "sub").symlink_to(setting.victim / "ssh")
    before = tree(setting.victim)

    ran = restore(setting, target, "--force")
    assert ran.returncode == 0, ran.stderr
    assert "3 file(s)" in ran.stdout and "replaced the symbolic link(s) sub" in ran.stdout
    assert_untouched(setting, before)
    assert not (target / "sub").is_symlink()
    assert (target / "sub" / "a.py").read_text() == "A = 1\n"
    assert (target / "notes.txt").read_text() == "mine\n"  # --force keeps other files
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt", "params.json", "sub"]


def test_force_refuses_a_folder_in_the_way_before_writing_anything(
    setting: Setting, tmp_path: Path
) -> None:
    target = tmp_path / "restored"
    (target / "sub" / "a.py").mkdir(parents=True)  # a folder where the candidate has a file
    (target / "params.json").write_text("old\n")
    before = tree(target)
    line = refused(restore(setting, target, "--force"), "a.py", "nothing was written")
    assert "in the way" in line
    assert tree(target) == before


# --- exports ---------------------------------------------------------------------------------


def read_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_exported_csv_cells_never_start_a_formula(setting: Setting, tmp_path: Path) -> None:
    for kind in ("candidates", "rounds"):
        extra = ["--candidates"] if kind == "candidates" else []
        target = tmp_path / f"{kind}.csv"  # a file: standard output would translate \r
        ran = zeroshot(setting.workspace, "research", "export", "s", *extra, "--csv", str(target))
        assert ran.returncode == 0, ran.stderr
        cells = [cell for row in read_csv(target.read_bytes().decode()) for cell in row]
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))], cells
        assert not [c for c in cells if c.startswith("-") and not _number(c)], cells
        if kind == "candidates":
            assert {"'" + f for f in (FORMULAS[0], FORMULAS[1], *FORMULAS[4:])} <= set(cells)
        else:
            assert "-1.5" in cells  # numbers stay numbers
            assert {"'" + FORMULAS[2], "'" + FORMULAS[3]} <= set(cells)

    browser = StudyBrowser(Client(workspace=str(setting.workspace)))
    try:
        [path] = browser.export_csv(["s"])
        cells = [cell for row in read_csv(path.read_bytes().decode()) for cell in row]
        assert "'" + FORMULAS[3] in cells and FORMULAS[3] not in cells
    finally:
        browser.close()


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling link"])
def test_exports_never_write_through_a_link(
    setting: Setting, tmp_path: Path, dangling: bool
) -> None:
    pointed = setting.victim / ("created-by-export" if dangling else "ssh/authorized_keys")
    before = tree(setting.victim)
    for number, args in enumerate((("--csv",), ("--json", "--output"), ("--candidates", "--csv"))):
        link = tmp_path / f"export-{number}"
        link.symlink_to(pointed)
        line = refused(
            zeroshot(setting.workspace, "research", "export", "s", *args, str(link)),
            "symbolic link",
        )
        assert "nothing was written" in line
        assert link.is_symlink() and os.readlink(link) == str(pointed)
    assert_untouched(setting, before)

    exports = setting.workspace / "exports"
    exports.mkdir()
    (exports / "s-rounds.csv").symlink_to(pointed)
    browser = StudyBrowser(Client(workspace=str(setting.workspace)))
    try:
        assert browser.export_csv(["s"]) == []
        assert "not exported: s:" in browser.exported.value
        assert "symbolic link" in browser.exported.value
    finally:
        browser.close()
    assert_untouched(setting, before)
    assert sorted(p.name for p in exports.iterdir()) == ["s-rounds.csv"]  # no temporary file


# --- batches ---------------------------------------------------------------------------------


def light_notebook(folder: Path) -> Path:
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 0"),
            nbformat.v4.new_code_cell("from zeroshot_kernel.batch import record\nrecord(x=x)"),
        ]
    )
    notebook.cells[0].metadata["tags"] = ["parameters"]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "light.ipynb"
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def batch_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    (workspace / ".zeroshot").mkdir(parents=True)
    monkeypatch.chdir(workspace)
    return workspace


def batch(workspace: Path, *args: str, limited: bool = True) -> subprocess.CompletedProcess[str]:
    return zeroshot(workspace, "batch", *args, "--quiet", limited=limited)


def no_batch_recorded(workspace: Path) -> bool:
    listed = zeroshot(workspace, "batch", "list")
    return listed.returncode == 0 and listed.stdout == ""


def test_two_batches_in_the_default_folder_keep_their_own_notebooks(
    batch_workspace: Path,
) -> None:
    notebook = light_notebook(batch_workspace)
    ids = []
    for x in (1, 2):
        ran = batch(batch_workspace, str(notebook), "-p", "x", str(x), limited=False)
        assert ran.returncode == 0, ran.stderr
        ids.append(ran.stdout.split(":", 1)[0])
        assert f"executed notebooks go to {batch_workspace / 'batch-output' / ids[-1]}" in (
            ran.stderr
        )
    assert sorted(p.name for p in (batch_workspace / "batch-output").iterdir()) == sorted(ids)
    for batch_id, x in zip(ids, (1, 2), strict=True):
        shown = json.loads(zeroshot(batch_workspace, "batch", "status", batch_id, "--json").stdout)
        [item] = shown["items"]
        assert Path(item["output"]).parent == batch_workspace / "batch-output" / batch_id
        assert item["results"] == read_results(item["output"]) == {"x": x}


def test_a_link_planted_where_an_item_writes_is_not_written_through(
    batch_workspace: Path, tmp_path: Path
) -> None:
    notebook = light_notebook(batch_workspace)
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    created = create_batch(notebook, [{"x": 3}], output_dir="out")
    folder = Path(created.output_dir)
    assert folder.parent == batch_workspace / "out" and folder.name == created.batch_id
    planted = folder / "light-000.ipynb"
    planted.symlink_to(victim)

    ran = zeroshot(batch_workspace, "batch", "resume", created.batch_id, "--quiet", limited=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert victim.read_text() == "kept\n"
    assert not planted.is_symlink() and read_results(planted) == {"x": 3}

    # the batch's folder itself replaced by a link: refused, nothing run
    os.rename(folder, tmp_path / "moved")
    folder.symlink_to(tmp_path / "moved")
    before = tree(tmp_path / "moved")
    line = refused(zeroshot(batch_workspace, "batch", "resume", created.batch_id))
    assert "cannot be used" in line and "symbolic link" in line
    assert tree(tmp_path / "moved") == before


def test_an_output_dir_link_leaving_the_workspace_is_refused(
    batch_workspace: Path, tmp_path: Path
) -> None:
    notebook = light_notebook(batch_workspace)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (batch_workspace / "out").symlink_to(elsewhere)
    line = refused(batch(batch_workspace, str(notebook), "--output-dir", "out/sub"))
    assert "outside the workspace" in line
    assert list(elsewhere.iterdir()) == [] and no_batch_recorded(batch_workspace)


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "fifo.ipynb", "folder.ipynb", "missing.ipynb", "deep.ipynb"]
)
def test_a_file_that_is_not_a_notebook_is_refused_at_once(batch_workspace: Path, name: str) -> None:
    os.mkfifo(batch_workspace / "fifo.ipynb")
    (batch_workspace / "folder.ipynb").mkdir()
    (batch_workspace / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    started = time.monotonic()
    line = refused(batch(batch_workspace, name, "-p", "x", "1"))
    assert time.monotonic() - started < 10
    assert "notebook" in line and "root:" not in line  # no content of the file is shown
    assert not (batch_workspace / "batch-output").exists()
    assert no_batch_recorded(batch_workspace)


def test_an_output_dir_that_is_a_file_is_one_line(batch_workspace: Path) -> None:
    notebook = light_notebook(batch_workspace)
    (batch_workspace / "taken").write_text("a file\n")
    for output in ("taken", "taken/below"):
        line = refused(batch(batch_workspace, str(notebook), "--output-dir", output))
        assert "is not a folder" in line
    assert (batch_workspace / "taken").read_text() == "a file\n"
    assert no_batch_recorded(batch_workspace)


WITHOUT_OVERRIDE = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")
"""The tests run as root, for whom no folder is read-only: this drops the capability."""


def test_an_unwritable_output_folder_is_named_as_such(batch_workspace: Path) -> None:
    notebook = light_notebook(batch_workspace)
    locked = batch_workspace / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    ran = zeroshot(
        batch_workspace,
        "batch",
        str(notebook),
        "--output-dir",
        "locked",
        "--quiet",
        prefix=WITHOUT_OVERRIDE,
    )
    line = refused(ran, "cannot write into the output directory", "Permission denied")
    assert "kernel" not in line and list(locked.iterdir()) == []

    # a batch whose folder became unwritable after it was recorded: its items say so,
    # at once (a file problem is not retried as a kernel start)
    created = create_batch(notebook, [{"x": 1}], output_dir="out")
    Path(created.output_dir).chmod(0o555)
    started = time.monotonic()
    resumed = zeroshot(
        batch_workspace,
        "batch",
        "resume",
        created.batch_id,
        "--quiet",
        limited=False,
        prefix=WITHOUT_OVERRIDE,
    )
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert time.monotonic() - started < QUICK_S
    assert "error: cannot use the file" in resumed.stdout
    assert "Permission denied" in resumed.stdout and "kernel did not start" not in resumed.stdout


# --- crash reports ---------------------------------------------------------------------------

CRASHING_COMMAND = """
import sys
from zeroshot_kernel.cli import app, main

@app.command("explode")
def explode() -> None:
    raise RuntimeError("an unforeseen bug")

sys.argv = ["zeroshot", "explode"]
main()
"""


def crash(cwd: Path, temporary: Path) -> Path:
    """An internal error in the real CLI: its one line, and the report it names."""
    ran = subprocess.run(
        [sys.executable, "-c", CRASHING_COMMAND],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(temporary)},
    )
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: internal error: RuntimeError: an unforeseen bug; ")
    report = Path(line.rsplit("the full report is in ", 1)[1])
    assert "an unforeseen bug" in report.read_text()
    folder = report.parent.lstat()
    assert report.parent.parent == temporary and not stat.S_ISLNK(folder.st_mode)
    assert folder.st_uid == os.getuid() and stat.S_IMODE(folder.st_mode) == 0o700
    assert report.lstat().st_uid == os.getuid() and stat.S_IMODE(report.stat().st_mode) == 0o600
    return report


def _someone_elses_open_folder(path: Path, victim: Path) -> None:
    path.mkdir()
    path.chmod(0o777)
    os.chown(path, 4242, 4242)


def _link_into_ssh(path: Path, victim: Path) -> None:
    path.symlink_to(victim)


def _own_but_open_to_all(path: Path, victim: Path) -> None:
    path.mkdir()
    path.chmod(0o777)


def _a_file(path: Path, victim: Path) -> None:
    path.write_text("not a folder\n")


@pytest.mark.parametrize(
    "plant",
    [_someone_elses_open_folder, _link_into_ssh, _own_but_open_to_all, _a_file],
    ids=["another user's 0777 folder", "a link into ~/.ssh", "a 0777 folder", "a file"],
)
def test_crash_reports_go_only_to_a_folder_of_ones_own(
    tmp_path: Path, plant: Callable[[Path, Path], None]
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    temporary.chmod(0o1777)
    ssh = tmp_path / "victim" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "authorized_keys").write_text("ssh-ed25519 AAAA kept\n")
    ssh_before = tree(ssh)
    taken = temporary / f"zeroshot-crash-reports-{os.getuid()}"
    plant(taken, ssh)
    taken_before = tree(taken) if taken.is_dir() and not taken.is_symlink() else None

    report = crash(tmp_path, temporary)  # reports still work: not turned off by the plant
    assert report.parent != taken
    assert tree(ssh) == ssh_before
    if taken_before is not None:
        assert tree(taken) == taken_before


def test_the_crash_folder_is_made_per_user_and_private(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    first = crash(tmp_path, temporary)
    assert first.parent == temporary / f"zeroshot-crash-reports-{os.getuid()}"
    assert crash(tmp_path, temporary).parent == first.parent

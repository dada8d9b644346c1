"""Batches of parameterised notebooks: real kernels (papermill), a real local pool and a real
dask LocalCluster, every item in a real SQLite ledger; the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest
from support import alive, wait_until

from zeroshot_kernel.batch import (
    BatchStore,
    ParameterError,
    batch_status,
    open_store,
    parameter_sets,
    read_results,
    resume_batch,
    run_batch,
)
from zeroshot_kernel.batch.notebooks import NotANotebook
from zeroshot_kernel.batch.storage import BatchOptions

# slow: real kernels (papermill), a local pool and a dask LocalCluster
pytestmark = pytest.mark.slow

NOTEBOOK_SOURCE = """
import os, pathlib, time
from zeroshot_kernel.batch import record
pathlib.Path(marks, f".{x}.pid.tmp").write_text(str(os.getpid()))
os.replace(pathlib.Path(marks, f".{x}.pid.tmp"), pathlib.Path(marks, f"{x}.pid"))
if hang and not pathlib.Path(marks, f"{x}.hung").exists():
    pathlib.Path(marks, f"{x}.hung").write_text("once")
    time.sleep(hang)
assert x >= 0, "negative x"
record(metric=(1 - x) ** 2, x=x)
"""


def write_notebook(
    folder: Path,
    parameters: str = 'x = 0\nhang = 0\nmarks = "."',
    source: str = NOTEBOOK_SOURCE.strip(),
    name: str = "metric.ipynb",
) -> Path:
    """By default, a notebook that records ``metric`` for ``x``; with ``hang`` it sleeps
    on its first execution only (so that a resumed item finishes); ``x < 0`` fails a cell."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(parameters), nbformat.v4.new_code_cell(source)]
    )
    notebook.cells[0].metadata["tags"] = ["parameters"]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / name
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".zeroshot").mkdir()
    (tmp_path / "marks").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sets(*xs: int, **extra: object) -> list[dict[str, object]]:
    return [{"x": x, "marks": "marks", **extra} for x in xs]


def assert_carries_parameters_and_metric(output: str, x: int) -> None:
    executed = nbformat.read(output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and f"x = {x}" in injected[0].source
    assert read_results(output) == {"metric": (1 - x) ** 2, "x": x}


# --- parameter sources ---------------------------------------------------------------------


def test_pairs_grids_and_csv_rows_give_one_set_per_notebook(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("task: [rosenbrock, branin]\nseed: [1, 2]\niterations: 3\n")
    assert parameter_sets(grid=grid, pairs=[("iterations", "5")]) == [
        {"task": "rosenbrock", "seed": 1, "iterations": 5},
        {"task": "rosenbrock", "seed": 2, "iterations": 5},
        {"task": "branin", "seed": 1, "iterations": 5},
        {"task": "branin", "seed": 2, "iterations": 5},
    ]
    rows = tmp_path / "rows.csv"
    rows.write_text("task,iterations,push\nbranin,2,true\nsvc-digits,10,no\n")
    assert parameter_sets(rows=rows) == [
        {"task": "branin", "iterations": 2, "push": True},
        {"task": "svc-digits", "iterations": 10, "push": False},
    ]
    assert parameter_sets(pairs=[("rate", "0.5"), ("name", "a b")]) == [
        {"rate": 0.5, "name": "a b"}
    ]
    exported = tmp_path / "exported.csv"  # a spreadsheet's "CSV UTF-8": a byte-order mark
    exported.write_bytes(b"\xef\xbb\xbftask,iterations\r\nbranin,2\r\n")
    assert parameter_sets(rows=exported) == [{"task": "branin", "iterations": 2}]


def test_an_empty_value_is_the_empty_string_and_only_null_is_none(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b,c,d\n,null,~,# x\n")
    given = [("a", ""), ("b", "null"), ("c", "~"), ("d", "# x")]
    assert parameter_sets(pairs=given) == parameter_sets(rows=rows)
    assert parameter_sets(rows=rows) == [{"a": "", "b": None, "c": None, "d": "# x"}]


def test_a_value_nested_past_the_yaml_parsers_reach_stays_text(tmp_path: Path) -> None:
    deep = "[" * 100_000
    rows = tmp_path / "deep.csv"
    rows.write_text(f"x\n{deep}\n")
    assert parameter_sets(pairs=[("x", deep)]) == parameter_sets(rows=rows) == [{"x": deep}]


@pytest.mark.parametrize(
    ("sources", "words"),
    [
        pytest.param({"grid": "empty.yaml"}, "empty list", id="grid-with-an-empty-list"),
        pytest.param({"grid": "list.yaml"}, "mapping", id="grid-not-a-mapping"),
        pytest.param({"rows": "ragged.csv"}, "more or fewer cells", id="ragged-rows"),
        pytest.param({"grid": "list.yaml", "rows": "ragged.csv"}, "not both", id="grid-and-rows"),
        pytest.param({"grid": "missing.yaml"}, "No such file", id="missing-file"),
        pytest.param(
            {"pairs": [("2x", "1")]}, "not a plain Python variable name", id="bad-parameter-name"
        ),
    ],
)
def test_bad_parameter_sources_say_what_is_wrong(
    tmp_path: Path, sources: dict[str, Any], words: str
) -> None:
    (tmp_path / "empty.yaml").write_text("task: []\n")
    (tmp_path / "list.yaml").write_text("[1, 2]\n")
    (tmp_path / "ragged.csv").write_text("a,b\n1,2,3\n")
    given = {
        name: tmp_path / value if isinstance(value, str) else value
        for name, value in sources.items()
    }
    with pytest.raises(ParameterError, match=words):
        parameter_sets(**given)


# --- execution -----------------------------------------------------------------------------


def test_four_notebooks_on_the_local_pool_each_recorded_in_the_ledger(workspace: Path) -> None:
    notebook = write_notebook(workspace)
    status = run_batch(notebook, sets(*range(4)), output_dir="out", workers=2, progress=False)
    assert [item.status for item in status.items] == ["succeeded"] * 4
    for item in status.items:
        assert item.output is not None and item.duration_s is not None and item.attempts == 1
        assert_carries_parameters_and_metric(item.output, item.index)
        assert item.results == read_results(item.output)
    assert batch_status(status.batch_id) == status  # read back from the ledger alone


def test_four_notebooks_on_a_dask_cluster(workspace: Path) -> None:
    from distributed import LocalCluster

    notebook = write_notebook(workspace)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        status = run_batch(
            notebook,
            sets(*range(4)),
            output_dir="out",
            dask=cluster.scheduler_address,
            progress=False,
        )
    assert [item.status for item in status.items] == ["succeeded"] * 4
    for item in status.items:
        assert item.output is not None
        assert_carries_parameters_and_metric(item.output, item.index)


def test_a_killed_kernel_fails_only_its_item_and_resume_reruns_only_that(
    workspace: Path,
) -> None:
    notebook = write_notebook(workspace)
    pid_file = workspace / "marks" / "1.pid"

    def kill_the_hanging_kernel() -> None:
        wait_until(lambda: (workspace / "marks" / "1.hung").exists(), 60, "item 1 to hang")
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

    killer = threading.Thread(target=kill_the_hanging_kernel)
    killer.start()
    parameters = [{**item, "hang": 60 if item["x"] == 1 else 0} for item in sets(0, 1, 2, 3)]
    status = run_batch(notebook, parameters, output_dir="out", workers=2, progress=False)
    killer.join()
    assert [item.status for item in status.items] == [
        "succeeded",
        "failed",
        "succeeded",
        "succeeded",
    ]
    assert status.items[1].error == "the kernel died while a cell ran (killed, or out of memory)"

    resumed = resume_batch(status.batch_id, progress=False)
    assert [item.status for item in resumed.items] == ["succeeded"] * 4
    assert [item.attempts for item in resumed.items] == [1, 2, 1, 1]
    assert resumed.items[1].output is not None
    assert_carries_parameters_and_metric(resumed.items[1].output, 1)


def test_a_hung_cell_fails_at_the_timeout_and_a_failing_cell_says_why(workspace: Path) -> None:
    notebook = write_notebook(workspace)
    (hung,) = run_batch(
        notebook, sets(2, hang=120), output_dir="hung", timeout_s=20, progress=False
    ).items
    assert hung.status == "failed"
    assert hung.error == (
        "the notebook ran past its 20 s timeout; its process and kernel were stopped"
    )
    assert hung.duration_s is not None and hung.duration_s < 60
    kernel = int((workspace / "marks" / "2.pid").read_text())
    wait_until(lambda: not alive(kernel), 30, "the hung kernel to exit with its process")
    # its own batch with room to spare: on a busy machine a kernel's start alone can take
    # most of 20 s, and this notebook must fail by its assertion, not by the timeout
    (negative,) = run_batch(
        notebook, sets(-1), output_dir="negative", timeout_s=300, progress=False
    ).items
    assert negative.status == "failed"
    assert negative.error is not None
    assert "raised AssertionError: negative x" in negative.error


def test_a_failed_magic_fails_its_item_with_the_commands_own_error(workspace: Path) -> None:
    # IPython expands {task} in a magic's line: the research command gets the parameter
    source = "%load_ext zeroshot_kernel\n%zeroshot research {task}\nprint('went on')"
    notebook = write_notebook(workspace, 'task = "branin"', source)
    (item,) = run_batch(
        notebook, [{"task": "no-such-task"}], output_dir="magic", timeout_s=300, progress=False
    ).items
    assert item.status == "failed"
    assert item.error is not None and item.error.startswith("cell 3 failed: research task ")
    assert "no bundled task is named 'no-such-task'" in item.error
    assert item.output is not None
    cells = nbformat.read(item.output, 4).cells
    printed = [o.get("text", "") for c in cells for o in c.get("outputs", [])]
    assert printed and not any("went on" in text for text in printed)  # the cell stopped there


def test_the_timeout_bounds_the_whole_notebook_not_only_each_cell(workspace: Path) -> None:
    cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(1.5)") for _ in range(6)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, workspace / "slow.ipynb")
    status = run_batch(
        workspace / "slow.ipynb", [{}], output_dir="out", timeout_s=4, progress=False
    )
    (item,) = status.items
    assert item.status == "failed"
    assert item.error == (
        "the notebook ran past its 4 s timeout; its process and kernel were stopped"
    )
    assert item.duration_s is not None and 4 <= item.duration_s < 30


def test_a_kernel_that_fails_to_start_is_retried(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernelspec whose launcher fails on its first start (as racing starts do)."""
    launcher = workspace / "flaky-kernel"
    launcher.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        if [ ! -e "{workspace}/started-once" ]; then
            touch "{workspace}/started-once"; exit 1
        fi
        exec {sys.executable} -m ipykernel_launcher "$@"
    """)
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
    spec = workspace / "jupyter" / "kernels" / "flaky"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(launcher), "-f", "{connection_file}"],
                "display_name": "flaky",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(workspace / "jupyter"))
    notebook = write_notebook(workspace)
    status = run_batch(notebook, sets(3), output_dir="out", kernel_name="flaky", progress=False)
    assert (workspace / "started-once").exists()
    (item,) = status.items
    assert item.status == "succeeded", item.error
    assert item.results == {"metric": 4, "x": 3}

    missing = run_batch(
        notebook, sets(3), output_dir="out", kernel_name="no-such-kernel", progress=False
    )
    assert missing.items[0].error is not None
    assert missing.items[0].error.startswith("the kernel did not start: NoSuchKernel")


def test_kernels_listen_on_private_unix_sockets_that_go_with_the_batch(workspace: Path) -> None:
    """Not TCP ports on localhost (any local process can connect to those, and ipykernel
    warns about them at every start): sockets in a folder of mode 0700, removed after."""
    source = (
        "import json, os, stat\n"
        "from ipykernel.connect import get_connection_info\n"
        "from zeroshot_kernel.batch import record\n"
        "info = json.loads(get_connection_info())\n"
        "folder = os.path.dirname(info['ip'])\n"
        "record(metric=0, transport=info['transport'], folder=folder,\n"
        "       mode=stat.S_IMODE(os.stat(folder).st_mode))"
    )
    notebook = write_notebook(workspace, "x = 0", source, name="where.ipynb")
    status = run_batch(notebook, [{"x": 1}], output_dir="out", progress=False)
    (item,) = status.items
    assert item.status == "succeeded", item.error
    assert item.results is not None
    assert (item.results["transport"], item.results["mode"]) == ("ipc", 0o700)
    assert not Path(item.results["folder"]).exists()


# --- the command line ----------------------------------------------------------------------


def zeroshot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "batch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cli_runs_shows_and_resumes_a_batch(workspace: Path) -> None:
    notebook = write_notebook(workspace)
    (workspace / "grid.yaml").write_text("x: [-1, 2]\n")
    ran = zeroshot(
        workspace,
        str(notebook),
        "--grid",
        "grid.yaml",
        "-p",
        "marks",
        "marks",
        "--output-dir",
        "out",
        "--quiet",
    )
    assert ran.returncode == 1, ran.stderr  # one item failed
    batch_id = ran.stdout.split(":", 1)[0]
    assert ran.stdout.startswith(f"{batch_id}: 1 succeeded, 1 failed of 2; notebook ")
    assert "error: cell 3 raised AssertionError: negative x" in ran.stdout
    assert 'recorded {"metric": 1, "x": 2}' in ran.stdout

    shown = json.loads(zeroshot(workspace, "status", batch_id, "--json").stdout)
    assert [item["status"] for item in shown["items"]] == ["failed", "succeeded"]
    assert shown["items"][0]["parameters"] == {"marks": "marks", "x": -1}
    listed = zeroshot(workspace, "list").stdout
    assert listed.startswith(f"{batch_id}  1 succeeded, 1 failed of 2  ")
    (summary,) = json.loads(zeroshot(workspace, "list", "--json").stdout)
    assert summary["batchId"] == batch_id and summary["items"] == 2
    assert summary["counts"] == {"succeeded": 1, "failed": 1, "running": 0, "pending": 0}
    assert summary["notebook"] == shown["notebook"]

    resumed = zeroshot(workspace, "resume", batch_id, "--quiet")
    assert resumed.returncode == 1  # x = -1 still fails: resume re-ran only it
    with BatchStore(f"sqlite:///{workspace / '.zeroshot' / 'ledger.db'}") as store:
        again = store.status(batch_id)
    assert [item.attempts for item in again.items] == [2, 1]

    missing = zeroshot(workspace, "status", "batch-nope")
    assert missing.returncode == 2 and "error: no batch batch-nope in ledger" in missing.stderr
    bad = zeroshot(workspace, str(notebook), "--grid", "grid.yaml", "--csv", "x.csv")
    assert bad.returncode == 2 and "not both" in bad.stderr


def test_progress_is_a_bar_that_ends_at_the_item_count(workspace: Path) -> None:
    notebook = write_notebook(workspace)
    ran = zeroshot(workspace, str(notebook), "-p", "marks", "marks", "--output-dir", "out")
    assert ran.returncode == 0, ran.stderr
    assert "1/1" in ran.stderr and "notebook" in ran.stderr  # tqdm's bar, on stderr


RESEARCH_NOTEBOOK = Path(__file__).resolve().parents[2] / "research_templates/research.ipynb"


def refused_line(ran: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal (exit 2), nothing printed on stdout."""
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stdout == ""
    [line] = ran.stderr.splitlines()
    return line


def test_a_name_the_parameters_cell_does_not_assign_is_refused_before_anything_runs(
    workspace: Path,
) -> None:
    notebook = write_notebook(workspace)
    line = refused_line(
        zeroshot(workspace, str(notebook), "-p", "z", "5", "-p", "marks", "marks", "--quiet")
    )
    assert line == (
        "error: parameter z is not assigned in the parameters cell of metric.ipynb; "
        "its parameters: x, hang, marks"
    )
    typo = refused_line(
        zeroshot(workspace, str(RESEARCH_NOTEBOOK), "-p", "iteration", "1", "-p", "tsk", "b")
    )
    assert typo == (
        "error: parameters iteration, tsk are not assigned in the parameters cell of "
        "research.ipynb; its parameters: task, iterations, study, workspace, ledger"
    )
    (workspace / "grid.yaml").write_text("x: [1, 2]\nseed: [1]\n")
    with pytest.raises(ParameterError, match="parameter seed is not assigned"):
        run_batch(notebook, parameter_sets(grid="grid.yaml"), output_dir="out", progress=False)
    assert not (workspace / "out").exists() and not (workspace / "batch-output").exists()
    assert zeroshot(workspace, "list").stdout == ""


def test_a_name_papermill_cannot_read_in_the_cell_is_refused_with_its_reason(
    workspace: Path,
) -> None:
    notebook = write_notebook(workspace, "options = dict(depth=2)\nx = 0", name="eq.ipynb")
    with pytest.raises(ParameterError) as refused:
        run_batch(notebook, [{"options": {"depth": 3}}], output_dir="out", progress=False)
    assert str(refused.value) == (
        "parameter options is not assigned in the parameters cell of eq.ipynb; its "
        "parameters: x (papermill could not read: Unable to parse line 1 "
        "'options = dict(depth=2)'.)"
    )


def test_without_a_parameters_cell_any_name_is_injected_and_resume_runs_as_recorded(
    workspace: Path,
) -> None:
    source = "from zeroshot_kernel.batch import record\nrecord(z=z)"
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    bare.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python",
        "language": "python",
    }
    nbformat.write(bare, workspace / "bare.ipynb")
    (item,) = run_batch(
        workspace / "bare.ipynb", [{"z": 5}], output_dir="out", progress=False
    ).items
    assert item.status == "succeeded", item.error
    assert item.results == {"z": 5}

    # a batch recorded before names were checked against the cell still resumes
    notebook = write_notebook(workspace)
    with open_store() as store:
        batch_id = store.create(
            str(notebook), str(workspace / "old"), sets(2, legacy=1), BatchOptions()
        )
    (workspace / "old").mkdir()
    resumed = zeroshot(workspace, "resume", batch_id, "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert batch_status(batch_id).items[0].results == {"metric": 1, "x": 2}


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(["-p", "x", "-q"], id="a-flag"),
        pytest.param(["-p", "x", "--workers", "1"], id="an-option-and-its-value"),
        pytest.param(["-p", "x", "--timeout=5"], id="an-option-with-equals"),
        pytest.param(["-p", "x", "-p", "marks", "marks"], id="another-p"),
        pytest.param(["-p", "marks", "marks", "-p", "x"], id="last-as-before"),
    ],
)
def test_a_p_whose_value_is_missing_does_not_swallow_the_next_option(
    workspace: Path, arguments: list[str]
) -> None:
    notebook = write_notebook(workspace)
    line = refused_line(zeroshot(workspace, str(notebook), "--output-dir", "out", *arguments))
    assert line == "error: -p takes a name and a value: -p iterations 3"
    assert not (workspace / "out").exists()


def test_a_value_may_start_with_a_dash_or_be_empty_in_either_form(workspace: Path) -> None:
    source = "from zeroshot_kernel.batch import record\nrecord(x=x, first=first, second=second)"
    notebook = write_notebook(workspace, 'x = 0\nfirst = "a"\nsecond = "b"', source)
    ran = zeroshot(
        workspace, str(notebook), "-p", "x", "-1", "-p", "first", "", "-p", "second=", "--json"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [item] = json.loads(ran.stdout)["items"]
    assert item["parameters"] == {"x": -1, "first": "", "second": ""}
    assert item["results"] == {"x": -1, "first": "", "second": ""}


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_non_finite_number_is_refused_as_such(workspace: Path, value: str) -> None:
    notebook = write_notebook(workspace)
    line = refused_line(zeroshot(workspace, str(notebook), "-p", "x", value))
    assert line == "error: parameter x: non-finite numbers (inf, nan) cannot be passed"
    with pytest.raises(ParameterError, match=r"^parameter x: non-finite numbers \(inf, nan\)"):
        run_batch(notebook, [{"x": [1.5, float(value.replace(".", ""))]}], progress=False)
    assert not (workspace / "batch-output").exists()


# --- hostile parameters --------------------------------------------------------------------

INJECTED = "x;__import__('os').system('touch PWNED');y"
HOSTILE_VALUE = "\"'); __import__('os').system('touch PWNED') #\\\n\"\"\"'''"


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("csv header", INJECTED),
        ("grid key", INJECTED),
        ("-p name", INJECTED),
        ("-p name", "lambda"),
    ],
)
def test_a_name_that_is_code_is_refused_before_any_notebook_runs(
    workspace: Path, source: str, name: str
) -> None:
    notebook = write_notebook(workspace)
    (workspace / "rows.csv").write_text(f"{name},marks\n1,marks\n")
    (workspace / "grid.yaml").write_text(json.dumps({name: [1], "marks": "marks"}))
    arguments = {
        "csv header": ["--csv", "rows.csv"],
        "grid key": ["--grid", "grid.yaml"],
        "-p name": ["-p", name, "1", "-p", "marks", "marks"],
    }[source]
    ran = zeroshot(workspace, str(notebook), *arguments, "--output-dir", "out", "--quiet")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: ") and repr(name) in line
    assert "not a plain Python variable name" in line
    assert not (workspace / "PWNED").exists()
    assert not (workspace / "out").exists()
    listed = zeroshot(workspace, "list")
    assert listed.returncode == 0 and listed.stdout == ""


@pytest.mark.parametrize("name", ["class", "__builtins__", "naïve", "a b", ""])
def test_keywords_dunders_and_non_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ParameterError, match="not a plain Python variable name") as refused:
        parameter_sets(pairs=[(name, "1")])
    assert repr(name) in str(refused.value)


def test_the_python_api_refuses_the_same_names_and_unwritable_values(workspace: Path) -> None:
    notebook = write_notebook(workspace)
    with pytest.raises(ParameterError, match="not a plain Python variable name"):
        run_batch(notebook, [{INJECTED: 1}], output_dir="out", progress=False)
    with pytest.raises(ParameterError, match="set values cannot be passed"):
        run_batch(notebook, [{"x": {1, 2}}], output_dir="out", progress=False)
    with pytest.raises(ParameterError, match="at least one parameter set"):
        run_batch(notebook, [], output_dir="out", progress=False)
    with pytest.raises(ParameterError, match="workers must be at least 1"):
        run_batch(notebook, sets(1), output_dir="out", workers=0, progress=False)
    assert not (workspace / "PWNED").exists() and not (workspace / "out").exists()


def test_results_are_read_only_from_a_notebook(workspace: Path) -> None:
    (workspace / "plain.txt").write_text("not JSON")
    for path, words in (
        (workspace / "plain.txt", "not JSON"),
        (workspace / "missing.ipynb", "cannot read the notebook"),
        (write_notebook(workspace), None),
    ):
        if words is None:
            assert read_results(path) == {}  # a notebook that recorded nothing
            continue
        with pytest.raises(NotANotebook, match=words):
            read_results(path)


def test_resume_refuses_a_name_planted_in_the_ledger(workspace: Path) -> None:
    """A batch recorded by an older version or a ledger written by other hands: resume
    checks the names again before it executes anything."""
    notebook = write_notebook(workspace)
    with open_store() as store:
        batch_id = store.create(str(notebook), str(workspace / "out"), sets(1), BatchOptions())
    with sqlite3.connect(workspace / ".zeroshot" / "ledger.db") as ledger:
        ledger.execute(
            "UPDATE zeroshot_batch_items SET parameters_json = ?",
            (json.dumps({INJECTED: 1, "marks": "marks"}),),
        )
    resumed = zeroshot(workspace, "resume", batch_id, "--quiet")
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    [line] = resumed.stderr.splitlines()
    assert line.startswith(f"error: batch {batch_id}: parameter name {INJECTED!r}")
    assert not (workspace / "PWNED").exists() and not (workspace / "out").exists()
    assert batch_status(batch_id).items[0].status == "pending"


def test_a_hostile_value_stays_data_and_outputs_leave_the_workspace_only_when_asked(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    notebook = workspace / "echo.ipynb"
    document = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell('text = ""'),
            nbformat.v4.new_code_cell(
                "from zeroshot_kernel.batch import record\nrecord(text=text)"
            ),
        ]
    )
    document.cells[0].metadata["tags"] = ["parameters"]
    document.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(document, notebook)
    (workspace / "rows.csv").write_text('text\n"' + HOSTILE_VALUE.replace('"', '""') + '"\n')
    elsewhere = tmp_path_factory.mktemp("elsewhere")

    refused = zeroshot(
        workspace, str(notebook), "--csv", "rows.csv", "--output-dir", str(elsewhere), "--quiet"
    )
    assert refused.returncode == 2
    assert "outside the workspace" in refused.stderr and str(elsewhere) in refused.stderr
    assert list(elsewhere.iterdir()) == []

    ran = zeroshot(
        workspace,
        str(notebook),
        "--csv",
        "rows.csv",
        "--output-dir",
        str(elsewhere),
        "--allow-outside-workspace",
        "--quiet",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    batch_id = ran.stdout.split(":", 1)[0]
    assert f"executed notebooks go to {elsewhere / batch_id}" in ran.stderr
    [output] = elsewhere.glob(f"{batch_id}/*.ipynb")
    assert read_results(str(output)) == {"text": HOSTILE_VALUE}
    assert not (workspace / "PWNED").exists() and not (elsewhere / "PWNED").exists()

"""A warm interpreter that forks Python experiments (run as a script; standard library only).

Usage: ``python _zygote.py module ...``. It imports the modules once, then reads one JSON
request per line on stdin (``script``, ``args``, ``cwd``, ``env``, ``log``, ``status``),
forks a child for each and answers ``{"pid": ...}`` on stdout. The child becomes its own
process group, runs the script as ``__main__`` with its output appended to ``log``, and
writes its exit code to ``status``. Children are reaped automatically; the zygote exits
when stdin closes, so it never outlives the process that started it.

A preload module that does not import is skipped (the experiment reports its own import
error). A script that fails because a package an extra of this distribution installs is
missing (scikit-learn, for the bundled tasks) says what to install in one line instead of
a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import runpy
import signal
import sys
import traceback
from typing import Any

INSTALL_HINTS = {"sklearn": ("scikit-learn", "pip install 'zeroshot-workbench[tasks]'")}
"""Packages the bundled tasks import that an extra of this distribution installs."""


def main(preload: list[str]) -> None:
    for module in preload:
        with contextlib.suppress(Exception):  # the experiment reports its own import error
            importlib.import_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()


def _child(request: dict[str, Any]) -> None:
    """Become ``python script args`` in a new process group; never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["script"], *request["args"]]
        sys.path[0] = request["cwd"]
        random.seed()  # a fresh interpreter would not share the zygote's random state
        runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as exit_request:
        if exit_request.code is None:
            code = 0
        elif isinstance(exit_request.code, int):
            code = exit_request.code
        else:
            print(exit_request.code, file=sys.stderr)
    except ModuleNotFoundError as error:
        hint = missing_package(error)
        if hint is None:
            traceback.print_exc()
        else:
            print(hint, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            with open(request["status"], "w", encoding="utf-8") as status:
                status.write(str(code))
        finally:
            os._exit(code)


def missing_package(error: ModuleNotFoundError) -> str | None:
    """One line saying how to install the package ``error`` misses, if an extra does."""
    top = (error.name or "").split(".")[0]
    if top not in INSTALL_HINTS:
        return None
    package, command = INSTALL_HINTS[top]
    return f"this task needs {package} (module {top!r}), which is not installed: {command}"


if __name__ == "__main__":
    main(sys.argv[1:])

"""The scripted "model" behind the agent CLI stand-ins (not a real agent).

A stand-in runs with the execution's workspace (or a checkout below it) as its working
directory and reads ``standin.json``: ``{node: [reply, ...]}``, one reply per turn of
that node (the last one repeats), from the CLI's configuration folder (``CLAUDE_CONFIG_DIR``
or ``CODEX_HOME``: the one place outside its workspace a boxed CLI may write, as the real
CLIs keep their sessions there) when that is set, else from the nearest folder upwards.
The node's name is read from the prompt's ``# Task (... `name`)`` heading; a node without
a script (or a workspace without ``standin.json``) gets ``ok``. A reply is one of:

- ``{"json": value}``: answer with that JSON value;
- ``{"text": "..."}``: answer with this text (e.g. prose that is not JSON);
- ``{"increment": "value"}``: answer ``{"value": input.value + 1}``;
- ``{"gate": n}``: a verifier verdict, ``accepted`` once ``input.value >= n``;
- ``{"refuse": "why"}``: decline through the prompt contract;
- ``{"hang": true}``: name itself ``zshang-<marker>`` (``/proc/PID/comm``, which the host
  sees whatever PID namespace it runs in), start a child and a ``setsid`` daemon named the
  same, record the marker, and never answer;
- ``{"crash": true}``: write to stderr and exit with status 3;
- ``{"garbage": true}``: print a line that is not in the CLI's output format;
- ``{"turn_failed": true}``: end the turn with the CLI's error report (an API error);
- ``{"auth_error": true}``: fail as the CLI does without valid credentials.

``"write": {path: text}`` in a reply first writes those files, relative to the working
directory (an agent editing with its tools; ``../`` paths write outside it); a write the
box refuses is recorded (``refused_write``) and the turn goes on.

``"daemon": {"path": P, "text": T}`` in a reply leaves a ``setsid`` daemon behind (named
``zsd-<marker>``, recorded in ``.standin/daemon.json``) that rewrites ``P`` with ``T``
and a counter, over and over, forever; the turn answers once it has written the first time.

``"require_env": NAME`` in a reply makes it an ``auth_error`` when ``NAME`` is not in the
environment; ``"leak_env": NAME`` writes the variable's value to stderr (a redaction
probe). Every invocation is appended to ``.standin/calls.jsonl`` (argv, session, pid,
the first prompt line, the whole prompt, the working directory); sessions live in
``.standin/sessions/``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG = os.environ.get("CLAUDE_CONFIG_DIR") or os.environ.get("CODEX_HOME")
ROOT = (
    Path(CONFIG)
    if CONFIG
    else next(
        (p for p in (Path.cwd(), *Path.cwd().parents) if (p / "standin.json").exists()),
        Path.cwd(),
    )
)
"""Where the script and the stand-in's state live: the CLI's configuration folder, else the
nearest folder holding the script."""
STATE = ROOT / ".standin"
_TASK = re.compile(r"^# Task \((?:step|verifier) `([^`]+)`\)", re.MULTILINE)
_INPUT = re.compile(r"# Input \(JSON\)\n\n(.*?)\n\n# ", re.DOTALL)


@dataclass
class Answer:
    """What the stand-in does this turn: reply with ``text``, or fail."""

    text: str | None = None
    failure: str | None = None
    """``crash`` | ``garbage`` | ``auth`` | ``turn_failed``"""


def node_of(prompt: str) -> str | None:
    match = _TASK.search(prompt)
    return match.group(1) if match else None


def input_of(prompt: str) -> Any:
    match = _INPUT.search(prompt)
    return json.loads(match.group(1)) if match else None


def session_for(resume: str | None) -> tuple[str, Path] | None:
    """The session to continue (None if ``resume`` names an unknown one) or a new one."""
    sessions = STATE / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    if resume is not None:
        path = sessions / resume
        return (resume, path) if path.exists() else None
    name = str(uuid.uuid4())
    path = sessions / name
    path.write_text("")
    return name, path


def answer(prompt: str, session_file: Path, argv: list[str], resumed: str | None) -> Answer:
    """Decide this turn's answer from the script, and record the call."""
    with session_file.open("a") as transcript:
        transcript.write(json.dumps({"prompt": prompt}) + "\n")
    history = [json.loads(line) for line in session_file.read_text().splitlines()]
    latest = next((h["prompt"] for h in reversed(history) if node_of(h["prompt"])), prompt)
    node = node_of(latest) or "?"
    turn = _next_turn(node)
    scripts = ROOT / "standin.json"
    known = json.loads(scripts.read_text()) if scripts.exists() else {}
    script = known.get(node, [{"text": "ok"}])
    reply: dict[str, Any] = script[min(turn, len(script) - 1)]
    _record(
        {
            "node": node,
            "turn": turn,
            "argv": argv,
            "resumed": resumed,
            "session": session_file.name,
            "pid": os.getpid(),
            "head": prompt.splitlines()[0] if prompt else "",
            "prompt": prompt,
            "cwd": str(Path.cwd()),
        }
    )
    if "leak_env" in reply:
        print(f"debug: key is {os.environ.get(reply['leak_env'], '')}", file=sys.stderr)
    if "require_env" in reply and reply["require_env"] not in os.environ:
        return Answer(failure="auth")
    value = input_of(latest) or {}
    for path, text in reply.get("write", {}).items():  # relative to the working directory
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        except OSError as refused:  # an agent's tool call failing: it carries on
            _record({"node": node, "refused_write": path, "error": str(refused)})
    if "daemon" in reply:
        daemon(reply["daemon"]["path"], reply["daemon"]["text"])
    if "json" in reply:
        return Answer(text=json.dumps(reply["json"]))
    if "text" in reply:
        return Answer(text=reply["text"])
    if "increment" in reply:
        return Answer(text=json.dumps({"value": value["value"] + 1}))
    if "gate" in reply:
        verdict = "accepted" if value["value"] >= reply["gate"] else "rejected"
        return Answer(
            text=json.dumps({"output": None, "signals": {"verdict": verdict}, "diagnostic": None})
        )
    if "refuse" in reply:
        return Answer(text=json.dumps({"refusal": reply["refuse"]}))
    if reply.get("hang"):
        hang()
    if reply.get("crash"):
        return Answer(failure="crash")
    if reply.get("garbage"):
        return Answer(failure="garbage")
    if reply.get("turn_failed"):
        return Answer(failure="turn_failed")
    return Answer(failure="auth")


def _next_turn(node: str) -> int:
    STATE.mkdir(exist_ok=True)
    counter = STATE / f"turns-{node}"
    turn = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(turn + 1))
    return turn


def _record(call: dict[str, Any]) -> None:
    STATE.mkdir(exist_ok=True)
    with (STATE / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps(call) + "\n")


HANG_NAME = "zshang-"
_SLEEPER = "import sys, time; open('/proc/self/comm', 'w').write(sys.argv[1]); time.sleep(300)"


def hang() -> None:
    """Name this process, a child and a ``setsid`` daemon after a new marker, record the
    marker, and wait forever."""
    name = HANG_NAME + uuid.uuid4().hex[:8]
    Path("/proc/self/comm").write_text(name)
    sleeper = [sys.executable, "-c", _SLEEPER, name]
    subprocess.Popen(sleeper)
    subprocess.Popen(sleeper, start_new_session=True)
    temporary = STATE / ".pids.json.tmp"
    temporary.write_text(json.dumps({"name": name, "pid": os.getpid()}))
    os.replace(temporary, STATE / "pids.json")  # a reader sees all of it or no file
    while True:
        time.sleep(1)


DAEMON_NAME = "zsd-"
_REWRITER = (
    "import sys, time\n"
    "open('/proc/self/comm', 'w').write(sys.argv[1])\n"
    "n = 0\n"
    "while True:\n"
    "    n += 1\n"
    "    open(sys.argv[2], 'w').write(f'{sys.argv[3]} {n}\\n')\n"
    "    time.sleep(0.05)\n"
)


def daemon(path: str, text: str) -> None:
    """Leave a ``setsid`` daemon rewriting ``path`` (see the module doc); return once it
    wrote."""
    name = DAEMON_NAME + uuid.uuid4().hex[:8]
    subprocess.Popen(
        [sys.executable, "-c", _REWRITER, name, str(Path(path).resolve()), text],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    temporary = STATE / ".daemon.json.tmp"
    temporary.write_text(json.dumps({"name": name}))
    os.replace(temporary, STATE / "daemon.json")
    while not (Path(path).exists() and Path(path).read_text().startswith(text + " ")):
        time.sleep(0.02)

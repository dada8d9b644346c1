"""A stand-in for the Codex CLI (``codex``), not the real thing: it speaks the documented
``codex exec --json`` interface so the ``codex`` harness can be tested as a real
subprocess.

``codex --version`` prints a version line. ``codex exec --json [--skip-git-repo-check]
[--cd DIR] [--sandbox MODE] [--model M] [-c key=value]... [resume THREAD_ID]`` reads the
prompt on stdin and prints JSON Lines events: ``thread.started`` (``thread_id``),
``turn.started``, ``item.completed`` with an ``agent_message`` item (the reply text), and
``turn.completed`` with ``usage``; a failing turn ends in ``turn.failed`` with
``error.message`` (for missing credentials, a 401 message) and exit status 1. What it
answers comes from the workspace's script (see ``scripted_agent``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_agent import answer, session_for


def emit(event: dict[str, object]) -> None:
    print(json.dumps(event), flush=True)


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        print("codex-cli 0.99.0 (stand-in)")
        return 0
    parser = argparse.ArgumentParser(prog="codex")
    parser.add_argument("command", choices=["exec"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-git-repo-check", action="store_true")
    parser.add_argument("--cd", "-C")
    parser.add_argument("--sandbox", "-s")
    parser.add_argument("--model", "-m")
    parser.add_argument("-c", action="append", default=[])
    parser.add_argument("rest", nargs="*")
    args = parser.parse_intermixed_args()
    if not args.json:
        print("this stand-in only speaks exec --json", file=sys.stderr)
        return 2
    resume = args.rest[1] if args.rest[:1] == ["resume"] and len(args.rest) > 1 else None
    prompt = sys.stdin.read()
    session = session_for(resume)
    if session is None:
        print(f"Error: no rollout found for thread id {resume}", file=sys.stderr)
        return 1
    thread, session_file = session
    emit({"type": "thread.started", "thread_id": thread})
    emit({"type": "turn.started"})
    turn = answer(prompt, session_file, sys.argv[1:], resume)
    if turn.failure == "auth":
        emit(
            {
                "type": "error",
                "message": "unexpected status 401 Unauthorized: Missing bearer "
                "or basic authentication in header",
            }
        )
        emit({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
        return 1
    if turn.failure == "turn_failed":
        emit({"type": "error", "message": "stream disconnected before completion"})
        emit({"type": "turn.failed", "error": {"message": "stream disconnected before completion"}})
        return 1
    if turn.failure == "crash":
        print("thread 'main' panicked: the stand-in crashed on purpose", file=sys.stderr)
        return 3
    if turn.failure == "garbage":
        print("this is not a JSON event")
        return 0
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "reasoning", "text": "**Thinking**"},
        }
    )
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_1", "type": "agent_message", "text": turn.text},
        }
    )
    emit(
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 200, "cached_input_tokens": 50, "output_tokens": 30},
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

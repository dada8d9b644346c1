"""A stand-in for the Claude Code CLI (``claude``), not the real thing: it speaks the
documented print-mode interface with JSON output so the ``claude`` harness can be tested
as a real subprocess.

``claude --version`` prints a version line. ``claude -p --output-format json [--model M]
[--effort E] [--permission-mode P] [--allowedTools T] [--disallowedTools T]
[--settings JSON] [--max-turns N] [--resume SESSION_ID]`` reads the
prompt on stdin and prints one JSON object: ``{"type": "result", "subtype": "success",
"is_error": false, "result": TEXT, "session_id": ID, "usage": {...}, "total_cost_usd": X}``.
Without credentials it prints an ``is_error`` result ("Invalid API key · Please run
/login") and exits 1; an unknown ``--resume`` id is an error too. What it answers comes
from the workspace's script (see ``scripted_agent``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_agent import answer, session_for

USAGE = {
    "input_tokens": 100,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 5,
    "output_tokens": 20,
}


def result(text: str, session: str, *, error: bool = False) -> str:
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": error,
            "duration_ms": 12,
            "num_turns": 1,
            "result": text,
            "session_id": session,
            "total_cost_usd": 0.0015,
            "usage": USAGE,
        }
    )


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        print("2.0.0 (Claude Code stand-in)")
        return 0
    parser = argparse.ArgumentParser(prog="claude")
    parser.add_argument("-p", "--print", action="store_true", dest="print_mode")
    parser.add_argument("--output-format", default="text")
    parser.add_argument("--model")
    parser.add_argument("--effort")
    parser.add_argument("--permission-mode")
    parser.add_argument("--allowedTools")
    parser.add_argument("--disallowedTools")
    parser.add_argument("--settings")
    parser.add_argument("--resume")
    parser.add_argument("--max-turns", type=int)
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_args()
    if not args.print_mode or args.output_format != "json":
        print("this stand-in only speaks -p --output-format json", file=sys.stderr)
        return 2
    prompt = args.prompt if args.prompt is not None else sys.stdin.read()
    session = session_for(args.resume)
    if session is None:
        print(f"No conversation found with session ID: {args.resume}", file=sys.stderr)
        return 1
    session_id, session_file = session
    turn = answer(prompt, session_file, sys.argv[1:], args.resume)
    if turn.failure == "auth":
        print(result("Invalid API key · Please run /login", session_id, error=True))
        return 1
    if turn.failure == "turn_failed":
        print(result("API Error: Overloaded", session_id, error=True))
        return 1
    if turn.failure == "crash":
        print("Error: the stand-in crashed on purpose", file=sys.stderr)
        return 3
    if turn.failure == "garbage":
        print("this is not the JSON output format")
        return 0
    print(result(turn.text or "", session_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())

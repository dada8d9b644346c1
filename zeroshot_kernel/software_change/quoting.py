"""Text from the untrusted side (file names, check output, diffs) made safe to show.

A file name may hold a newline and an ANSI escape, an output may hold a line that looks
like a receipt, a diff may hold a Markdown fence: quoted raw into a brief, a record or a
terminal, any of them could forge what trusted code says. :func:`name` makes one line of a
name (control characters, ANSI escapes and backslashes escaped, length-limited);
:func:`lines` keeps the line breaks of an output or a diff but escapes every other control
character; :func:`fence` is a Markdown code fence longer than any backtick run inside the
text, so quoted text can never close it.
"""

from __future__ import annotations

import re

NAME_CHARS = 300
"""How much of one name is shown (the rest is counted)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile(
    r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_BACKTICKS = re.compile(r"`+")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def name(text: str, limit: int = NAME_CHARS) -> str:
    """``text`` (a file name) on one line: every control, line-separator or
    direction-override character escaped (``\\n``, ``\\x1b``), cut at ``limit``."""
    shown = _CONTROL.sub(_escape, text)
    if len(shown) > limit:
        return f"{shown[:limit]}…(+{len(shown) - limit} chars)"
    return shown


def lines(text: str) -> str:
    """``text`` (an output, a diff) with its line breaks kept and every other control
    character escaped (ANSI escapes, carriage returns, direction overrides)."""
    return _CONTROL_KEEP_LINES.sub(_escape, text.replace("\r\n", "\n"))


def fence(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence no line of it can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{info}\n{text.rstrip(chr(10))}\n{marks}"

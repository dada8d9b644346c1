"""Inside a box without a network: the relay between its loopback and the egress proxy.

``python -I egress_relay.py SOCKET -- ARGV...`` listens on an ephemeral port of the box's
loopback, copies each connection to the proxy's Unix socket ``SOCKET`` (outside the box,
where the allow-list is decided), and runs ARGV with ``HTTPS_PROXY`` and ``HTTP_PROXY``
(both spellings) set to that port and no ``NO_PROXY``, sharing its stdin, stdout and
stderr; it exits with ARGV's status (by the same signal, if a signal ended it). ARGV that
cannot be started is said on stderr the way the agent guard says it, exit 127.

Standard library only, run as a file (not ``-m``): the box may hide the package's folder.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading

CANNOT_START = 127
CANNOT_START_MARK = "zeroshot-agent-guard: cannot start"  # as agent_guard.py says it
PROXY_NAMES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
UNSET_NAMES = ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")
_CHUNK = 64 * 1024


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have finished sending (also the proxy's)."""
    peers = {a: b, b: a}
    open_ends = {a, b}
    with selectors.DefaultSelector() as selector:
        for end in open_ends:
            selector.register(end, selectors.EVENT_READ)
        while open_ends:
            for key, _ in selector.select():
                source = key.fileobj
                assert isinstance(source, socket.socket)
                try:
                    chunk = source.recv(_CHUNK)
                except OSError:
                    chunk = b""
                if chunk:
                    try:
                        peers[source].sendall(chunk)
                        continue
                    except OSError:
                        return
                selector.unregister(source)
                open_ends.discard(source)
                with contextlib.suppress(OSError):
                    peers[source].shutdown(socket.SHUT_WR)


def relay(client: socket.socket, path: str) -> None:
    with client:
        try:
            proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            proxy.connect(path)
        except OSError:
            return
        with proxy:
            splice(client, proxy)


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: egress_relay.py SOCKET -- ARGV...", file=sys.stderr)
        return 2
    path, command = argv[0], argv[2:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if k not in UNSET_NAMES}
    env.update(dict.fromkeys(PROXY_NAMES, url))
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as problem:
        print(f"{CANNOT_START_MARK} {command[0]}: {problem}", file=sys.stderr)
        return CANNOT_START
    code = child.wait()
    if code < 0:  # end the same way, so the box's limits are read as they happened
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

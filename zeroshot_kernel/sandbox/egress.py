"""The only way out of a box that must reach a model API: a proxy, outside the box, that
reaches the hosts on an allow-list and nothing else.

An agent CLI has to talk to its model API, and every tool it runs (model-written shell
commands included) runs in the same box: a box on the machine's network would let them
reach anything, the user's LAN and any upload service included. So the box keeps a network
namespace of its own (loopback only), and its one way out is a Unix socket bound into it,
served here by trusted code. The proxy speaks what HTTP clients send a proxy: ``CONNECT
host:port`` (every HTTPS request) and plain ``http://`` requests in absolute form; it opens
the connection only when the host and port are on the allow-list, answers 403 otherwise,
and then only copies bytes, so TLS stays end to end and nothing is decrypted, kept or
logged but the host. Inside the box a relay (``egress_relay.py``, a standalone script)
listens on the box's loopback and starts the CLI with ``HTTPS_PROXY``/``HTTP_PROXY``
pointing at it. A process in the box that ignores those variables has no route at all; one
that finds the socket gets the same allow-list.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from zeroshot_kernel.sandbox.egress_relay import splice

RELAY = Path(__file__).with_name("egress_relay.py")
"""The relay the box runs around its command (standard library only, run as a file)."""
MAX_HEAD_BYTES = 16 * 1024
"""A request head longer than this is refused: the proxy never reads without a bound."""
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
POLL_S = 0.01
"""How often the serving thread looks for :meth:`EgressProxy.close` (socketserver's default,
0.5 s, would be added to every agent invocation)."""


@dataclass(frozen=True, order=True)
class Endpoint:
    """A host and port a box may reach."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def endpoint(entry: str, default_port: int = 443) -> Endpoint | None:
    """``host``, ``host:port`` or a URL (its scheme's port by default) as an
    :class:`Endpoint`; ``None`` for anything else."""
    text = entry.strip()
    if not text:
        return None
    parts = urlsplit(text if "://" in text else f"//{text}")
    scheme_port = {"http": 80, "https": 443}.get(parts.scheme, default_port)
    try:
        port = parts.port or scheme_port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host or any(c.isspace() for c in host):
        return None
    return Endpoint(host, port)


def endpoints(entries: Iterable[str]) -> tuple[Endpoint, ...]:
    """The well-formed entries of ``entries`` as endpoints, each once, sorted."""
    return tuple(sorted({e for e in map(endpoint, entries) if e is not None}))


class EgressProxy:
    """An allow-list proxy on a Unix socket in a private folder, served by a thread from
    :meth:`start` until :meth:`close`. :attr:`decisions` says which hosts were asked for
    and whether each was let through (hosts only: never a path, a header or a byte of
    data)."""

    def __init__(self, allowed: Iterable[Endpoint]) -> None:
        self.allowed = frozenset(allowed)
        self.decisions: list[tuple[Endpoint, bool]] = []
        """Each host and port asked for, and whether it was let through."""
        self.folder = Path(tempfile.mkdtemp(prefix="zeroshot-egress-"))
        self.socket_path = self.folder / "proxy.sock"
        self._server: _Server | None = None

    @classmethod
    def start(cls, allowed: Iterable[Endpoint]) -> EgressProxy:
        """A proxy for ``allowed``, serving (``with contextlib.closing(...)`` ends it)."""
        proxy = cls(allowed)  # its folder is the user's alone (mkdtemp's 0700)
        proxy._server = _Server(str(proxy.socket_path), _Handler, proxy)
        threading.Thread(
            target=proxy._server.serve_forever,
            args=(POLL_S,),
            name="zeroshot-egress",
            daemon=True,
        ).start()
        return proxy

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        shutil.rmtree(self.folder, ignore_errors=True)

    def decide(self, wanted: Endpoint) -> bool:
        allowed = wanted in self.allowed
        self.decisions.append((wanted, allowed))
        return allowed

    def refused(self) -> list[str]:
        """The ``host:port`` refused so far, each once, in the order first asked for."""
        return list(dict.fromkeys(str(e) for e, allowed in list(self.decisions) if not allowed))


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, handler: type[_Handler], proxy: EgressProxy) -> None:
        self.proxy = proxy
        super().__init__(path, handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """A connection that broke ends alone; nothing of it is printed (the default prints
        a traceback to the controller's stderr)."""


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(HEAD_TIMEOUT_S)
        try:
            head, rest = _read_head(client)
        except (OSError, ValueError):
            _reply(client, 400, "a request head the proxy could not read within its limit")
            return
        request = _parse(head)
        if request is None:
            _reply(client, 400, "only CONNECT and absolute http:// requests go through")
            return
        wanted, first_line = request
        if not self.server.proxy.decide(wanted):
            _reply(client, 403, f"{wanted} is not on this box's allow-list")
            return
        try:
            upstream = socket.create_connection((wanted.host, wanted.port), CONNECT_TIMEOUT_S)
        except (OSError, UnicodeError) as failed:  # UnicodeError: a name IDNA refuses
            reason = getattr(failed, "strerror", None) or failed
            _reply(client, 502, f"cannot reach {wanted}: {reason}")
            return
        with upstream:
            if first_line is None:  # CONNECT: the tunnel is open
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                pending = rest
            else:
                pending = first_line + head[head.index(b"\r\n") :] + rest
            client.settimeout(None)
            upstream.settimeout(None)
            if pending:
                upstream.sendall(pending)
            splice(client, upstream)


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through its blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise ValueError("request head too long")
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("closed before the end of the head")
        data += chunk
    end = data.index(b"\r\n\r\n") + 4
    if end > MAX_HEAD_BYTES:
        raise ValueError("request head too long")
    return data[:end], data[end:]


def _parse(head: bytes) -> tuple[Endpoint, bytes | None] | None:
    """Where the request goes, and (for a plain HTTP request) its first line in origin
    form; ``None`` when it is neither CONNECT nor an absolute ``http://`` request."""
    try:
        line = head.split(b"\r\n", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        return None
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    method, target, version = parts
    if method == "CONNECT":
        wanted = endpoint(target)
        return (wanted, None) if wanted is not None and ":" in target else None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    wanted = endpoint(target, default_port=80)
    if wanted is None:
        return None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    return wanted, f"{method} {path} {version}".encode("ascii")


def _reply(client: socket.socket, status: int, reason: str) -> None:
    words = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"zeroshot egress: {reason}\n".encode()
    with contextlib.suppress(OSError):
        client.sendall(
            f"HTTP/1.1 {status} {words}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )

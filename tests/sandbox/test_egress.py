"""A box that must reach a model API reaches its hosts and nothing else: real bubblewrap
boxes without a network, the real allow-list proxy on a Unix socket, loopback HTTP
servers standing in for the API and for everything else."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zeroshot_kernel.harness.agent_cli import CliMissing, cli_box, run_cli
from zeroshot_kernel.harness.claude_harness import CLAUDE
from zeroshot_kernel.harness.codex_harness import CODEX
from zeroshot_kernel.processes import PIPE, STDOUT
from zeroshot_kernel.sandbox import Box, Containment, box_env, folder_policy
from zeroshot_kernel.sandbox.egress import MAX_HEAD_BYTES, EgressProxy, Endpoint, endpoint

TIMEOUT_S = 60


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"server": self.server.name, "path": self.path}).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def http_server(name: str) -> Iterator[int]:
    """A loopback HTTP server answering every GET with its name and the path it saw."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.name = name  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def ask(proxy: EgressProxy, request: bytes) -> bytes:
    """Send ``request`` to the proxy's socket and read until it closes."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(TIMEOUT_S)
        client.connect(str(proxy.socket_path))
        client.sendall(request)
        client.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
        return received


def test_endpoints_come_from_hosts_ports_and_urls() -> None:
    assert endpoint("api.anthropic.com") == Endpoint("api.anthropic.com", 443)
    assert endpoint("Gateway.Example:8443") == Endpoint("gateway.example", 8443)
    assert endpoint("http://127.0.0.1:8080/v1") == Endpoint("127.0.0.1", 8080)
    assert endpoint("https://openrouter.ai/api/v1") == Endpoint("openrouter.ai", 443)
    assert endpoint("http://gpu-box/v1") == Endpoint("gpu-box", 80)
    for bad in ("", "   ", "host:notaport", "http://", "a b:80"):
        assert endpoint(bad) is None, bad


def test_an_agent_clis_hosts_are_its_apis_its_base_urls_and_the_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZEROSHOT_AGENT_EGRESS", "llm-gateway.corp:8443, nonsense host")
    claude = CLAUDE.egress({"ANTHROPIC_BASE_URL": "https://openrouter.ai/api"})
    assert set(claude) == {
        "api.anthropic.com:443",
        "claude.ai:443",
        "statsig.anthropic.com:443",
        "openrouter.ai:443",
        "llm-gateway.corp:8443",
        "host:443",  # "nonsense host" is two entries; neither reaches anything it names
        "nonsense:443",
    }
    monkeypatch.delenv("ZEROSHOT_AGENT_EGRESS")
    codex = CODEX.egress({}, ["http://127.0.0.1:11434/v1"])
    assert set(codex) == {
        "api.openai.com:443",
        "chatgpt.com:443",
        "auth.openai.com:443",
        "127.0.0.1:11434",
    }
    assert "sentry.io:443" not in claude  # an upload service anyone can use


def test_an_allowed_host_that_cannot_be_reached_is_a_502_and_prints_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    unnamed = "x" * 70 + ".invalid"  # a label IDNA refuses: not even looked up
    with closing(EgressProxy.start([Endpoint(unnamed, 443), Endpoint("127.0.0.1", 9)])) as proxy:
        for target in (f"{unnamed}:443", "127.0.0.1:9"):
            answer = ask(proxy, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 502 Bad Gateway"), answer
            assert f"cannot reach {target}".encode() in answer
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err + printed.out


def test_the_proxy_lets_through_what_its_list_allows_and_nothing_else() -> None:
    with http_server("api") as api, http_server("elsewhere") as other:
        with closing(EgressProxy.start([Endpoint("127.0.0.1", api)])) as proxy:
            tunnel = ask(
                proxy,
                f"CONNECT 127.0.0.1:{api} HTTP/1.1\r\nHost: x\r\n\r\n"
                "GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
            )
            assert tunnel.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200")
            assert b'"server": "api", "path": "/through"' in tunnel
            plain = ask(
                proxy,
                f"GET http://127.0.0.1:{api}/plain?q=1 HTTP/1.1\r\nHost: x\r\n"
                "Connection: close\r\n\r\n".encode(),
            )
            assert b'"path": "/plain?q=1"' in plain  # origin form for the server
            for refused in (
                f"CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n",
                f"GET http://127.0.0.1:{other}/ HTTP/1.1\r\n\r\n",
                f"CONNECT localhost:{api} HTTP/1.1\r\n\r\n",  # the name is what is allowed
            ):
                answer = ask(proxy, refused.encode())
                assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
                assert b"is not on this box's allow-list" in answer
            for malformed in (
                b"GET /relative HTTP/1.1\r\n\r\n",
                b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
                b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
                b"\xff\xfe garbage\r\n\r\n",
                b"GET http://127.0.0.1/ HTTP/1.1\r\n"
                + b"X: "
                + b"a" * MAX_HEAD_BYTES
                + b"\r\n\r\n",
                b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n",  # closed before the head ends
            ):
                assert ask(proxy, malformed).startswith(b"HTTP/1.1 400 Bad Request"), malformed
            here, there = Endpoint("127.0.0.1", api), Endpoint("127.0.0.1", other)
            named = Endpoint("localhost", api)
            assert proxy.decisions == [
                (here, True),
                (here, True),
                (there, False),
                (there, False),
                (named, False),
            ]
            assert proxy.refused() == [str(there), str(named)]
        assert not proxy.socket_path.exists() and not proxy.folder.exists()


PROBE = """
    import json, os, socket, sys, urllib.error, urllib.request
    api, other = int(sys.argv[1]), int(sys.argv[2])
    seen = {"proxy": os.environ.get("HTTPS_PROXY", ""), "no_proxy": "NO_PROXY" in os.environ}
    def get(port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/probe", timeout=20) as reply:
                return json.load(reply)["server"]
        except urllib.error.HTTPError as refused:
            return refused.code
    seen["api"], seen["other"] = get(api), get(other)
    try:
        socket.create_connection(("127.0.0.1", api), timeout=5).close()
        seen["direct"] = "connected"
    except OSError as failed:
        seen["direct"] = failed.errno
    try:
        socket.create_connection(("1.1.1.1", 443), timeout=5).close()
        seen["internet"] = "connected"
    except OSError as failed:
        seen["internet"] = failed.errno
    print("PROBE " + json.dumps(seen))
    """


def probe_results(output: str) -> dict[str, object]:
    line = next(x for x in output.splitlines() if x.startswith("PROBE "))
    return dict(json.loads(line.removeprefix("PROBE ")))


@pytest.mark.slow  # boxed processes reaching servers
def test_a_box_with_egress_reaches_its_hosts_through_the_proxy_and_nothing_directly(
    tmp_path: Path,
) -> None:
    with http_server("api") as api, http_server("elsewhere") as other:
        policy = folder_policy(
            tmp_path, Containment(), env=box_env({}), egress=[f"127.0.0.1:{api}"]
        )
        with Box.open(policy, Containment()) as box:
            assert box.contained and box.proxy is not None
            argv = [sys.executable, "-c", textwrap.dedent(PROBE), str(api), str(other)]
            child = box.spawn(argv, stdout=PIPE, stderr=STDOUT)
            output = child.popen.communicate(timeout=TIMEOUT_S)[0].decode(errors="replace")
            assert child.popen.returncode == 0, output
            decisions = list(box.proxy.decisions)
        assert box.proxy is None  # closed with the box
    seen = probe_results(output)
    assert seen["proxy"].startswith("http://127.0.0.1:") and not seen["no_proxy"]  # type: ignore[union-attr]
    assert seen["api"] == "api"  # the API, through the proxy
    assert seen["other"] == 403  # another server on the same machine: refused
    assert seen["direct"] != "connected"  # the box's loopback is its own
    assert seen["internet"] != "connected"
    assert decisions == [(Endpoint("127.0.0.1", api), True), (Endpoint("127.0.0.1", other), False)]


@pytest.mark.slow  # an agent CLI's box, end to end
def test_an_agent_cli_reaches_its_api_and_its_exit_status_comes_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI runs under the relay: a stand-in "CLI" (a script) probes the network from
    the box ``cli_box`` makes for the claude harness, with the loopback API added the way
    a user adds a gateway; its exit status is the CLI's own, and the host refused to it is
    in its log and its error."""
    cli = tmp_path / "cli"
    script = textwrap.dedent(PROBE) + "\nsys.exit(3)\n"
    cli.write_text(f"#!{sys.executable}\n{script}")
    cli.chmod(0o755)
    folder = tmp_path / "work"
    folder.mkdir()
    with http_server("api") as api, http_server("elsewhere") as other:
        monkeypatch.setenv("ZEROSHOT_AGENT_EGRESS", f"127.0.0.1:{api}")
        monkeypatch.setenv("ZEROSHOT_CLAUDE_BIN", str(cli))  # shown in the box, as claude is
        logged: list[tuple[str, str]] = []
        with cli_box(CLAUDE, folder, Containment(), box_env({}), writable=True) as box:
            finished = asyncio.run(
                run_cli(
                    [str(cli), str(api), str(other)],
                    stdin="",
                    box=box,
                    log=lambda stream, line: logged.append((stream, line)),
                )
            )
    assert finished.returncode == 3, finished.stderr_text()
    # What was refused is said where a user looks when the CLI fails: its log and its error.
    refused = f"egress_refused: 127.0.0.1:{other} is not on the allow-list of the agent's box"
    assert ("error", f"{refused} (ZEROSHOT_AGENT_EGRESS adds hosts)") in logged
    assert finished.stderr_tail[-1] == refused
    seen = probe_results("\n".join(finished.stdout))
    assert (seen["api"], seen["other"]) == ("api", 403)
    assert seen["direct"] != "connected" and seen["internet"] != "connected"


@pytest.mark.slow  # an agent CLI's box
def test_a_cli_that_cannot_start_under_the_relay_is_missing_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = tmp_path / "cli"
    cli.write_text("#!/nonexistent/interpreter\n")
    cli.chmod(0o755)
    monkeypatch.setenv("ZEROSHOT_CLAUDE_BIN", str(cli))
    with (
        cli_box(CLAUDE, tmp_path, Containment(), box_env({}), writable=True) as box,
        pytest.raises(CliMissing, match=r"cannot start .*cli"),
    ):
        asyncio.run(run_cli([str(cli)], stdin="", box=box, log=lambda *_: None))


@pytest.mark.slow  # an agent CLI's box
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_cli_ended_by_a_signal_ends_the_same_way_through_the_relay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
) -> None:
    """A box's limits are read from how its process ended (SIGKILL for memory): the relay
    between the box and the CLI must not turn a signal into an exit status of its own."""
    cli = tmp_path / "cli"
    cli.write_text(f"#!{sys.executable}\nimport os\nos.kill(os.getpid(), {int(sig)})\n")
    cli.chmod(0o755)
    monkeypatch.setenv("ZEROSHOT_CLAUDE_BIN", str(cli))
    with cli_box(CLAUDE, tmp_path, Containment(), box_env({}), writable=True) as box:
        finished = asyncio.run(run_cli([str(cli)], stdin="", box=box, log=lambda *_: None))
    assert finished.returncode == 128 + sig, finished.stderr_text()
    assert "Traceback" not in finished.stderr_text()

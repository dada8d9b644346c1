"""``zeroshot providers``: which agent CLIs and connections this machine can use."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any

import typer

from zeroshot_kernel.console.output import EXIT_OK, EXIT_REJECTED, fail_usage, print_json
from zeroshot_kernel.console.output import read_inline_or_file as read_plan


def providers(
    check: Annotated[
        bool, typer.Option("--check", help="Send one tiny request per configured provider.")
    ] = False,
    runtime: Annotated[
        str | None,
        typer.Option("--runtime", help="Also list this plan's connections: inline JSON or @file."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show installed harness CLIs (with versions, and the hosts their boxes may reach;
    ZEROSHOT_AGENT_EGRESS adds hosts) and which connections are satisfied (names only,
    never values); --check also tries each configured provider.

    Example: zeroshot providers --check --runtime @plan.json
    """
    from pydantic import ValidationError

    from zeroshot_kernel.engine.redaction import Redactor
    from zeroshot_kernel.harness import providers as probe
    from zeroshot_kernel.harness.plan import RuntimePlan

    plan = None
    if runtime is not None:
        try:
            plan = RuntimePlan.from_wire(read_plan(runtime, "--runtime"))
        except ValidationError as invalid:
            fail_usage(f"--runtime is not a runtime plan: {invalid.errors()[0]['msg']}")
    clis = asyncio.run(probe.cli_statuses())
    connections = probe.connection_statuses(plan)
    checks = asyncio.run(probe.check_all(plan)) if check else []
    # Nothing a provider answered may show a secret.
    redactor = Redactor(os.environ[c.env] for c in connections if c.env in os.environ)
    report: dict[str, Any] = {
        "clis": [
            {
                "name": c.name,
                "installed": c.installed,
                "version": c.version,
                "path": c.binary,
                "envVar": c.env_var,
                "egress": list(c.egress),
            }
            for c in clis
        ],
        "connections": [
            {"name": c.name, "env": c.env, "satisfied": c.satisfied, "baseUrl": c.base_url}
            for c in connections
        ],
    }
    if check:
        report["checks"] = [
            {"provider": c.provider, "ok": c.ok, "detail": redactor.redact(c.detail)}
            for c in checks
        ]
    if as_json:
        print_json(report)
    else:
        _print(report)
    raise typer.Exit(EXIT_OK if all(c.ok for c in checks) else EXIT_REJECTED)


def _print(report: dict[str, Any]) -> None:
    typer.echo("harness CLIs")
    for cli in report["clis"]:
        if cli["installed"]:
            typer.echo(f"  {cli['name']:<10} {cli['version']}  ({cli['path']})")
        else:
            typer.echo(f"  {cli['name']:<10} not installed (put it on PATH or set {cli['envVar']})")
        typer.echo(f"  {'':<10} its box reaches {', '.join(cli['egress'])} and nothing else")
    typer.echo("connections")
    for connection in report["connections"]:
        state = "set" if connection["satisfied"] else "not set"
        where = f"  {connection['baseUrl']}" if connection["baseUrl"] else ""
        typer.echo(f"  {connection['name']:<10} {connection['env']:<20} {state}{where}")
    if "checks" in report:
        typer.echo("checks")
        if not report["checks"]:
            typer.echo("  nothing configured to check")
        for result in report["checks"]:
            verdict = "ok  " if result["ok"] else "FAIL"
            typer.echo(f"  {result['provider']:<10} {verdict} {result['detail']}")


def register(app: typer.Typer) -> None:
    app.command("providers")(providers)

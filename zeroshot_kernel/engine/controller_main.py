"""Entry point of a detached controller process.

``python -m zeroshot_kernel.engine.controller_main RUN_ID --workspace DIR [--replacing
OWNER]``; the ledger URL comes from ``ZEROSHOT_LEDGER`` (never the command line, where it
could show a password). ``ZEROSHOT_LEASE_TTL_S`` shortens the lease (default 15 s), so that
a run whose controller died can be resumed sooner (tests); heartbeats then come five times
per lease. ``--replacing`` takes over the lease of a controller proven dead.

SIGTERM and SIGINT stop the controller gracefully: its executions are cancelled, the
interruption is recorded and the lease released; the run stays unfinished for ``zeroshot
resume``. Whatever ends the controller, its log's last line says why in one line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import signal
import sys
from pathlib import Path

from zeroshot_kernel.engine.controller import (
    HEARTBEAT_S,
    LEASE_TTL_S,
    Controller,
    LeaseUnavailable,
)
from zeroshot_kernel.ledger import Ledger, LedgerError
from zeroshot_kernel.ledger.events import TerminalResult
from zeroshot_kernel.sandbox import user_root
from zeroshot_kernel.workspace import LEDGER_ENV

LEASE_TTL_ENV = "ZEROSHOT_LEASE_TTL_S"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zeroshot-controller")
    parser.add_argument("run_id")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--replacing", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    url = os.environ.get(LEDGER_ENV)
    if not url:
        print(f"{LEDGER_ENV} is not set", file=sys.stderr)
        return 2
    ttl = _lease_ttl()
    if ttl is None:
        print(f"{LEASE_TTL_ENV} must be a positive number of seconds", file=sys.stderr)
        return 2
    # The user's workspace, never a run's worktree (and never on sys.path: started with -P).
    os.chdir(user_root(args.workspace) or args.workspace)
    try:
        with Ledger(url) as ledger:
            controller = Controller(
                ledger,
                args.run_id,
                workspace=args.workspace,
                replacing=args.replacing,
                lease_ttl_s=ttl,
                heartbeat_s=min(HEARTBEAT_S, ttl / 5),
            )
            result = asyncio.run(_drive(controller))
    except LeaseUnavailable as busy:
        logging.error("%s", busy)
        return 3
    except LedgerError as problem:
        logging.error("%s %s: the ledger failed: %s", STOPPED, args.run_id, problem)
        return 4
    except Exception as bug:
        logging.exception("%s %s: %s: %s", STOPPED, args.run_id, type(bug).__name__, bug)
        logging.error("%s %s: %s: %s", STOPPED, args.run_id, type(bug).__name__, bug)
        return 5
    if result is None:
        logging.info(
            "%s %s without finishing it (interrupted, or its lease was lost)", STOPPED, args.run_id
        )
        return 0
    logging.info("run %s ended: %s", args.run_id, result)
    return 0


STOPPED = "controller stopped driving run"
"""The words that start the last log line of a controller that ended without finishing its
run; ``zeroshot status`` quotes that line."""


async def _drive(controller: Controller) -> TerminalResult | None:
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, controller.interrupt, signal.Signals(number).name)
    return await controller.run()


def _lease_ttl() -> float | None:
    """The lease duration: ``ZEROSHOT_LEASE_TTL_S`` if set, else the default; None if the
    variable is not a positive number."""
    try:
        ttl = float(os.environ.get(LEASE_TTL_ENV, LEASE_TTL_S))
    except ValueError:
        return None
    return ttl if 0 < ttl < math.inf else None


if __name__ == "__main__":
    sys.exit(main())

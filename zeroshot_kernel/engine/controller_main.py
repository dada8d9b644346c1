"""Entry point of a detached controller process.

``python -m zeroshot_kernel.engine.controller_main RUN_ID --workspace DIR``; the ledger URL
comes from ``ZEROSHOT_LEDGER`` (never the command line, where it could show a password).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from zeroshot_kernel.engine.controller import Controller, LeaseUnavailable
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.workspace import LEDGER_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zeroshot-controller")
    parser.add_argument("run_id")
    parser.add_argument("--workspace", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    url = os.environ.get(LEDGER_ENV)
    if not url:
        print(f"{LEDGER_ENV} is not set", file=sys.stderr)
        return 2
    os.chdir(args.workspace)
    sys.path.insert(0, str(args.workspace))
    with Ledger(url) as ledger:
        controller = Controller(ledger, args.run_id, workspace=args.workspace)
        try:
            result = asyncio.run(controller.run())
        except LeaseUnavailable as busy:
            print(str(busy), file=sys.stderr)
            return 3
    logging.info("run %s ended: %s", args.run_id, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

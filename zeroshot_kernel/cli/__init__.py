"""The ``zeroshot`` command line."""

from zeroshot_kernel.cli.app import app, main

__all__ = ["app", "main"]

"""``python -m zeroshot_kernel`` runs the ``zeroshot`` command line."""

from zeroshot_kernel.cli import main

main()

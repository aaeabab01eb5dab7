"""``python -m kvalign``."""

from kvalign.cli import main

main()

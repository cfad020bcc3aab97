"""Kept for old commands: the same as ``gdpo-plot`` (gdpo_trl/cli/plot.py)."""

import sys

from gdpo_trl.cli.plot import main

if __name__ == "__main__":
    sys.exit(main())

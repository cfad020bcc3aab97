"""Kept for old commands: the same as ``gdpo-compare`` (gdpo_trl/cli/compare.py)."""

from gdpo_trl.cli.compare import main

if __name__ == "__main__":
    main()

"""The training recipes, shipped inside the wheel as ``gdpo_trl.recipes`` (see setup.py).

This file makes the folder a regular package, which an editable install (``make install``) needs to import it under
that name. ``gdpo recipes list`` names every recipe; ``gdpo train --config cpu/gdpo`` trains one by name.
"""

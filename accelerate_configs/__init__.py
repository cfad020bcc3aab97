"""accelerate configs, shipped inside the wheel as ``gdpo_trl.accelerate_configs`` (see setup.py).

This file makes the folder a regular package, which an editable install (``make install``) needs to import it under
that name. ``gdpo train --accelerate_config zero2`` finds ``zero2.yaml`` here from any folder.
"""

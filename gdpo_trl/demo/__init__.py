"""The offline demo: tiny locally built models (``builtin:tiny``), generated word problems, and the SFT warm start
(``builtin:warmstart``) that the CPU recipe trains with GDPO.

This package depends on the core (data prompts, rewards) and nothing in the core imports it, except
:func:`resolve_model`'s ``builtin:`` names, which the CLI and the trainer resolve through :mod:`gdpo_trl.models`.
"""

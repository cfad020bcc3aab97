"""The offline demo: tiny locally built models (``builtin:tiny``), generated word problems, and the SFT warm start
(``builtin:warmstart``) that the CPU recipe trains with GDPO.

This package builds on the core (data prompts, rewards, the evaluation loop). The core's modules never import it at
import time; the shells reach it on demand: ``gdpo train`` and ``gdpo eval`` resolve ``builtin:`` names with
:func:`gdpo_trl.core.plugins.resolve_model` (through the entry points in pyproject.toml), and :mod:`gdpo_trl.data.sources` loads ``synthetic`` and ``warmstart``.
"""

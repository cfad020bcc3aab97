"""The functional core: advantage rules, diagnostics, the config and its checks.

``from gdpo_trl.core import RULES, rule_advantages`` gives every advantage rule by name
(:mod:`gdpo_trl.core.rules`). They import torch, so they load on first use: the core's torch-free modules
(``errors``, ``conditions``, ``argparsing``) stay fast to import for the checks that run before torch loads.
"""

__all__ = ["RULES", "Rule", "rule_advantages", "rule_for_settings"]


def __getattr__(name):
    if name in __all__:
        from gdpo_trl.core import rules

        return getattr(rules, name)
    raise AttributeError(f"module 'gdpo_trl.core' has no attribute {name!r}")

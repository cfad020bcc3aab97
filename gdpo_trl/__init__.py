"""gdpo-trl: GDPO (Group reward-Decoupled normalization Policy Optimization) for Hugging Face TRL.

``GDPOTrainer`` and ``GDPOConfig`` import TRL, which takes seconds; they are loaded on first use so that
``gdpo_trl.core.advantages``, ``gdpo_trl.rewards`` and the data modules import fast on their own.
"""

__version__ = "0.1.0"
__all__ = ["GDPOConfig", "GDPOTrainer", "__version__"]


def __getattr__(name):
    if name == "GDPOConfig":
        from gdpo_trl.core.config import GDPOConfig

        return GDPOConfig
    if name == "GDPOTrainer":
        from gdpo_trl.trainer import GDPOTrainer

        return GDPOTrainer
    raise AttributeError(f"module 'gdpo_trl' has no attribute {name!r}")

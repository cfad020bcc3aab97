"""The trainer layer: ``GDPOTrainer`` (:mod:`gdpo_trl.trainer.gdpo_trainer`) and the machinery it owns: reward
checking (:mod:`~gdpo_trl.trainer.reward_checks`), process-reward assembly (:mod:`~gdpo_trl.trainer.process_rewards`,
:mod:`~gdpo_trl.trainer.token_rewards`)."""

from gdpo_trl.trainer.gdpo_trainer import GDPOTrainer
from gdpo_trl.trainer.weight_schedule import scheduled_weights

__all__ = ["GDPOTrainer", "scheduled_weights"]

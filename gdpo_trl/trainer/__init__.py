"""The trainer layer: ``GDPOTrainer`` (:mod:`gdpo_trl.trainer.gdpo_trainer`) and the machinery it owns: a run's
rewards prepared and watched (:mod:`~gdpo_trl.trainer.reward_pipeline`, :mod:`~gdpo_trl.trainer.reward_checks`),
process-reward assembly (:mod:`~gdpo_trl.trainer.process_rewards`, :mod:`~gdpo_trl.trainer.token_rewards`)."""

from gdpo_trl.trainer.gdpo_trainer import GDPOTrainer, scheduled_weights

__all__ = ["GDPOTrainer", "scheduled_weights"]

"""The README's notebook subclass (ClippedGDPO: GDPO's advantages clamped to [-3, 3]) on the real SmolLM2-135M-Instruct
(the format warm start of docs/real_model.md): one LoRA step on the shipped GSM8K sample, then the step's reward means.

    python scripts/real_model_notebook.py

The command docs/real_model.md ran. To work in Jupyter, open examples/notebooks/real_model_in_a_notebook.ipynb
instead: the same model and data from the GGUF file, a few LoRA steps, the answers before and after in a table.
"""

import argparse

from peft import LoraConfig

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.core.advantages import gdpo_advantages
from gdpo_trl.data.sources import load_source
from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward


class ClippedGDPO(GDPOTrainer):
    def compute_advantages(self, rewards, num_generations):
        advantages = gdpo_advantages(rewards, self.reward_weights, num_generations)
        return advantages.clamp(-3.0, 3.0)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    trainer = ClippedGDPO(
        "builtin:smollm2-135m-gsm8k-format",  # the shipped format start
        reward_funcs=[format_reward, correctness_reward, integer_reward],
        args=GDPOConfig(
            output_dir="outputs/smollm2-notebook",
            num_generations=4,
            per_device_train_batch_size=8,
            max_completion_length=64,
            max_steps=1,
            learning_rate=1e-4,
            use_cpu=True,
            bf16=False,
            report_to="none",
            save_strategy="no",
            logging_steps=1,
        ),
        train_dataset=load_source("sample"),
        peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    trainer.train()
    print({k: v for k, v in trainer.state.log_history[0].items() if k.startswith("rewards/") and k.endswith("/mean")})


if __name__ == "__main__":
    main()

"""GSM8K-shaped datasets for GDPO: the real GSM8K (Hub or local files) and a shipped sample.

Importing this package does not import ``datasets``; the loaders import it when called.
"""

from gdpo_trl.data.gsm8k import (
    SAMPLE_PATH,
    SYSTEM_PROMPT,
    load_gsm8k,
    make_prompt,
    parse_gold_answer,
    to_gdpo_example,
)

__all__ = [
    "SAMPLE_PATH",
    "SYSTEM_PROMPT",
    "TEMPLATES",
    "generate_problems",
    "load_gsm8k",
    "load_synthetic",
    "make_prompt",
    "parse_gold_answer",
    "to_gdpo_example",
]


# The problem generator moved to gdpo_trl.demo.synthetic; these names still resolve here, loaded on first use so
# that the core never imports the demo.
_MOVED_TO_DEMO = {"TEMPLATES", "generate_problems", "load_synthetic"}


def __getattr__(name):
    if name in _MOVED_TO_DEMO:
        from gdpo_trl.demo import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module 'gdpo_trl.data' has no attribute {name!r}")

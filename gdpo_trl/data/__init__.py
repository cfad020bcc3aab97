"""GSM8K-shaped datasets for GDPO: the real GSM8K (Hub or local files), a shipped sample, and a generator.

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
from gdpo_trl.data.synthetic import TEMPLATES, generate_problems, load_synthetic

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

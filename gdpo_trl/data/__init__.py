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
    "load_gsm8k",
    "make_prompt",
    "parse_gold_answer",
    "to_gdpo_example",
]

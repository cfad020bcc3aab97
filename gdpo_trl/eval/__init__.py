"""Evaluate a model, checkpoint or LoRA adapter with the same prompt and rewards as training (``gdpo eval``).

Split along its seams: :mod:`~gdpo_trl.eval.loading` (what to load), :mod:`~gdpo_trl.eval.backends`
(``transformers`` and vLLM generation), :mod:`~gdpo_trl.eval.scoring` (rewards from the registry, metrics),
:mod:`~gdpo_trl.eval.report` (outputs), :mod:`~gdpo_trl.eval.run` (the whole evaluation and the one
generate-and-score loop).
"""

from gdpo_trl.eval.backends import BACKENDS, choose_backend, completion_length, vllm_available
from gdpo_trl.eval.loading import DTYPES, ModelSpec, load_transformers_model, resolve_model_spec
from gdpo_trl.eval.report import default_output_dir, format_summary, write_outputs
from gdpo_trl.eval.run import evaluate, generate_and_score, load_problems
from gdpo_trl.eval.scoring import DEFAULT_REWARDS, score_problem, summarize
from gdpo_trl.eval.settings import Completion, EvaluationInputError, GenerationSettings

__all__ = [
    "BACKENDS",
    "DEFAULT_REWARDS",
    "DTYPES",
    "Completion",
    "EvaluationInputError",
    "GenerationSettings",
    "ModelSpec",
    "choose_backend",
    "completion_length",
    "default_output_dir",
    "evaluate",
    "format_summary",
    "generate_and_score",
    "load_problems",
    "load_transformers_model",
    "resolve_model_spec",
    "score_problem",
    "summarize",
    "vllm_available",
    "write_outputs",
]

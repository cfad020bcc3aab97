"""What every part of the evaluation shares: the user-error type, the sampling settings, and one completion."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gdpo_trl.core.errors import InputError


class EvaluationInputError(InputError):
    """A bad model, adapter, dataset or generation setting: the user's to fix, reported without a traceback."""


@dataclass(frozen=True)
class GenerationSettings:
    """How completions are sampled. ``temperature == 0`` means greedy decoding, which allows only ``n == 1``."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    batch_size: int = 16
    seed: int = 0

    def __post_init__(self):
        if self.n < 1:
            raise EvaluationInputError(f"n must be >= 1, got {self.n}")
        if not (math.isfinite(self.temperature) and self.temperature >= 0):  # NaN would fail only in generation
            raise EvaluationInputError(f"temperature must be a finite number >= 0 (0: greedy), got {self.temperature}")
        if self.greedy and self.n > 1:
            # Greedy decoding returns the same completion n times: n > 1 would only cost time.
            raise EvaluationInputError(
                f"n={self.n} with greedy decoding (temperature 0) would repeat one completion; "
                "set a temperature > 0 (the paper uses 0.6 with top_p 0.95) or use n=1"
            )
        if not 0 < self.top_p <= 1:
            raise EvaluationInputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise EvaluationInputError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.batch_size < 1:
            raise EvaluationInputError(f"batch_size must be >= 1, got {self.batch_size}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Completion:
    """One generated completion: its text, its length in tokens (up to and including EOS), whether it was cut
    off at ``max_new_tokens``, and its token ids (what TRL hands a reward as ``completion_ids``)."""

    text: str
    num_tokens: int
    truncated: bool
    token_ids: tuple[int, ...] = ()

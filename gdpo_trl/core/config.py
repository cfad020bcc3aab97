"""``GDPOConfig``: TRL's ``GRPOConfig`` with GDPO as the default and its settings checked at construction."""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

from trl import GRPOConfig

from gdpo_trl.core.advantages import SCALES
from gdpo_trl.core.conditions import check_condition_graph, parse_condition
from gdpo_trl.core.config_checks import (
    as_weights,
    check_cpu_threads,
    check_generation_batch,
    check_num_generations,
    check_ranges,
    check_timeout,
    check_weight_schedule,
    is_number,
    launched_processes,
)
from gdpo_trl.core.cpu_speed import CPU_DTYPES, cpu_dtype_choice, trains_on_cpu
from gdpo_trl.core.errors import InputError
from gdpo_trl.core.noise import quiet_known_warnings

# TRL's two spellings, then the rules of gdpo_trl.core.rules.RULES a recipe may name directly (docs/rules.md).
AGGREGATIONS = ("normalize_then_sum", "sum_then_normalize", "gd2po", "mo_grpo", "saw_gdpo", "saw_grpo", "odrpo")
PER_REWARD_AGGREGATIONS = ("normalize_then_sum", "gd2po", "mo_grpo", "saw_gdpo", "odrpo")  # scale_rewards unused


@dataclass
class GDPOConfig(GRPOConfig):
    r"""
    Configuration for [`GDPOTrainer`]: every [`trl.GRPOConfig`] field, plus the fields below.

    Differences from `GRPOConfig`:

        multi_objective_aggregation (`str`, *optional*, defaults to `"normalize_then_sum"`):
            How several rewards become one advantage. `"normalize_then_sum"` is GDPO: each reward is normalized
            within its group, the weighted sum is then normalized over the batch. `"sum_then_normalize"` is GRPO:
            rewards are summed, then normalized within the group as `scale_rewards` says. `"gd2po"` is GD2PO: GDPO's
            per-reward advantages, rollouts whose rewards conflict masked (`gd2po_threshold`), each group scaled by
            the share it keeps, whitened over the kept tokens (see `docs/gd2po.md`). GDPO's published follow-ups
            (`docs/rules.md`): `"mo_grpo"` (MO-GRPO: GDPO without the batch step), `"saw_gdpo"` and `"saw_grpo"`
            (SAW's `gdpo-h` and `grpo-h`: weights from each reward's coefficient of variation over the batch, see
            `saw_offsets`), `"odrpo"` (ODRPO: each reward split into indicators `1[r >= t]`, see
            `odrpo_thresholds`). Checked at construction
            (TRL only fails at the first generation step). With a single reward function the trainer always uses
            GRPO, as the paper's reference code does.
        scale_rewards (`str`, *optional*, defaults to `"group"`):
            As in TRL: `"group"`, `"batch"` or `"none"`. Used by GRPO and by the single-reward fallback; under GDPO
            each reward is divided by its own group std by definition, so another value warns that it has no
            effect there.
        bf16 (`bool`, *optional*, defaults to `None`):
            As in TRL (on unless `fp16`), except that it stays off when `use_cpu` is set or torch sees no GPU-like
            device, so `GDPOConfig(output_dir=...)` works on a CPU-only machine without flags.

    Parameters that control GDPO:

        gdpo_batch_norm (`bool`, *optional*, defaults to `True`):
            Normalize the weighted sum of per-reward advantages over the whole batch (GDPO's last step). `False`
            gives the paper's ablation "GDPO without batch normalization".
        gd2po_threshold (`float`, *optional*, defaults to `0.2`):
            GD2PO masks a rollout in conflict (one weighted per-reward advantage above 0, another below) when its
            agreement ratio `|sum_k w_k a_k| / (sum_k |w_k a_k| + 1e-6)` is below this, in [0, 1]: 1 masks every
            conflict (the reference's hard rule), 0 none. Under GDPO and GRPO it is the threshold at which the logged
            `conflict/masked_share` (what GD2PO would mask) is measured.
        saw_offsets (`dict[str, float]` or `str`, *optional*, defaults to `None`):
            SAW (`saw_gdpo`, `saw_grpo`): the offset added to each reward before its coefficient of variation
            `std / |mean|` is taken, by reward name. A reward not named gets minus its declared minimum
            (`reward_range`: 3.0 for `tool_correctness` in [-3, 3], 0 for a 0/1 reward, as the reference), or 0 if it
            declares none. A JSON string is accepted on the command line.
        odrpo_thresholds (`dict[str, list[float]]` or `str`, *optional*, defaults to `None`):
            ODRPO (`odrpo`): the thresholds t each reward is split at into indicators `1[r >= t]`, by reward name. A
            reward not named is split at every whole number (for a reward on whole levels, every level above its
            lowest: `[1]` for a 0/1 reward, `[-2, -1, 0, 1, 2, 3]` for -3..3); name a reward on fractional levels.

    Parameters that shape rewards:

        reward_conditions (`dict` or `str`, *optional*, defaults to `None`):
            Conditioned rewards (the paper's Eq. 8): `{reward: condition}` pays `reward` only where the condition
            reward is at least a threshold, else 0. A condition is a reward name (threshold 1.0) or
            `{"on": name, "threshold": t}`. Names are registry names (`length`) or function names
            (`length_reward`). Example: `{"length": "correctness"}`. A JSON string is accepted on the command line.
        reward_weights_final (`list[float]`, *optional*, defaults to `None`):
            A reward-weight schedule: the weights move linearly from `reward_weights` (all 1.0 if unset) at the
            first step to these at the last, and are logged as `reward_weights/<name>`. Under GDPO only weights
            change the balance between rewards: multiplying a reward's raw values by a constant changes nothing,
            since group normalization cancels it. A weight may not change sign along the way.

    Parameters that guard a run:

        reward_timeout (`float`, *optional*, defaults to `600`):
            Seconds one call of a reward function may take (sync or async) before training stops with an error
            naming it, instead of hanging forever: a reward that never returns holds the run this long (10 minutes by
            default). `None` or `0` waits without limit.
        tool_timeout (`float`, *optional*, defaults to `60`):
            Seconds one call of a tool (an environment's method, or a function in `tools`) may take before it is
            abandoned: the call counts as failed and the model reads the timeout as the tool's result (TRL feeds a
            tool's error text back to the model). `None` or `0` waits without limit. See `docs/agents.md`.
        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            `gdpo train` refuses to start in an `output_dir` that holds an earlier run's checkpoints or model unless
            it resumes it (`resume_from_checkpoint`) or this is `True`, which deletes that run's checkpoints and
            model first.
    """

    _VALID_DICT_FIELDS = GRPOConfig._VALID_DICT_FIELDS + ["reward_conditions", "saw_offsets", "odrpo_thresholds"]

    # The processes the run will have, where this is built before they start (gdpo train's launcher, whose own
    # world_size is 1): see gdpo_trl.recipe.arguments.config_for_processes. Not a field.
    planned_processes: ClassVar[int | None] = None
    multi_objective_aggregation: str = field(
        default="normalize_then_sum",
        metadata={
            "help": "How several rewards become one advantage: 'normalize_then_sum' (GDPO, default: normalize each "
            "reward within its group, sum with reward_weights, normalize the sum over the batch), "
            "'sum_then_normalize' (GRPO: sum the weighted rewards, then normalize as scale_rewards says) or 'gd2po' "
            "(GD2PO: GDPO's per-reward advantages with conflicting rollouts masked, see gd2po_threshold). With one "
            "reward function GRPO is used either way.",
            "choices": list(AGGREGATIONS),
        },
    )
    gdpo_batch_norm: bool = field(
        default=True,
        metadata={
            "help": "GDPO only: normalize the weighted sum of per-reward advantages over the whole batch. False is "
            "the paper's ablation without this step."
        },
    )

    gd2po_threshold: float = field(
        default=0.2,
        metadata={
            "help": "GD2PO: mask a rollout whose per-reward advantages conflict when |sum w_k a_k| / sum |w_k a_k| is "
            "below this, in [0, 1] (1: every conflict, 0: none). Other rules: the threshold of the logged "
            "conflict/masked_share."
        },
    )

    saw_offsets: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "SAW (saw_gdpo, saw_grpo): offset added to each reward before its coefficient of variation is "
            'taken, by reward name, e.g. {"tool_correctness": 3.0}. Default: minus the reward\'s declared minimum '
            "(0 where it declares none)."
        },
    )
    odrpo_thresholds: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "ODRPO (odrpo): thresholds t each reward is split at into indicators 1[r >= t], by reward name, "
            'e.g. {"tool_correctness": [-2, -1, 0, 1, 2, 3]}. Default: every whole number (every level of a reward '
            "on whole levels); name a reward on fractional levels."
        },
    )

    reward_conditions: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Conditioned rewards: {reward: condition} pays `reward` only where the condition reward is at "
            "least 1.0 (or {'on': name, 'threshold': t}), else 0. Example: {\"length\": \"correctness\"}."
        },
    )
    reward_weights_final: list[float] | None = field(
        default=None,
        metadata={
            "help": "Reward-weight schedule: weights move linearly from reward_weights (all 1.0 if unset) to these "
            "over training, logged as reward_weights/<name>. One per reward function; a weight may not change sign."
        },
    )

    reward_timeout: float | None = field(
        default=600.0,
        metadata={
            "help": "Seconds one call of a reward function may take (sync or async) before training stops with an "
            "error naming it, instead of hanging: a reward that never returns holds the run this long. 0 or null: no "
            "limit."
        },
    )
    tool_timeout: float | None = field(
        default=60.0,
        metadata={
            "help": "Seconds one tool call may take before it is abandoned and counts as failed (the model reads the "
            "timeout as the tool's result). 0 or null: no limit."
        },
    )
    cpu_dtype: str | None = field(
        default=None,
        metadata={
            "help": "On a CPU, the dtype to train and generate in: 'auto' (bfloat16 where the CPU has native bf16, "
            "AVX-512 BF16 or AMX, about twice as fast; float32 elsewhere), 'bfloat16' or 'float32'. It sets `bf16` "
            "and the model's dtype, and the run logs which it chose and why. Default: unset (the `dtype` and `bf16` "
            "fields decide, as in TRL). Ignored on a GPU.",
            "choices": list(CPU_DTYPES),
        },
    )
    cpu_threads: int | None = field(
        default=None,
        metadata={
            "help": "Intra-op CPU threads for torch (`torch.set_num_threads`), set when GDPOTrainer is built; "
            "default: torch's choice (one per core). The CPU recipes use 1: a small model gains nothing from more, "
            "and on a busy machine threads waiting for each other made it many times slower."
        },
    )
    merge_lora_for_generation: bool = field(
        default=False,
        metadata={
            "help": "With LoRA and transformers generation: sample from the adapters merged into a copy of the "
            "weights (computed once per generation; training's weights are untouched) instead of adding their two "
            "products at every layer of every decode step. About 1.5x faster sampling of SmolLM2 on a CPU; the "
            "completions differ by rounding from the second step on. Not with use_vllm (vLLM merges already)."
        },
    )
    fast_sampling: bool = field(
        default=False,
        metadata={
            "help": "With transformers generation and plain temperature sampling (no top_k, top_p or min_p filter): "
            "draw each token by inverse CDF over blocks of the vocabulary instead of torch.multinomial's exponential "
            "per vocabulary entry. The same distribution, about a tenth of the sampler's cost on a CPU; the random "
            "stream differs, so a seeded run samples other tokens. Filters fall back to transformers' sampler."
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Start over in an output_dir that holds an earlier run: delete its checkpoints and model first. "
            "Without it (and without resume_from_checkpoint) gdpo train refuses to start there."
        },
    )

    def __post_init__(self):
        quiet_known_warnings()  # the Python API as quiet as the gdpo command (TrainingArguments warns from here on)
        # Checked before GRPOConfig's own checks, which would fail on these with a ZeroDivisionError or an
        # AttributeError that names no field.
        check_num_generations(self)
        check_ranges(self)  # batch sizes, lengths, learning rate, sampling, steps: one line naming the field
        processes = self.planned_processes or launched_processes()
        if processes > 0:  # TRL's batch checks, in words that name the processes (unknown here: TRL's alone)
            check_generation_batch(self, processes)
        self.reward_weights = as_weights(self.reward_weights, "reward_weights")
        self.reward_weights_final = as_weights(self.reward_weights_final, "reward_weights_final")
        self.reward_conditions = parse_json_dict(self.reward_conditions, "reward_conditions")
        self.saw_offsets = parse_json_dict(self.saw_offsets, "saw_offsets")
        self.odrpo_thresholds = parse_json_dict(self.odrpo_thresholds, "odrpo_thresholds")
        check_rule_options(self.saw_offsets, self.odrpo_thresholds)
        check_cpu_threads(self.cpu_threads)
        on_cpu = trains_on_cpu(self)
        if self.cpu_dtype is not None and on_cpu:
            dtype = cpu_dtype_choice(self.cpu_dtype)[0]  # the weights load in it and autocast computes in it
            self.bf16 = dtype == "bfloat16"
            if self.model_init_kwargs is None or isinstance(self.model_init_kwargs, dict):
                self.model_init_kwargs = {**(self.model_init_kwargs or {}), "dtype": dtype}
        if self.bf16 is None and not self.fp16 and on_cpu:
            # TRL turns bf16 on by default, which transformers refuses on a CPU-only machine; follow the hardware.
            self.bf16 = False
        if self.dataloader_pin_memory and on_cpu:
            self.dataloader_pin_memory = False  # pinning needs an accelerator; torch warns at every epoch otherwise
        super().__post_init__()
        if self.multi_objective_aggregation not in AGGREGATIONS:
            raise InputError(
                f"multi_objective_aggregation={self.multi_objective_aggregation!r} is not supported: use "
                "'normalize_then_sum' (GDPO), 'sum_then_normalize' (GRPO) or one of "
                f"{list(AGGREGATIONS[2:])} (docs/rules.md)."
            )
        if isinstance(self.gd2po_threshold, str):  # YAML reads 1e-1 as a string
            try:
                self.gd2po_threshold = float(self.gd2po_threshold)
            except ValueError:
                pass
        if not is_number(self.gd2po_threshold) or not 0.0 <= self.gd2po_threshold <= 1.0:
            raise InputError(
                f"gd2po_threshold={self.gd2po_threshold!r}: must be a number in [0, 1] (1 masks every conflicting "
                "rollout, 0 none; the reference's default is 0.2)."
            )
        if self.multi_objective_aggregation == "gd2po" and not self.gdpo_batch_norm:
            raise InputError(
                "gdpo_batch_norm=false has no effect with multi_objective_aggregation='gd2po' (GD2PO whitens over its "
                "kept rollouts instead): remove gdpo_batch_norm, or use 'normalize_then_sum' for GDPO without it."
            )
        if self.multi_objective_aggregation in AGGREGATIONS[3:] and not self.gdpo_batch_norm:
            raise InputError(
                f"gdpo_batch_norm=false has no effect with multi_objective_aggregation="
                f"{self.multi_objective_aggregation!r} (the rule has its own last step, docs/rules.md): remove "
                "gdpo_batch_norm, or use 'normalize_then_sum' for GDPO without it (which is 'mo_grpo')."
            )
        if self.merge_lora_for_generation and self.use_vllm:
            raise InputError(
                "merge_lora_for_generation=true applies to transformers generation; with use_vllm=true, vLLM "
                "generates from merged weights already: drop merge_lora_for_generation."
            )
        if self.fast_sampling and self.use_vllm:
            raise InputError("fast_sampling=true applies to transformers generation; vLLM samples with its own "
                             "sampler: drop fast_sampling.")  # fmt: skip
        if self.scale_rewards not in SCALES:
            raise InputError(f"scale_rewards={self.scale_rewards!r} is not supported: use one of {list(SCALES)}.")
        if self.multi_objective_aggregation in PER_REWARD_AGGREGATIONS and self.scale_rewards != "group":
            warnings.warn(
                f"scale_rewards={self.scale_rewards!r} has no effect under GDPO (multi_objective_aggregation="
                "'normalize_then_sum') with two or more reward functions: each reward is divided by its own group "
                "std by definition. It is only used when a single reward function falls back to GRPO. For GRPO "
                "without std, set multi_objective_aggregation='sum_then_normalize' and scale_rewards='none'.",
                UserWarning,
                stacklevel=3,
            )
        if self.multi_objective_aggregation == "sum_then_normalize" and not self.gdpo_batch_norm:
            # An error, not a warning: the user asked for the GDPO ablation without batch normalization but would
            # get plain GRPO, and the run's results would be read as that ablation.
            raise InputError(
                "gdpo_batch_norm=false has no effect with multi_objective_aggregation='sum_then_normalize' (GRPO has "
                "no batch-normalization step to turn off): for GDPO without batch normalization set "
                "multi_objective_aggregation='normalize_then_sum'; for GRPO remove gdpo_batch_norm."
            )
        for spec in (self.reward_conditions or {}).values():
            parse_condition(spec)  # raises on a malformed condition, before any model is loaded
        check_condition_graph(self.reward_conditions)  # as written; the trainer checks again with registry names
        if self.reward_weights is not None:
            check_weights(self.reward_weights, "reward_weights")
        if self.reward_weights_final is not None:
            check_weights(self.reward_weights_final, "reward_weights_final")
            check_weight_schedule(self.reward_weights, self.reward_weights_final)
        check_timeout(self.reward_timeout, "reward_timeout")
        check_timeout(self.tool_timeout, "tool_timeout")
        turns = self.max_tool_calling_iterations
        if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 0):
            # TRL loops `while iteration < max_tool_calling_iterations`: -1 would silently never call a tool.
            raise InputError(
                f"max_tool_calling_iterations={turns!r}: give the number of tool-call turns per rollout, a whole "
                "number >= 0, or null for no limit."
            )


def parse_json_dict(value, name: str) -> dict | None:
    """A dict field given as a JSON string on the command line -> the dict; malformed JSON names the field."""
    if value is None or isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as error:
        raise InputError(f"{name} is not valid JSON ({error.msg} at character {error.pos}): {value!r}") from None
    if not isinstance(parsed, dict):
        raise InputError(f'{name} must be a JSON object such as {{"length": "correctness"}}; got {value!r}.')
    return parsed


def check_weights(weights: list[float], name: str) -> None:
    """Error for weights that cannot train (non-finite, all zero); a warning when every weight is negative."""
    bad = [(i, w) for i, w in enumerate(weights) if not math.isfinite(w)]
    if bad:
        i, w = bad[0]
        raise InputError(
            f"{name}[{i}] is {w}: weights must be finite numbers (a NaN drops that reward, an infinity turns the "
            "loss into NaN or 0)."
        )
    if weights and not any(weights):
        raise InputError(f"{name} are all zero: no reward would be left to learn from (loss and gradient 0).")
    if weights and all(w < 0 for w in weights):
        warnings.warn(
            f"{name} are all negative ({list(weights)}): every reward will be trained DOWN (treated as a penalty). "
            "If that is not what you want, use positive weights.",
            UserWarning,
            stacklevel=3,
        )


def check_rule_options(saw_offsets: dict | None, odrpo_thresholds: dict | None) -> None:
    """``saw_offsets``: a number per reward name; ``odrpo_thresholds``: a list of numbers per reward name. Which names
    are the run's rewards is checked by the trainer, which knows them."""
    for name, offset in (saw_offsets or {}).items():
        if not is_number(offset) or not math.isfinite(offset):
            raise InputError(f"saw_offsets[{name!r}]={offset!r}: give a finite number (added to the reward).")
    for name, levels in (odrpo_thresholds or {}).items():
        if not isinstance(levels, list | tuple) or not levels:
            raise InputError(
                f"odrpo_thresholds[{name!r}]={levels!r}: give a list of thresholds, e.g. [1, 2, 3] (indicators "
                "1[r >= t])."
            )
        for level in levels:
            if not is_number(level) or not math.isfinite(level):
                raise InputError(
                    f"odrpo_thresholds[{name!r}] holds {level!r}: every threshold must be a finite number."
                )

"""Range and type checks of ``GDPOConfig``'s own fields, run before TRL's and transformers' ``__post_init__``.

Why before: the libraries accept most of these values and fail much later (a list as ``learning_rate`` in the
optimizer, after the model is loaded), fail with a message that names no field, or quietly do something else:
``max_steps: 0`` or ``-5`` falls back to training by epochs, ``temperature: 0`` divides the logits by zero,
``top_k: -1`` (vLLM's "off") makes transformers' sampler raise at the first generation, a zero batch size trains
nothing. Each check raises :class:`~gdpo_trl.core.errors.InputError` in one line naming the field and the fix.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import warnings

from gdpo_trl.core.errors import InputError

# Integer fields that must be at least 1, with what they count (for the message).
POSITIVE_INTS = {
    "per_device_train_batch_size": "completions per device per step",
    "gradient_accumulation_steps": "micro-batches per optimizer step",
    "max_completion_length": "tokens per completion",
    "num_iterations": "optimization passes per generated batch",
    "steps_per_generation": "steps per generation (or leave it unset)",
    "generation_batch_size": "completions per generation (or leave it unset)",
}
# Fields that may be None (unset) instead of a number.
OPTIONAL = {"max_completion_length", "steps_per_generation", "generation_batch_size", "top_k"}


def is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_not_a_list(config) -> None:
    """A list or mapping in a field whose default is a number (YAML ``learning_rate: [1, 2]``) names the field.

    TrlParser passes YAML values through unconverted when they are not strings, so such a value would otherwise
    reach the optimizer or the scheduler and fail there with a ``TypeError`` naming no field.
    """
    for f in dataclasses.fields(config):
        if not is_number(f.default):
            continue
        value = getattr(config, f.name, None)
        if isinstance(value, (list, tuple, dict, set)):
            raise InputError(f"{f.name}={value!r}: must be a single number, not a {type(value).__name__}.")


def _int_field(config, name: str, what: str) -> None:
    value = getattr(config, name, None)
    if value is None and name in OPTIONAL:
        return
    if not (isinstance(value, int) and not isinstance(value, bool)) or value < 1:
        raise InputError(f"{name}={value!r}: must be a whole number of at least 1 ({what}).")


def _float_field(config, name: str, ok, rule: str) -> None:
    value = getattr(config, name, None)
    if not is_number(value) or not ok(value):
        raise InputError(f"{name}={value!r}: {rule}.")


def check_ranges(config) -> None:
    """Every numeric field of ``GRPOConfig``/``TrainingArguments`` that a GDPO run reads, in its valid range."""
    check_not_a_list(config)
    for name, what in POSITIVE_INTS.items():
        _int_field(config, name, what)
    _float_field(
        config, "learning_rate", lambda v: math.isfinite(v) and v >= 0, "must be a finite number >= 0 (e.g. 1e-6)"
    )
    _float_field(
        config,
        "temperature",
        lambda v: math.isfinite(v) and v > 0,
        "must be a finite number > 0: the trainer divides the logits by it (1.0 samples from the model as it is)",
    )
    _float_field(config, "top_p", lambda v: 0 < v <= 1, "must be in (0, 1]; 1.0 turns nucleus sampling off")
    check_loss_coefficients(config)
    top_k = getattr(config, "top_k", 0)
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 0):
        raise InputError(
            f"top_k={top_k!r}: must be a whole number >= 0; 0 turns top-k filtering off (TRL's convention: vLLM's "
            "-1 makes transformers' sampler fail at the first generation)."
        )
    check_steps(config)


def check_loss_coefficients(config) -> None:
    """The KL coefficient and the clipping range: TRL trains on with any of these values, a negative ``beta`` then
    rewards drifting away from the reference model and a NaN ``epsilon`` clips every ratio to NaN."""
    _float_field(
        config, "beta", lambda v: math.isfinite(v) and v >= 0,
        "must be a finite number >= 0: the KL penalty's coefficient (0 turns it off; the paper uses 0.04)",
    )  # fmt: skip
    _float_field(
        config, "epsilon", lambda v: 0 < v < 1,
        "must be in (0, 1): the probability ratio is clipped to [1 - epsilon, 1 + epsilon_high] (0.2 is usual)",
    )  # fmt: skip
    if getattr(config, "epsilon_high", None) is not None:
        _float_field(
            config, "epsilon_high", lambda v: math.isfinite(v) and v > 0,
            "must be a finite number > 0, or unset to use epsilon: the ratio's upper clip is 1 + epsilon_high "
            "(DAPO uses 0.28)",
        )  # fmt: skip


def check_steps(config) -> None:
    """``max_steps`` is -1 (train ``num_train_epochs`` epochs) or at least 1; the epochs then are more than 0."""
    max_steps = getattr(config, "max_steps", -1)
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps == 0 or max_steps < -1:
        raise InputError(
            f"max_steps={max_steps!r}: give the number of optimizer steps (at least 1), or -1 to train "
            "num_train_epochs epochs instead (transformers silently trains by epochs for any negative value, and "
            "trains no step for 0)."
        )
    epochs = getattr(config, "num_train_epochs", 1.0)
    if max_steps == -1 and (not is_number(epochs) or not (math.isfinite(epochs) and epochs > 0)):
        raise InputError(
            f"num_train_epochs={epochs!r} with max_steps=-1: the run would train 0 steps; give epochs > 0 "
            "(e.g. 1), or a number of steps with max_steps."
        )


def as_weights(weights, name: str) -> list[float] | None:
    """``reward_weights``-like values as floats: numeric strings (YAML reads ``1e-1`` as a string) are converted;
    anything else that is not a number is an error naming the index."""
    if weights is None:
        return None
    if not isinstance(weights, (list, tuple)):
        raise InputError(f"{name}={weights!r}: must be a list with one number per reward function.")
    out = []
    for i, w in enumerate(weights):
        if isinstance(w, str):
            try:
                w = float(w)
            except ValueError:
                raise InputError(f"{name}[{i}] is {w!r}: weights must be numbers.") from None
        if not is_number(w):
            raise InputError(f"{name}[{i}] is {w!r}: weights must be numbers.")
        out.append(float(w))
    return out


def check_num_generations(config) -> None:
    """At least two completions per prompt (TRL's own check comes after a division by it)."""
    if isinstance(config.num_generations, int) and config.num_generations < 2:
        raise InputError(
            f"num_generations={config.num_generations}: GRPO and GDPO compare completions within a group, so each "
            "prompt needs at least 2 generations (8 or 16 is usual)."
        )


def launched_processes() -> int:
    """The processes of this run as its launcher (torchrun, ``accelerate launch``) set ``WORLD_SIZE``; 0 if unset."""
    try:
        return max(int(os.environ.get("WORLD_SIZE", "0")), 0)
    except ValueError:
        return 0


def check_generation_batch(config, num_processes: int) -> None:
    """The generation batch over all ``num_processes`` processes holds whole groups of ``num_generations``.

    The batch as TRL computes it (``GRPOConfig.__post_init__``, with ``world_size`` processes):
    ``per_device_train_batch_size`` x processes x ``steps_per_generation`` (which defaults to
    ``gradient_accumulation_steps``), unless ``generation_batch_size`` is given, when it must divide by the global
    batch of one step; with evaluation on, ``per_device_eval_batch_size`` x processes holds whole groups of
    ``num_generations_eval`` (else ``num_generations``). TRL's own messages quote the numbers without the processes;
    these name them and the fix, and ``gdpo train`` runs them before any process starts, with the count it will start.
    """
    per_device, groups = config.per_device_train_batch_size, config.num_generations
    generation_batch, steps = config.generation_batch_size, config.steps_per_generation
    counts = (per_device, groups, num_processes, config.gradient_accumulation_steps)
    if not all(isinstance(v, int) and v > 0 for v in counts) or any(
        v is not None and not (isinstance(v, int) and v > 0) for v in (generation_batch, steps)
    ):
        return  # check_ranges names the field
    processes = f"{num_processes} process{'es' * (num_processes > 1)}"
    step_batch = per_device * num_processes
    if generation_batch is not None and steps is not None:
        raise InputError(
            "generation_batch_size and steps_per_generation are both set: give one (TRL derives the other)."
        )
    if generation_batch is not None and generation_batch % step_batch:
        raise InputError(
            f"generation_batch_size ({generation_batch}) must be divisible by the global batch of {step_batch} "
            f"completions per step ({processes} x per_device_train_batch_size {per_device}): give a multiple of "
            f"{step_batch}, or leave it unset."
        )
    check_eval_batch(config, num_processes)
    if generation_batch is not None:
        made_of, fix = (
            "generation_batch_size",
            f"set generation_batch_size to a multiple of {math.lcm(groups, step_batch)}",
        )
    else:
        steps = steps if steps is not None else config.gradient_accumulation_steps
        generation_batch = step_batch * steps
        made_of = f"{processes} x per_device_train_batch_size {per_device}" + (f" x {steps} steps" * (steps != 1))
        fix = f"set per_device_train_batch_size to a multiple of {groups // math.gcd(groups, num_processes * steps)}"
        if num_processes > 1:
            fix += f" or --num_processes to a multiple of {groups // math.gcd(groups, per_device * steps)}"
    if generation_batch % groups:
        raise InputError(
            f"the generation batch of {generation_batch} completions ({made_of}) must be divisible by "
            f"num_generations ({groups}), so that every prompt gets its whole group: {fix}, or num_generations to a "
            f"divisor of {generation_batch}."
        )


def check_eval_batch(config, num_processes: int) -> None:
    """With evaluation on, one eval step's batch over all processes holds whole groups (TRL's check, with processes)."""
    strategy = getattr(config, "eval_strategy", "no")
    groups = getattr(config, "num_generations_eval", None) or config.num_generations
    per_device = getattr(config, "per_device_eval_batch_size", None)
    if str(getattr(strategy, "value", strategy)) == "no" or not all(
        isinstance(v, int) and v > 0 for v in (groups, per_device)
    ):
        return
    if (per_device * num_processes) % groups:
        processes = f"{num_processes} process{'es' * (num_processes > 1)}"
        raise InputError(
            f"the eval batch of {per_device * num_processes} completions ({processes} x per_device_eval_batch_size "
            f"{per_device}) must be divisible by the generations per eval prompt ({groups}, num_generations_eval or "
            f"num_generations): set per_device_eval_batch_size to a multiple of "
            f"{groups // math.gcd(groups, num_processes)}."
        )


def check_timeout(seconds, name: str) -> None:
    """``seconds`` is a wait Python can make: >= 0 (0 or None: no limit), finite, and at most threading's
    ``TIMEOUT_MAX`` (9.2e9 s on 64-bit Linux). Beyond that ``Event.wait`` raises ``OverflowError`` on every call: a
    ``tool_timeout: 1e12`` meant as "no limit" failed every tool call and trained on zero rewards, saying nothing."""
    import threading

    if seconds is None:
        return
    if not (is_number(seconds) and seconds >= 0 and math.isfinite(seconds)):
        raise InputError(f"{name}={seconds}: give seconds > 0, or 0/null for no limit.")
    if seconds > threading.TIMEOUT_MAX:
        raise InputError(
            f"{name}={seconds:g}: longer than the {threading.TIMEOUT_MAX:.0f} s Python can wait; give 0 (or null) for "
            "no limit."
        )


def check_weight_counts(rewards, values) -> None:
    """One weight per reward function, in ``reward_weights`` and ``reward_weights_final`` of ``values`` (a config,
    or its fields as a dict); ``rewards``: the reward functions' names (named in the message), or their number. The
    one check of the rule: ``gdpo train``'s early checks, the run's checks and the trainer's schedule call it."""
    names = [] if isinstance(rewards, int) else list(rewards or [])
    count = rewards if isinstance(rewards, int) else len(names)
    for name in ("reward_weights", "reward_weights_final"):
        weights = values.get(name) if isinstance(values, dict) else getattr(values, name, None)
        if isinstance(weights, (list, tuple)) and len(weights) != count:
            listed = f" {names}" if names else ""
            raise InputError(
                f"{name} has {len(weights)} weights for {count} reward functions{listed}: give one per reward, in "
                "the same order."
            )


def check_weight_schedule(start: list[float] | None, final: list[float], num_rewards: int | None = None) -> None:
    """Raise ``ValueError`` for a schedule whose lengths differ, that flips a weight's sign or ends all zero."""
    if num_rewards is not None:
        check_weight_counts(num_rewards, {"reward_weights_final": final})
    if start is not None and len(start) != len(final):
        raise InputError(
            f"reward_weights has {len(start)} weights but reward_weights_final has {len(final)}: they must match."
        )
    start = start if start is not None else [1.0] * len(final)
    for i, (a, b) in enumerate(zip(start, final, strict=True)):
        if a * b < 0:
            raise InputError(
                f"Reward weight {i} would change sign from {a} to {b}: a schedule may scale a reward, not turn a "
                "reward into a penalty. Use 0 to switch it off."
            )
    if not any(final):
        raise InputError("reward_weights_final are all zero: no reward would be left to learn from at the end.")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_cpu_threads(threads) -> None:
    """``cpu_threads``: a whole number of at least 1 (``True`` is not a count, though Python calls it 1); more than the
    cores this process may use is warned about, once (rank 0): the extra threads wait for each other, which made
    training many times slower on a busy machine."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(
            f"cpu_threads={threads!r}: must be at least 1, a whole number (leave it unset for torch's choice)."
        )
    cores = usable_cores()
    if threads > cores and os.environ.get("RANK", "0") == "0":
        warnings.warn(
            f"cpu_threads={threads} is more than the {cores} core{'s' * (cores > 1)} this process may use: the "
            f"threads beyond them only wait for each other; use at most {cores} (or leave it unset).",
            UserWarning,
            stacklevel=1,  # this file's: gdpo train prints the package's warnings as one line
        )

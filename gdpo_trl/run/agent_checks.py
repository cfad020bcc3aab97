"""Agent settings checked before the model loads, one line each naming the culprit and the fix.

What TRL 1.16's ``GRPOTrainer.__init__`` does with an ``environment_factory`` (read in its source): it calls
``supports_tool_calling(processing_class)`` (``trl.chat_template_utils``: the template must render a user ->
assistant-with-``tool_calls`` -> tool exchange) after the model is loaded, then calls each factory once (a probe
whose instance seeds its pool) and requires a ``reset`` method; each rollout later calls
``environment.reset(**row)`` with the row's columns (without ``environment`` when the factory is a dict). So a
factory that is not callable, a ``reset`` that raises on the data, or a template that drops tool calls failed after
the model load with 37-55 lines of traceback; an agent reward on a source with no environment, or
``reward_conditions: {}``, trained on silently with rewards of 0. Here they fail in seconds:

- :func:`check_agent_recipe` (before the data): agent rewards without an environment, empty ``reward_conditions``;
  and a warning for text rewards on an agent source (format, correctness: they read only an episode's last message,
  so its tool calls earn nothing and format scores 0, without a word before);
- :func:`check_environments` (with the data and tokenizer, before the model): factories, a first ``reset`` per
  environment on its first row, and the chat template.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping

from gdpo_trl.core.errors import InputError
from gdpo_trl.run.data_checks import GSM8K_REWARDS, TOOL_REWARDS

logger = logging.getLogger("gdpo_trl.run.agent_checks")

# Rewards that score multi-turn tool episodes (gdpo_trl.rewards.agent): without an environment every one is 0.
AGENT_REWARDS = ("agent_success", "agent_format", "agent_cost")
PROBE_ROWS = 2000  # rows searched for an environment's first row (a mixed source interleaves them)


def check_agent_recipe(script_args, training_args, environments) -> None:
    """Settings that can never apply, found from the recipe alone; ``environments``: the source's factory or None."""
    conditions = getattr(training_args, "reward_conditions", None)
    if conditions is not None and isinstance(conditions, Mapping) and not conditions:
        raise InputError(
            "reward_conditions is empty ({}): it conditions no reward. Name one as {reward: condition} (e.g. "
            "{agent_cost: agent_success}), or remove the field."
        )
    agent = [name for name in script_args.reward_funcs or [] if str(name) in AGENT_REWARDS]
    if agent and environments is None:
        raise InputError(
            f"reward_funcs {agent} score multi-turn tool episodes, and dataset_name {script_args.dataset_name!r} "
            "brings no environment, so there are no episodes and every such reward would be 0: use an agent source "
            "(dataset_name: agent, or agent_mix), or rewards for this data."
        )
    text = [name for name in script_args.reward_funcs or [] if str(name) in GSM8K_REWARDS + TOOL_REWARDS]
    if text and environments is not None:  # a warning: a mixed source may mean them for its rows of plain text
        logger.warning(
            "reward_funcs %s score a completion's text, but dataset_name %r makes each completion a multi-turn "
            "episode (tool calls and their answers), of which they read only the last message: the calls earn "
            "nothing, and a layout the agent does not write (format's <think> block) scores 0. Use rewards that read "
            "the episode (%s) or your own.",
            text, script_args.dataset_name, ", ".join(AGENT_REWARDS),
        )  # fmt: skip


def factories(environments) -> dict:
    """``{name: factory}`` as TRL normalizes it (a single factory is the unnamed ``None``)."""
    return dict(environments) if isinstance(environments, Mapping) else {None: environments}


def describe(name, factory) -> str:
    shown = getattr(factory, "__qualname__", None) or repr(factory)
    return f"environment {name!r} ({shown})" if name is not None else f"environment {shown}"


def probe(name, factory: Callable, row: dict | None, multi: bool) -> None:
    """Make one instance and reset it on ``row`` as TRL will; an InputError naming the environment on failure."""
    if not callable(factory):
        raise InputError(
            f"{describe(name, factory)} is not callable: an environment factory is a class (or a function) that "
            "returns a new environment, e.g. environment=ShopEnv, not ShopEnv() or a module."
        )
    try:
        instance = factory()
    except Exception as error:  # noqa: BLE001 - anything the user's constructor raises is named, not re-raised
        raise InputError(f"{describe(name, factory)}: making one raised {type(error).__name__}: {error}") from None
    reset = getattr(type(instance), "reset", None)
    if not callable(reset):
        raise InputError(f"{describe(name, factory)} has no reset() method: TRL resets each environment per rollout.")
    if row is None:
        return
    kwargs = {k: v for k, v in row.items() if k != "environment"} if multi else dict(row)
    try:
        instance.reset(**kwargs)
    except Exception as error:  # noqa: BLE001 - as above: the first rollout would raise the same
        raise InputError(
            f"{describe(name, factory)}: reset() raised {type(error).__name__} on the first row of the data ({error}); "
            "every rollout would: fix reset(), or the data's columns it reads."
        ) from None


def check_environments(environments, dataset, tokenizer, model_path: str) -> None:
    """Each factory made and reset once on its first row (:func:`probe`), and the chat template able to render a
    tool call and its answer (TRL's ``supports_tool_calling``)."""
    if environments is None:
        return
    multi = isinstance(environments, Mapping)
    for name, factory in factories(environments).items():
        row = None
        if len(dataset):
            rows = (r for r in itertools.islice(dataset, PROBE_ROWS) if not multi or r.get("environment") == name)
            row = next(rows, None)  # None: no row of this environment near the top; made, not reset
        probe(name, factory, row, multi)
    from trl.chat_template_utils import supports_tool_calling

    if not supports_tool_calling(tokenizer):
        raise InputError(
            f"the chat template of {model_path!r} cannot render tool calls (an assistant turn with tool_calls, then the "
            "tool's answer), which an environment's episodes need: use a model whose template renders tools (e.g. "
            "builtin:agent_warmstart, Qwen2.5-Instruct), or save such a template with its tokenizer."
        )

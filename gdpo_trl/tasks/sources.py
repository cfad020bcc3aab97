"""The demo's generated data sources, registered as ``gdpo_trl.sources`` entry points (see pyproject.toml):
``synthetic`` (word problems), ``warmstart`` (problems of the kind builtin:warmstart learned, none seen in its SFT)
``toolcall`` (requests for builtin:toolcall_warmstart, likewise held out), and the multi-turn agent sources ``agent``
(shop episodes for builtin:agent_warmstart, with their environment) and ``agent_mix`` (shop and GSM8K-style rows,
each naming its environment)."""

from __future__ import annotations

from gdpo_trl.data.sources import Source, generated_seed, generated_size
from gdpo_trl.tasks.agent_task import MIX_FACTORIES, ShopEnv


def _synthetic(split, size, seed, config, path):
    from gdpo_trl.tasks.synthetic import load_synthetic

    return load_synthetic(generated_size(size), generated_seed(seed, split))


def _warmstart(split, size, seed, config, path):
    from gdpo_trl.tasks.warmstart_data import load_warmstart_dataset

    # The warm start's held-out problems (its "eval" split) for RL and evaluation alike: none was an SFT example.
    return load_warmstart_dataset(generated_size(size), generated_seed(seed, split), split="eval")


def _toolcall(split, size, seed, config, path):
    from gdpo_trl.tasks.toolcall_task import load_toolcall_task

    # As for `warmstart`: the requests builtin:toolcall_warmstart's SFT never saw, for RL and evaluation alike.
    return load_toolcall_task(generated_size(size), generated_seed(seed, split), split="eval")


SYNTHETIC = Source(_synthetic, generated=True)
WARMSTART = Source(_warmstart, generated=True)
TOOLCALL = Source(_toolcall, generated=True, tools=True)


def _agent(split, size, seed, config, path):
    from gdpo_trl.tasks.agent_task import load_agent_task

    return load_agent_task(generated_size(size), generated_seed(seed, split), split="eval")


def _agent_mix(split, size, seed, config, path):
    from gdpo_trl.tasks.agent_task import load_agent_mix

    return load_agent_mix(generated_size(size), generated_seed(seed, split), split="eval")


AGENT = Source(_agent, generated=True, environment=ShopEnv)
AGENT_MIX = Source(_agent_mix, generated=True, environment=MIX_FACTORIES)

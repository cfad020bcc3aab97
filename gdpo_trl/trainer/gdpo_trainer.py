"""``GDPOTrainer``: TRL's ``GRPOTrainer`` with GDPO advantages, a hook to replace them, and per-reward diagnostics.

TRL 1.16 computes advantages inline in ``_generate_and_score_completions`` (about 600 lines, no hook). Instead of
copying that method we let it run and then replace its ``advantages`` with our own, computed from the same gathered
reward matrix. The cost is TRL's own advantage arithmetic on an ``[N, K]`` tensor, which is negligible next to
generation and the forward passes (see ``scripts/benchmark_trainer.py``).

TRL internals this relies on (checked against trl 1.16; the package pins ``trl>=1.16,<1.17``):

- ``_calculate_rewards(inputs, prompts, completions, completion_ids_list)`` returns the ``[N_global, K]`` float
  reward matrix, gathered across processes in rank order, with each prompt's completions contiguous and ``None``
  rewards as NaN. It is called once per ``_generate_and_score_completions`` call.
- ``_generate_and_score_completions(inputs)`` returns a dict whose ``"advantages"`` is this process's ``[N_local]``
  slice ``[process_index * N_local : (process_index + 1) * N_local]`` of the global advantages, with
  ``N_local == len(inputs)``.
- ``self._logs["advantages"]`` (a deque feeding the completions table) ends with that call's ``N_global``
  advantages; ``self._metrics[mode]`` is a dict of lists whose means are logged; ``frac_reward_zero_std`` is
  appended once per call.
- ``self.reward_funcs``, ``self.reward_func_names``, ``self.reward_weights``, ``self.num_generations``,
  ``self.num_generations_eval``, ``self.scale_rewards``, ``self.multi_objective_aggregation``.
- ``_generate_single_turn(...)`` generates with ``self.model`` (wrapped by ``merge_lora_for_generation``).
- With tools: ``self.tools`` (every tool, by ``__name__``), and ``_tool_call_loop`` calling each rollout's tools from
  ``self._sync_tool_dicts``/``self._async_tool_dicts`` (rebuilt per batch before it), inside
  ``_generate_and_score_completions`` (see :mod:`gdpo_trl.trainer.tool_watch`).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from transformers.utils import logging
from trl import GRPOTrainer

from gdpo_trl.core.advantages import gdpo_token_advantages
from gdpo_trl.core.config import GDPOConfig
from gdpo_trl.core.config_checks import check_weight_schedule
from gdpo_trl.core.diagnostics import reward_diagnostics
from gdpo_trl.core.gd2po import gd2po_conflicts
from gdpo_trl.core.rules import RULES, rule_advantages, rule_for_settings, rule_options_for, rule_parts
from gdpo_trl.trainer.card import GDPO_PAPER, RULE_CARDS, rewrite_card
from gdpo_trl.trainer.fast_sampling import exact_sampling
from gdpo_trl.trainer.gaming_watch import GamingWatch
from gdpo_trl.trainer.lora_generation import check_merge_for_generation, lora_merged_for_generation
from gdpo_trl.trainer.reward_pipeline import PreparedRewards, RewardWatch, prepare_rewards
from gdpo_trl.trainer.safe_saves import StagedSaves
from gdpo_trl.trainer.token_rewards import TokenAdvantages, length_mask
from gdpo_trl.trainer.tool_watch import ToolWatch

logger = logging.get_logger(__name__)


def scheduled_weights(start: torch.Tensor, final: torch.Tensor, step: int, max_steps: int) -> torch.Tensor:
    """Reward weights at optimizer step ``step`` (0-based) of ``max_steps`` (``GDPOConfig.reward_weights_final``):
    ``start`` at the first, ``final`` at the last."""
    progress = min(max(step / max(max_steps - 1, 1), 0.0), 1.0)
    return start + (final - start) * progress


def gathered_completion_mask(accelerator, output: dict) -> torch.Tensor:
    """GD2PO's token counts: ``[N_global, T]`` long, 1 on the first ``L_i`` positions of each gathered completion,
    ``L_i`` its number of trained tokens (TRL's ``completion_mask``, times ``tool_mask`` where tools inserted results
    the model did not write, as TRL's loss counts them).

    GD2PO's reference whitens over the kept *tokens* (:func:`gdpo_trl.core.gd2po.gd2po_advantages`); each process
    gathers every process's lengths, so all compute the same keep mask and advantages and each keeps a consistent
    slice. Only the counts matter: a row's advantage is the same on every token.
    """
    mask = output["completion_mask"]
    if output.get("tool_mask") is not None:
        mask = mask * output["tool_mask"]
    lengths = accelerator.gather(mask.sum(dim=1))
    return length_mask(lengths, int(lengths.max().item()) if lengths.numel() else 0)


def positional_as_keywords(values: tuple, keywords: dict) -> dict:
    """``GRPOTrainer``'s arguments after ``args`` given by place (``GDPOTrainer(model, rewards, config, dataset)``,
    as TRL's signature takes them: ``train_dataset``, ``eval_dataset``, ``processing_class``, ...), by name; a
    ``TypeError`` as Python gives for too many or for one given both ways."""
    import inspect

    names = [
        p.name
        for p in inspect.signature(GRPOTrainer.__init__).parameters.values()
        if p.kind is p.POSITIONAL_OR_KEYWORD
    ][4:]  # after self, model, reward_funcs, args
    if len(values) > len(names):
        raise TypeError(f"GDPOTrainer takes at most {len(names) + 3} positional arguments ({len(values) + 3} given)")
    given = dict(zip(names, values, strict=False))
    if twice := sorted(set(given) & set(keywords)):
        raise TypeError(f"GDPOTrainer got multiple values for argument {twice[0]!r}")
    return given


# Mixins: process rewards' token-level advantages (token_rewards), checkpoints renamed into place when whole.
class GDPOTrainer(TokenAdvantages, StagedSaves, GRPOTrainer):
    """``GRPOTrainer`` whose advantages come from ``compute_advantages``: GDPO by default.

    - The rule comes from :data:`gdpo_trl.core.rules.RULES` by name (``self.advantage_rule``, chosen from
      ``multi_objective_aggregation``, ``scale_rewards`` and ``gdpo_batch_norm`` by
      :func:`gdpo_trl.core.rules.rule_for_settings`) and is applied by :func:`gdpo_trl.core.rules.rule_advantages`,
      the same function ``gdpo pilot`` compares rules with. Two or more reward functions with
      ``"normalize_then_sum"`` (the default of ``GDPOConfig``): GDPO, equal to TRL's native GDPO;
      ``"sum_then_normalize"``, or a single reward function: GRPO with ``scale_rewards``.
    - Override ``compute_advantages`` to try another rule; what it returns is what trains.
    - The rewards are prepared once (:func:`gdpo_trl.trainer.reward_pipeline.prepare_rewards`):
      ``args.reward_conditions`` wraps them with :func:`gdpo_trl.rewards.conditioned.conditioned` before TRL sees
      them, and every plain reward function is wrapped so that one that raises, hangs or returns a malformed list is
      named in the error, and gets its own copies of its inputs (``CheckedReward``); after each batch a
      ``RewardWatch`` names a reward that said nothing or gave no signal. ``args.reward_weights_final`` moves
      ``self.reward_weights`` linearly over training.
    - A process reward (:func:`gdpo_trl.rewards.process.process_reward`) switches training to token-level
      advantages (:func:`gdpo_trl.core.advantages.gdpo_token_advantages`); loss settings that need one advantage per
      completion are refused. Without one nothing changes. See ``docs/process_rewards.md``.

    Extra metrics, per reward function ``<name>``: ``rewards/<name>/frac_zero_std`` (fraction of groups where that
    reward is constant) and ``rewards/<name>/advantage_share`` (its share of the advantage's absolute mass);
    ``frac_reward_zero_std`` is recomputed per group (TRL's is 0 or 1 under GDPO); ``advantages/distinct_per_group``
    and ``advantages/distinct_per_group_grpo`` count distinct advantage values per group under the rule in use and
    under GRPO on the same rewards, to show advantage collapse as it happens. With process rewards, see
    :func:`gdpo_trl.trainer.token_rewards.token_reward_diagnostics`.

    The model card (``README.md`` in ``output_dir``, written by TRL at each checkpoint and by ``push_to_hub``) names
    the rule that trained: GDPO, tagged ``gdpo``, citing the GDPO paper; or GRPO (TRL's name, tags and paper) when
    advantages are GRPO's. ``model_card_base_model`` and ``model_card_notes`` (Markdown sections, or callables returning them) add to it.

    See the module docstring for the TRL internals this class relies on.
    """

    _name = "GDPO"
    _tag_names = ["trl", "gdpo"]
    _paper = GDPO_PAPER

    def __init__(self, model, reward_funcs=None, args: GDPOConfig | None = None, *trl_args, **kwargs):
        kwargs = {**positional_as_keywords(trl_args, kwargs), **kwargs}  # TRL's signature: train_dataset, ... by place
        if args is None:
            name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "model")
            args = GDPOConfig(f"{str(name).removeprefix('builtin:').rstrip('/').split('/')[-1]}-GDPO")
        if not isinstance(args, GDPOConfig):
            raise TypeError(
                f"GDPOTrainer needs a GDPOConfig, got {type(args).__name__}. GDPOConfig takes every GRPOConfig "
                "field: build it with the same arguments."
            )
        if isinstance(model, str) and model.startswith("builtin:"):
            from gdpo_trl.core.plugins import resolve_model  # builtin: names (the demo's, or another plugin's)

            model = resolve_model(model)
        if args.cpu_threads is not None:  # the recipe's thread setting, applied from Python as from gdpo train
            torch.set_num_threads(args.cpu_threads)
        rewards = reward_funcs  # gdpo train's, prepared and checked against the rows (gdpo_trl.run.build)
        if not isinstance(rewards, PreparedRewards):  # rows checked, conditions, process slots, CheckedReward
            rewards = prepare_rewards(reward_funcs, args, **kwargs)
        super().__init__(model, reward_funcs=rewards.funcs, args=args, **kwargs)
        # The rule that trains, by its name in gdpo_trl.core.rules.RULES, and its options from the settings.
        self.advantage_rule, self.advantage_options = rule_for_settings(
            args.multi_objective_aggregation,
            len(self.reward_funcs),
            scale_rewards=self.scale_rewards,
            gdpo_batch_norm=args.gdpo_batch_norm,
        )
        # A published rule's own options (SAW's offsets, ODRPO's thresholds) from the config and the rewards' ranges.
        self.advantage_options.update(
            rule_options_for(self.advantage_rule, self.reward_funcs, self.reward_func_names, args)
        )
        if args.multi_objective_aggregation not in ("normalize_then_sum", "sum_then_normalize"):
            # TRL's own advantages (replaced by ours) need a branch it knows; per-reward rules take GDPO's
            per_reward = RULES[self.advantage_rule].per_reward == "normalized"
            self.multi_objective_aggregation = "normalize_then_sum" if per_reward else "sum_then_normalize"
        self._gd2po_mask = self._gd2po_keep = None  # GD2PO: this batch's gathered token counts and kept rows
        self.reward_funcs = rewards.with_trl_additions(self.reward_funcs, self.reward_func_names)
        # (column, slot) per process reward; the slots keep this process's steps between scoring and advantages.
        self._process_slots = rewards.process_slots
        self._reward_watch = RewardWatch(self.reward_funcs, self.reward_func_names)
        self._tool_watch = ToolWatch([t.__name__ for t in self.tools], args.tool_timeout) if self.tools else None
        self.add_callback(GamingWatch(self))  # easy rewards collected without the hard one (docs/gaming.md)
        if args.merge_lora_for_generation:  # LoRA layers to merge, whole weights on this process
            check_merge_for_generation(
                self.accelerator.unwrap_model(self.model), sharded=self.is_deepspeed_enabled or self.is_fsdp_enabled
            )
        if self.advantage_rule in RULE_CARDS and not self._process_slots:  # a published follow-up: its name, paper
            self._name, self._tag_names, self._paper = RULE_CARDS[self.advantage_rule]
        elif not (self.uses_gdpo or self._process_slots):  # GRPO's rule trains: the card says GRPO, as GRPOTrainer's
            self._name, self._tag_names, self._paper = GRPOTrainer._name, GRPOTrainer._tag_names, GRPOTrainer._paper
        self.model_card_base_model: str | None = None  # the name the user gave, for a model loaded from a folder
        # Markdown sections before the card's citations; a callable is called each time a card is written (its text
        # can then follow training: checkpoint cards, the card `save_model` pushes, the final one).
        self.model_card_notes: list = []
        self._scored_batch = None  # handed from _calculate_rewards to _generate_and_score_completions (one call)
        self._weight_schedule = None
        if args.reward_weights_final is not None:
            check_weight_schedule(args.reward_weights, args.reward_weights_final, len(self.reward_funcs))
            final = torch.tensor(args.reward_weights_final, dtype=torch.float32)
            self._weight_schedule = (self.reward_weights.clone(), final)
        if self._process_slots:
            logger.info(
                "GDPO with process rewards %s: token-level advantages.", [s.__name__ for _, s in self._process_slots]
            )
        elif self.uses_gdpo:
            logger.info("GDPO: %d rewards %s normalized per group.", len(self.reward_funcs), self.reward_func_names)
        elif len(self.reward_funcs) == 1 and args.multi_objective_aggregation in ("normalize_then_sum", "gd2po"):
            logger.warning(
                "GDPOTrainer has a single reward function (%s): %s reduces to GRPO then, so advantages are GRPO's "
                "with scale_rewards=%r, as in the paper's reference code.",
                self.reward_func_names[0],
                "GD2PO" if args.multi_objective_aggregation == "gd2po" else "GDPO",
                self.scale_rewards,
            )

    def _generate_single_turn(self, *args, **kwargs):
        # merge_lora_for_generation: TRL's generation, on the adapters merged into a copy of the weights;
        # fast_sampling: its sampled tokens drawn by fast_sampling's inverse CDF (the same distribution)
        model = self.accelerator.unwrap_model(self.model)
        merged = lora_merged_for_generation(model) if self.args.merge_lora_for_generation else nullcontext()
        with merged, exact_sampling(model) if self.args.fast_sampling else nullcontext():
            return super()._generate_single_turn(*args, **kwargs)

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """TRL's card (this trainer's name, tags and paper, TRL's citation beside it), then: the base model's name
        where TRL, given a local folder, names none; ``model_card_notes`` before the citations."""
        super().create_model_card(model_name=model_name, dataset_name=dataset_name, tags=tags)
        if self.is_world_process_zero():
            rewrite_card(self.args.output_dir, self.model_card_base_model, self.model_card_notes)

    @property
    def uses_gdpo(self) -> bool:
        """Whether advantages are built from each reward normalized within its group (GDPO and the rules that start
        from its per-reward terms); False for GRPO's rules, and always with a single reward."""
        return RULES[self.advantage_rule].per_reward == "normalized"

    @property
    def uses_gd2po(self) -> bool:
        """Whether advantages are GD2PO's (two or more rewards and ``gd2po``; :func:`gathered_completion_mask`)."""
        return self.advantage_rule == "gd2po"

    @property
    def whitens_tokens(self) -> bool:
        """Whether the rule whitens over every process's completion tokens (GD2PO, SAW's ``gdpo-h``), so each batch
        gathers the token counts (:func:`gathered_completion_mask`)."""
        return "completion_mask" in RULES[self.advantage_rule].options

    def compute_advantages(
        self, rewards: torch.Tensor, num_generations: int, completion_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Advantages from the rewards of every process's completions (gathered, in rank order).

        The hook TRL lacks: override it in a subclass and the returned advantages are what trains (each process
        keeps its own slice). Rows are grouped by prompt in runs of ``num_generations``; NaN means the reward
        does not apply. ``self.reward_weights`` holds the weights (``[K]``). Two cases:

        - Outcome rewards only: ``rewards`` is ``[N_global, K]``, ``completion_mask`` is not passed; return
          ``[N_global]``, one advantage per completion.
        - With a process reward: ``rewards`` is ``[N_global, K, T]``, NaN except where a step ends (a process reward's
          scored steps at their tokens; an outcome reward's value at the completion's last token), and
          ``completion_mask`` ``[N_global, T]`` is 1 on real completion tokens (T is the longest completion of all
          processes); return ``[N_global, T]``, one advantage per token (padding is ignored).
        """
        weights = self.reward_weights.to(rewards.device)
        if completion_mask is not None:
            if num_generations < 2:
                return torch.zeros(completion_mask.shape, device=rewards.device)
            return gdpo_token_advantages(
                rewards, weights, num_generations, completion_mask, batch_norm=self.args.gdpo_batch_norm
            )
        if num_generations < 2:  # only in evaluation with num_generations_eval=1: no group, no advantage
            return torch.zeros(rewards.shape[0], device=rewards.device)
        options = dict(self.advantage_options)
        if self.uses_gd2po:  # whitened over the kept tokens of every process's completions, as the reference
            options.update(threshold=self.args.gd2po_threshold, completion_mask=self._gd2po_mask)
            _, masked = gd2po_conflicts(rewards, weights, num_generations, **options)
            self._gd2po_keep = ~masked  # the rows it keeps, for the conflict metrics
        elif self.whitens_tokens:  # SAW's gdpo-h: whitened over the tokens, as verl's masked_whiten in its reference
            options.update(completion_mask=self._gd2po_mask)
        return rule_advantages(self.advantage_rule, rewards, weights, num_generations, **options)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # TRL keeps the gathered [N_global, K] matrix inside its long method; hand it, with this process's unpadded
        # completion ids (where process rewards' steps land), to the _generate_and_score_completions call running it.
        with self._reward_watch.scoring():  # the watch, not each wrapper, warns about a None/NaN batch
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._scored_batch = (rewards, completion_ids_list)
        return rewards

    def _tool_call_loop(self, *args, **kwargs):
        # TRL built this batch's per-rollout tool dicts just before: put each tool under watch, then run TRL's loop.
        self._tool_watch.wrap(self._sync_tool_dicts, self._async_tool_dicts)
        return super()._tool_call_loop(*args, **kwargs)

    def _take_scored_batch(self) -> tuple[torch.Tensor, list]:
        """The rewards and completion ids of this call's batch, cleared so that a stale batch is never used twice."""
        if self._scored_batch is None:
            raise RuntimeError(
                "GDPOTrainer: TRL's _generate_and_score_completions did not call _calculate_rewards; the TRL internals "
                "this trainer relies on have changed (see the module docstring)."
            )
        batch, self._scored_batch = self._scored_batch, None
        return batch

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        if self._weight_schedule is not None and mode == "train":
            self._step_reward_weights()
        output = super()._generate_and_score_completions(inputs)
        rewards, completion_ids = self._take_scored_batch()
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        # Every process, after its batch: the same decisions everywhere, warnings from the main process.
        self._reward_watch.settle(self.accelerator, rewards, len(inputs), num_generations, train=mode == "train")
        if self._tool_watch is not None:
            self._tool_watch.settle(self.accelerator, self._metrics[mode])
        if self._process_slots:
            self._token_advantages(output, rewards, completion_ids, num_generations, mode)
            return output

        self._gd2po_keep = None
        self._gd2po_mask = gathered_completion_mask(self.accelerator, output) if self.whitens_tokens else None
        advantages = self.compute_advantages(rewards, num_generations)
        if advantages.shape != (rewards.shape[0],) or not torch.isfinite(advantages).all():
            raise ValueError(
                f"{type(self).__name__}.compute_advantages must return finite advantages of shape "
                f"({rewards.shape[0]},), one per gathered completion; got shape {tuple(advantages.shape)}."
            )
        local = output["advantages"]
        start = self.accelerator.process_index * len(inputs)
        output["advantages"] = advantages[start : start + len(inputs)].to(device=local.device, dtype=local.dtype)
        self._replace_logged_advantages(advantages)
        self._log_reward_diagnostics(rewards, advantages, num_generations, mode)
        return output

    def _step_reward_weights(self) -> None:
        """Move ``self.reward_weights`` along the schedule (TRL reads them for its logged ``reward`` too)."""
        start, final = self._weight_schedule
        self.reward_weights = scheduled_weights(start, final, self.state.global_step, self.state.max_steps)
        for name, weight in zip(self.reward_func_names, self.reward_weights.tolist(), strict=True):
            self._metrics["train"][f"reward_weights/{name}"].append(weight)

    def _replace_logged_advantages(self, advantages: torch.Tensor) -> None:
        """Make the completions table show the advantages that train, not the ones TRL computed."""
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

    def _log_reward_diagnostics(self, rewards, advantages, num_generations: int, mode: str) -> None:
        if num_generations < 2:
            return
        computed = reward_diagnostics(
            rewards,
            advantages,
            self.reward_weights.to(rewards.device),
            self.reward_func_names,
            num_generations,
            gdpo=self.uses_gdpo,
            grpo_scale=self.scale_rewards,
            conflict_threshold=self.args.gd2po_threshold,
            completion_mask=self._gd2po_mask if self.uses_gd2po else None,
            keep=self._gd2po_keep,
            parts=rule_parts(
                self.advantage_rule,
                rewards,
                self.reward_weights.to(rewards.device),
                num_generations,
                {**self.advantage_options, **({"completion_mask": self._gd2po_mask} if self.whitens_tokens else {})},
            ),
        )
        self._append_diagnostics(computed, mode)

    def _append_diagnostics(self, computed: dict[str, float], mode: str) -> None:
        metrics = self._metrics[mode]
        # TRL appended its own frac_reward_zero_std for this call (0 or 1 under GDPO); replace it with ours.
        metrics["frac_reward_zero_std"][-1] = computed.pop("frac_reward_zero_std")
        for name, value in computed.items():
            metrics[name].append(value)

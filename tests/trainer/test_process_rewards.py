"""Process rewards: the marker, output checks, char-to-token mapping, tensors, and GDPOTrainer's token-level path
(one process here, two under torchrun in tests/helpers/process_two_process_check.py)."""

import functools
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.advantages import gdpo_token_advantages
from gdpo_trl.rewards.process import is_process_reward, process_reward
from gdpo_trl.trainer.process_rewards import (
    ProcessRewardSlot,
    attach_process_rewards,
    check_process_output,
    step_token_indices,
)
from gdpo_trl.trainer.token_rewards import assemble_token_rewards, completion_means, place_outcomes, step_rewards
from tests.helpers.recorders import TokenRecorder, char_steps, vary_lengths
from tests.helpers.toy import parity_reward, toy_config, toy_dataset

NAN = float("nan")


def _text(completion):
    return completion[0]["content"] if isinstance(completion, list) else completion


# --- the marker and output checks ---------------------------------------------------------------------------------


def test_marker_keeps_name_survives_partial_and_pickle():
    assert char_steps.is_process_reward and char_steps.__name__ == "char_steps"
    assert is_process_reward(functools.partial(char_steps, scale=2)) and not is_process_reward(parity_reward)
    assert process_reward(char_steps) is char_steps
    assert pickle.loads(pickle.dumps(char_steps))(completions=["abcdef"]) == [[(3, 1.0), (6, 0.0)]]


def test_attach_replaces_only_process_rewards():
    funcs, slots = attach_process_rewards([parity_reward, char_steps])
    assert funcs[0] is parity_reward and isinstance(funcs[1], ProcessRewardSlot)
    assert [(column, slot.__name__) for column, slot in slots] == [(1, "char_steps")]
    assert attach_process_rewards([parity_reward]) == ([parity_reward], [])


def test_slot_returns_mean_step_score_and_hands_steps_over_once():
    slot = ProcessRewardSlot(char_steps, "char_steps")
    assert slot(completions=["abcdef", "ab", "ccc"]) == [0.5, None, 1.0]  # 'c' is odd, 'f' even
    steps, texts = slot.take()
    assert steps == [[(3, 1.0), (6, 0.0)], [], [(3, 1.0)]] and texts == ["abcdef", "ab", "ccc"]
    with pytest.raises(RuntimeError, match="no steps"):
        slot.take()


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ([[(1, 1.0)]], "returned 1 entries for 2 completions"),
        ([0.5, None], "returned 0.5 for completion 0"),
        ([[(5, 1.0)], None], "returned step end 5 for completion 0 of 4 characters"),
        ([[(0, 1.0)], None], "returned step end 0"),
        ([[(True, 1.0)], None], "returned step end True"),
        ([[(2, NAN)], None], "returned score nan"),
        ([[(2, None)], None], "returned score None"),
        ([[(2,)], None], r"returned step \(2,\) for completion 0; use \(end, score\)"),
    ],
)
def test_bad_process_output_names_the_function(output, message):
    with pytest.raises(ValueError, match=f"Process reward 'steps' {message}"):
        check_process_output(output, ["abcd", "xy"], "steps")


def test_good_process_output_is_normalized():
    assert check_process_output([[(4, 1)], None], ["abcd", ""], "steps") == [[(4, 1.0)], []]


# --- char offsets to tokens ---------------------------------------------------------------------------------------


def test_step_token_indices_from_prefix_lengths():
    tokens = ["ab", "c", "de", ""]  # the last decodes to nothing, like a skipped EOS
    prefix = lambda m: len("".join(tokens[:m]))  # noqa: E731
    # char 0 and 1 are in token 0, char 2 in token 1, chars 3 and 4 in token 2.
    assert step_token_indices([1, 2, 3, 4, 5], len(tokens), prefix) == [0, 0, 1, 2, 2]
    with pytest.raises(ValueError, match="past the decoded completion"):
        step_token_indices([6], len(tokens), prefix)


def test_step_rewards_places_steps_and_merges_steps_in_one_token():
    vocab = {1: "ab", 2: "c", 3: "de"}
    decode = lambda ids: "".join(vocab[i] for i in ids)  # noqa: E731
    steps = [[(1, 1.0), (2, 0.0), (5, 1.0)], []]
    tensor = step_rewards(steps, [[1, 2, 3], [2]], 4, decode)
    expected = torch.tensor([[0.5, NAN, 1.0, NAN], [NAN, NAN, NAN, NAN]])
    torch.testing.assert_close(tensor, expected, equal_nan=True)


def test_place_outcomes_and_assemble():
    outcomes = torch.tensor([[1.0, 9.0], [0.0, 9.0]])
    lengths = torch.tensor([3, 1])
    placed = place_outcomes(outcomes, lengths, 4)
    assert placed[0, 0, 2] == 1.0 and placed[1, 0, 0] == 0.0 and torch.isnan(placed).sum() == 12
    process = torch.full((2, 1, 4), NAN)
    process[0, 0, 1] = 0.5
    full = assemble_token_rewards(outcomes, process, [1], lengths)
    torch.testing.assert_close(full[:, 1], process[:, 0], equal_nan=True)  # the placeholder 9.0 is gone
    torch.testing.assert_close(full[:, 0], placed[:, 0], equal_nan=True)


def test_completion_means_skip_padding():
    advantages = torch.tensor([[1.0, 3.0, 7.0], [2.0, 0.0, 0.0]])
    assert completion_means(advantages, torch.tensor([[1, 1, 0], [1, 0, 0]])).tolist() == [2.0, 2.0]


# --- GDPOTrainer --------------------------------------------------------------------------------------------------


def reference_advantages(tokenizer, ids, texts, outcomes, weights, num_generations, **kwargs):
    """Token advantages of a whole batch built in one process, independently of the trainer's mapping: each token
    decoded alone (one character, a tag, or nothing for a special token) gives the character offsets."""
    width = max(len(row) for row in ids)
    rewards = torch.full((len(ids), 2, width), NAN)
    for i, (row, text) in enumerate(zip(ids, texts, strict=True)):
        pieces = [tokenizer.decode([t], skip_special_tokens=True) for t in row]
        assert "".join(pieces) == text
        ends = [sum(len(p) for p in pieces[: j + 1]) for j in range(len(row))]
        rewards[i, 0, len(row) - 1] = outcomes[i, 0]
        by_token = {}  # steps ending in one token (e.g. inside "</think>") are merged: their mean
        for end, score in char_steps(completions=[text])[0] or []:
            by_token.setdefault(next(j for j, e in enumerate(ends) if e >= end), []).append(score)
        for j, scores in by_token.items():
            rewards[i, 1, j] = sum(scores) / len(scores)
    mask = torch.tensor([[int(j < len(row)) for j in range(width)] for row in ids])
    return gdpo_token_advantages(rewards, weights, num_generations, mask, **kwargs), mask


def test_trainer_trains_on_token_advantages_and_logs_one_number_per_completion(tiny_model_path, tmp_path, monkeypatch):
    recorder = TokenRecorder(monkeypatch)
    vary_lengths(monkeypatch)
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, char_steps],
        args=toy_config(tmp_path, reward_weights=[1.0, 0.5]),
        train_dataset=toy_dataset(),
    )
    trainer.train()
    recorder.assert_batches(2)
    for ids, texts, outcomes, trained in zip(
        recorder.ids, recorder.texts, recorder.rewards, recorder.advantages, strict=True
    ):
        expected, mask = reference_advantages(trainer.processing_class, ids, texts, outcomes, [1.0, 0.5], 4)
        assert trained.shape == (8, max(len(row) for row in ids))
        torch.testing.assert_close(trained, expected)
        assert trained[mask == 0].abs().sum() == 0 and trained[mask == 1].abs().sum() > 0
    # The completions table: one advantage per completion, its mean over valid tokens; the process reward's column
    # is the mean step score (NaN without steps).
    torch.testing.assert_close(torch.tensor(list(trainer._logs["advantages"]))[-8:], completion_means(expected, mask))
    step_means = [
        (sum(s for _, s in steps) / len(steps)) if steps else NAN
        for steps in (char_steps(completions=[t])[0] for t in recorder.texts[-1])
    ]
    logged = list(trainer._logs["rewards"]["char_steps"])[-8:]
    torch.testing.assert_close(torch.tensor(logged), torch.tensor(step_means), equal_nan=True)
    last = trainer.state.log_history[1]
    num_steps = sum(len(char_steps(completions=[t])[0] or []) for t in recorder.texts[-1])
    assert last["rewards/char_steps/steps_per_completion"] == pytest.approx(num_steps / 8)
    assert last["rewards/char_steps/advantage_share"] + last["rewards/parity_reward/advantage_share"] == pytest.approx(
        1
    )
    assert 0 <= last["rewards/char_steps/step_mean"] <= 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"importance_sampling_level": "sequence"}, "importance_sampling_level='sequence'"),
        ({"loss_type": "vespo"}, "loss_type='vespo'"),
        ({"off_policy_mask_threshold": 0.5}, "off_policy_mask_threshold=0.5"),
        ({"multi_objective_aggregation": "sum_then_normalize"}, "multi_objective_aggregation='sum_then_normalize'"),
        ({"reward_conditions": {"parity_reward": "char_steps"}}, "involves a process reward"),
    ],
)
def test_settings_that_need_sequence_advantages_are_refused(tiny_model_path, tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        GDPOTrainer(
            tiny_model_path,
            reward_funcs=[parity_reward, char_steps],
            args=toy_config(tmp_path, **overrides),
            train_dataset=toy_dataset(),
        )


def test_hook_must_return_token_advantages(tiny_model_path, tmp_path):
    class PerCompletion(GDPOTrainer):
        def compute_advantages(self, rewards, num_generations, completion_mask=None):
            return torch.zeros(rewards.shape[0])

    trainer = PerCompletion(
        tiny_model_path,
        reward_funcs=[parity_reward, char_steps],
        args=toy_config(tmp_path),
        train_dataset=toy_dataset(),
    )
    with pytest.raises(ValueError, match="finite token advantages of shape"):
        trainer.train()


def test_two_processes_get_the_advantages_of_one_process(tiny_model_path, tmp_path):
    """torchrun --nproc_per_node 2 on CPU: completions padded to different widths per rank; each rank's advantages
    are its rows of the whole batch's advantages computed in one process."""
    env = {**os.environ, "GDPO_TEST_MODEL": tiny_model_path, "GDPO_TEST_OUT": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29531"]
    script = root / "tests" / "helpers" / "process_two_process_check.py"
    result = subprocess.run([*command, str(script)], env=env, cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    trainer_tokenizer = __import__("transformers").AutoTokenizer.from_pretrained(tiny_model_path)
    for step in range(2):
        ids = ranks[0]["ids"][step] + ranks[1]["ids"][step]
        texts = ranks[0]["texts"][step] + ranks[1]["texts"][step]
        outcomes = torch.tensor(ranks[0]["rewards"][step])
        expected, _ = reference_advantages(trainer_tokenizer, ids, texts, outcomes, [1.0, 1.0], 4)
        widths = [len(ranks[r]["advantages"][step][0]) for r in range(2)]
        assert widths[0] != widths[1]  # the ranks really padded differently
        for rank in range(2):
            trained = torch.tensor(ranks[rank]["advantages"][step])
            torch.testing.assert_close(trained, expected[rank * 8 : (rank + 1) * 8, : widths[rank]])
            assert expected[rank * 8 : (rank + 1) * 8, widths[rank] :].abs().sum() == 0


def test_text_that_is_not_the_decoded_ids_is_refused():
    from gdpo_trl.trainer.token_rewards import check_decoded_texts

    decode = lambda ids: "".join(map(str, ids))  # noqa: E731
    check_decoded_texts(["12", "3"], [[1, 2], [3]], decode, "steps")
    with pytest.raises(ValueError, match="Process reward 'steps': completion 1's text is not its decoded token ids"):
        check_decoded_texts(["12", "parsed"], [[1, 2], [3]], decode, "steps")


def test_a_process_reward_with_no_step_in_a_batch_warns_once():
    """As outcome rewards do (reward_checks): all None for a whole batch is named, once."""
    import warnings

    @process_reward
    def never_applies(completions, **kwargs):
        return [None] * len(completions)

    slot = ProcessRewardSlot(never_applies, "never_applies")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert slot(completions=["a", "b"]) == [None, None]
        slot(completions=["c"])
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "'never_applies' scored no step in any of the 2 completions" in messages[0]

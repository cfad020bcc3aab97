"""Process-reward steps to tokens (gdpo_trl.trainer.token_offsets + step_token_indices): checked against Qwen2.5's own offset
mapping on seeded random texts, on generated-style ids that are not the tokenizer's encoding of their text, on
arbitrary ids, on the demo's character-level tokenizer and on a tokenizer that is not byte-level."""

import random
import unicodedata

import pytest
import torch

from gdpo_trl.trainer.process_rewards import ProcessRewardSlot, step_token_indices
from gdpo_trl.trainer.token_offsets import LazyCharEnds, byte_level_char_ends, token_char_ends
from gdpo_trl.trainer.token_rewards import local_step_rewards

CASES = 1000
PIECES = [
    *"abcxyzABC0123456789",
    *" .,;:!?=+-*/()",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "ß",
    "毕",
    "老",
    "师",
    "é",
    "😀",
    "👍🏽",
    "𝔘",
    "鿰",
    "ŉ",
    " the",
    " answer",
    "Straße",
    "1,080",
    "<think>",
    "</answer>",
]
SPECIAL = ["<|im_end|>", "<|endoftext|>", "<|im_start|>"]  # dropped by skip_special_tokens
ADDED = ["<tool_call>", "</tool_call>"]  # kept


@pytest.fixture(scope="module")
def qwen(model_cache):
    from gdpo_trl.models.qwen import qwen_tokenizer

    return qwen_tokenizer()


def random_segments(rng: random.Random) -> list[str]:
    """Text pieces; special and added tokens appear as pieces of their own."""
    segments = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        pool = SPECIAL if roll < 0.05 else ADDED if roll < 0.1 else PIECES
        segments.append(rng.choice(pool))
    return [unicodedata.normalize("NFC", s) for s in segments]


def encode_with_owners(tokenizer, segments: list[str], split: bool):
    """Token ids for ``segments`` (each encoded alone when ``split``, so ids differ from encoding the whole text),
    the decoded text, for each decoded character the index of the token that completes it, from the tokenizer's
    own offset mapping (the last token whose span covers the character), and how many characters span tokens."""
    chunks = segments if split else ["".join(segments)]
    ids, owners_by_position, position, covered = [], {}, 0, {}
    for chunk in chunks:
        encoding = tokenizer(chunk, add_special_tokens=False, return_offsets_mapping=True)
        for token, (start, end) in zip(encoding["input_ids"], encoding["offset_mapping"], strict=True):
            if token not in tokenizer.all_special_ids:
                for offset in range(start, end):
                    owners_by_position[position + offset] = len(ids)
                    covered[position + offset] = covered.get(position + offset, 0) + 1
            ids.append(token)
        position += len(chunk)
    source = "".join(chunks)
    text = tokenizer.decode(ids, skip_special_tokens=True)
    owners = [owners_by_position[p] for p in sorted(owners_by_position)]
    assert "".join(source[p] for p in sorted(owners_by_position)) == text
    return ids, text, owners, sum(count > 1 for count in covered.values())


def check_against_owners(ids, text, owners, ends):
    assert len(ends) == len(ids) and (not ends or ends[-1] == len(text))
    assert all(a <= b for a, b in zip(ends, ends[1:], strict=False))
    steps = list(range(1, len(text) + 1))  # a step ending after every character
    assert step_token_indices(steps, len(ids), ends) == owners


@pytest.mark.parametrize("split", [False, True], ids=["own-encoding", "piecewise-encoding"])
def test_matches_qwen_offset_mapping(qwen, split):
    rng = random.Random(1234 + split)
    mismatches, split_characters, pieces = [], 0, 0
    for case in range(CASES):
        segments = random_segments(rng)
        ids, text, owners, spanning = encode_with_owners(qwen, segments, split)
        split_characters += spanning
        pieces += ids != qwen.encode("".join(segments))
        ends = byte_level_char_ends(ids, qwen, text)
        assert ends is not None, "the fast way must apply to Qwen's tokenizer"
        try:
            check_against_owners(ids, text, owners, ends)
        except AssertionError:
            mismatches.append((case, text))
    assert not mismatches, mismatches[:3]
    assert split_characters > 100  # characters spelled by several tokens, where the old mapping was off
    assert pieces > 100 if split else pieces == 0  # how often the ids are not the tokenizer's encoding of the text


def test_characters_byte_by_byte(qwen):
    """A generated sequence may spell a character one byte per token: it belongs to the token of its last byte."""
    from gdpo_trl.trainer.token_offsets import bytes_to_unicode

    symbols = bytes_to_unicode()
    rng = random.Random(7)
    for _ in range(200):
        chars = [rng.choice(["ß", "毕", "😀", "a", " ", "𝔘", "é"]) for _ in range(rng.randint(1, 12))]
        ids, owners = [], []
        for char in chars:
            if rng.random() < 0.5:
                ids += qwen.convert_tokens_to_ids([symbols[b] for b in char.encode()])
            else:
                ids += qwen.encode(char)
            owners.append(len(ids) - 1)
        text = qwen.decode(ids)
        assert text == "".join(chars)
        check_against_owners(ids, text, owners, token_char_ends(ids, qwen))


def test_arbitrary_ids_agree_with_prefix_decoding(qwen):
    """Random ids (partial characters, invalid UTF-8, special tokens, ids past the vocabulary): the fast way against
    the slow exact one (a character is complete once a decoded prefix shows it as in the full text)."""
    rng = random.Random(99)
    byte_tokens = qwen.convert_tokens_to_ids(list(_alphabet()))
    pool = byte_tokens + list(range(151643, 151665)) + [151700, 151935] + list(range(0, 151643, 997))

    def decode(part):
        return qwen.decode(part, skip_special_tokens=True)

    for _ in range(300):
        ids = [rng.choice(pool) for _ in range(rng.randint(1, 25))]
        text = decode(ids)
        fast = byte_level_char_ends(ids, qwen, text)
        slow = token_char_ends(ids, decode=decode, text=text)
        assert fast is not None and fast[-1] == len(text)
        steps = list(range(1, len(text) + 1))
        fast_owners = step_token_indices(steps, len(ids), fast)
        slow_owners = step_token_indices(steps, len(ids), slow)
        for k, (a, b) in enumerate(zip(fast_owners, slow_owners, strict=True)):
            # U+FFFD for invalid bytes is counted once the decoder knows the bytes are invalid: never earlier.
            assert a == b if text[k] != "\ufffd" else a >= b, (ids, k)


def _alphabet():
    from gdpo_trl.trainer.token_offsets import bytes_to_unicode

    return bytes_to_unicode().values()


def test_demo_character_tokenizer():
    from gdpo_trl.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    rng = random.Random(5)
    for _ in range(200):
        text = "".join(
            rng.choice(["a", "7", " ", "\n", "<think>", "</answer>", "=", "x", "<|im_end|>"]) for _ in range(30)
        )
        ids = tokenizer.encode(text)
        decoded = tokenizer.decode(ids, skip_special_tokens=True)
        owners = [j for j, token in enumerate(ids) for _ in tokenizer.decode([token], skip_special_tokens=True)]
        assert len(owners) == len(decoded)
        ends = byte_level_char_ends(ids, tokenizer, decoded)
        assert ends is not None
        check_against_owners(ids, decoded, owners, ends)


def test_tokenizer_that_is_not_byte_level():
    """A Metaspace tokenizer (SentencePiece-style): tokens decoded alone lose their leading space, so the
    per-token way fails its check and the lazy prefix way answers."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "▁hello": 1, "▁world": 2, "!": 3, "▁wor": 4, "ld": 5}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    ids = [1, 4, 5, 3]
    assert tokenizer.decode(ids) == "hello world!"
    ends = token_char_ends(ids, tokenizer)
    assert isinstance(ends, LazyCharEnds)
    assert step_token_indices([5, 6, 9, 10, 11, 12], len(ids), ends) == [0, 1, 1, 2, 2, 3]
    assert list(ends) == [5, 9, 11, 12]


def test_local_step_rewards_puts_a_split_character_on_its_last_token(qwen):
    ids = [6567, 107, 243, 101049, 151645]  # " 毕" in three byte tokens, "老师", <|im_end|>
    text = qwen.decode(ids, skip_special_tokens=True)
    assert text == " 毕老师"
    slot = ProcessRewardSlot(lambda completions, **kwargs: [[(2, 1.0), (4, 0.0)]], "steps")
    slot(completions=[text])
    rewards, totals = local_step_rewards([slot], [ids], 6, qwen)
    expected = torch.tensor([[[torch.nan, torch.nan, 1.0, 0.0, torch.nan, torch.nan]]])
    torch.testing.assert_close(rewards, expected, equal_nan=True)
    assert totals.tolist() == [[2.0, 1.0]]


def test_past_the_end_and_empty():
    with pytest.raises(ValueError, match="past the decoded completion"):
        step_token_indices([4], 2, [1, 3])
    with pytest.raises(ValueError, match="past the decoded completion"):
        step_token_indices([1], 0, [])
    assert step_token_indices([], 0, []) == []

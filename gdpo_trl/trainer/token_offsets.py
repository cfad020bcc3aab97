"""Where each generated token's text ends: cumulative character counts of a decoded completion.

``token_char_ends(ids, tokenizer)[j]`` is the number of characters of ``tokenizer.decode(ids,
skip_special_tokens=True)`` that tokens ``0..j`` complete. A character whose UTF-8 bytes are split across tokens
(byte-level BPE splits rare CJK characters and emoji) belongs to the token holding its last byte: the one that
completes it. Tokens that decode to nothing (special tokens, ids past the vocabulary) complete no character.
Process rewards use it to put a step ending at character ``end`` on the first token ``j`` with
``ends[j] >= end`` (:func:`gdpo_trl.rewards.process.step_token_indices`).

It works on the generated ids as they are, which need not be the tokenizer's own encoding of their text (sampling
can produce ``"a" "b"`` where encoding gives ``"ab"``, or a character byte by byte). Three ways, each checked
against the decoded text, the first that reproduces it exactly wins:

1. Byte-level tokenizers (Qwen, GPT-2, Llama 3 and the demo's): each token's bytes from the vocabulary (cached per
   tokenizer). For valid UTF-8 the ends are counted from the lead bytes, vectorized; otherwise an incremental UTF-8
   decoder is fed token by token. Linear in the tokens: about 0.1 ms for a 1,024-token completion.
2. Any tokenizer whose tokens decoded one at a time concatenate to the text (one decode call per token).
3. Otherwise, lazily: ``ends[j]`` is the length of the common prefix of ``decode(ids[:j + 1])`` and the text,
   computed only where a binary search looks (``O(log T)`` prefix decodes per step, as before).

A U+FFFD that stands for invalid bytes is counted where the UTF-8 decoder emits it: at the token whose byte shows
the sequence is invalid (or the last token, for a completion cut off inside a character).
"""

from __future__ import annotations

import codecs
import weakref
from collections.abc import Callable, Sequence

_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def token_char_ends(
    ids: Sequence[int],
    tokenizer=None,
    *,
    text: str | None = None,
    decode: Callable[[list[int]], str] | None = None,
) -> Sequence[int]:
    """Cumulative character counts of ``ids``' decoded text, one per token (see the module docstring).

    ``tokenizer`` (a transformers tokenizer) or ``decode`` (``ids -> text``, as the reward functions saw it) must be
    given; ``decode`` defaults to ``tokenizer.decode(ids, skip_special_tokens=True)``, ``text`` to ``decode(ids)``.
    Returns a list, or (way 3) a lazy sequence that ``bisect`` can search.
    """
    ids = list(ids)
    if decode is None:
        if tokenizer is None:
            raise ValueError("token_char_ends needs a tokenizer or a decode function.")
        decode = lambda part: tokenizer.decode(part, skip_special_tokens=True)  # noqa: E731
    if text is None:
        text = decode(ids)
    if tokenizer is not None:
        ends = byte_level_char_ends(ids, tokenizer, text)
        if ends is not None:
            return ends
    pieces = [decode([token]) for token in ids]
    if "".join(pieces) == text and "\ufffd" not in text:
        return _cumulative(pieces)
    return LazyCharEnds(len(ids), lambda j: _common_prefix(decode(ids[: j + 1]), text))


class LazyCharEnds(Sequence):
    """A read-only sequence of ``length`` values ``value(j)``, each computed on first access and kept: what a
    bisection over costly values (prefix decodes) needs."""

    def __init__(self, length: int, value: Callable[[int], int]):
        self.length, self.value, self.cache = length, value, {}

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, j):
        if isinstance(j, slice) or not -self.length <= j < self.length:
            raise IndexError(j)
        j %= self.length
        if j not in self.cache:
            self.cache[j] = self.value(j)
        return self.cache[j]


def byte_level_char_ends(ids: Sequence[int], tokenizer, text: str) -> list[int] | None:
    """Way 1 of the module docstring, or ``None`` when ``tokenizer`` is not byte-level or the bytes of ``ids`` do
    not decode to ``text`` (so the caller falls back to a slower way)."""
    table = _byte_table(tokenizer)
    if table is None:
        return None
    known, missing = table
    pieces = [known.get(token) for token in ids]
    for j, piece in enumerate(pieces):
        if piece is None:
            pieces[j] = missing(ids[j])
    data = b"".join(pieces)
    decoded = data.decode("utf-8", "replace")
    if decoded != text:
        return None
    if "\ufffd" in decoded:  # invalid or cut-off UTF-8 somewhere: let the incremental decoder place each U+FFFD
        return _incremental_ends(pieces)
    # Valid UTF-8: a character ends where the next lead (non-continuation) byte starts, or at the end. With a lead
    # byte appended, the characters complete within the first p bytes are the lead bytes among the first p + 1,
    # less the first one.
    import numpy as np

    leads = np.frombuffer(data + b"\0", dtype=np.uint8) & 0xC0 != 0x80
    within = np.cumsum(leads)
    byte_ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    return (within[byte_ends] - 1).tolist()


def _incremental_ends(pieces: Sequence[bytes]) -> list[int]:
    """Character ends from an incremental UTF-8 decoder fed token by token (as ``bytes.decode(errors="replace")``
    of the whole): each token gets what the decoder emits after its bytes; a cut-off tail goes to the last token."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    ends, count = [], 0
    for piece in pieces:
        count += len(decoder.decode(piece))
        ends.append(count)
    if ends:
        ends[-1] += len(decoder.decode(b"", final=True))
    return ends


def _byte_table(tokenizer):
    """``(pieces, missing)`` for a byte-level tokenizer: ``pieces`` caches each token id's bytes as decoding
    (with special tokens skipped) sees them; ``missing(id)`` fills it in. ``None`` for other tokenizers."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        from tokenizers import decoders
    except ImportError:  # pragma: no cover - transformers needs tokenizers
        return None
    if backend is None or not isinstance(backend.decoder, decoders.ByteLevel):
        return None
    size = backend.get_vocab_size(with_added_tokens=True)
    try:
        cached = _TABLES.get(tokenizer)
    except TypeError:  # not weak-referenceable or hashable: no cache
        cached = None
    if cached is not None and cached[0] == size:
        return cached[1]
    special = {i for i, token in backend.get_added_tokens_decoder().items() if token.special}
    to_byte = {char: byte for byte, char in bytes_to_unicode().items()}
    pieces: dict[int, bytes] = {}

    def missing(token: int) -> bytes:
        name = None if token in special else backend.id_to_token(token)
        if name is None:  # skipped, or past the vocabulary: decoding drops it
            piece = b""
        else:  # the byte-level decoder maps each character to its byte; a token with any other character stays as is
            try:
                piece = bytes(to_byte[char] for char in name)
            except KeyError:
                piece = name.encode()
        pieces[token] = piece
        return piece

    table = (pieces, missing)
    try:
        _TABLES[tokenizer] = (size, table)
    except TypeError:
        pass
    return table


def bytes_to_unicode() -> dict[int, str]:
    """The byte-level alphabet (GPT-2's): printable Latin-1 bytes stand for themselves, the other 68 bytes for the
    characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def _cumulative(pieces: Sequence[str]) -> list[int]:
    ends, count = [], 0
    for piece in pieces:
        count += len(piece)
        ends.append(count)
    return ends


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high:  # a[:low] == b[:low] and a[:high] != b[:high]
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low

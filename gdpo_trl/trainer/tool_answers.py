"""What a tool may answer, checked before the model reads it.

TRL 1.16 feeds a tool's result to the chat template as ``str(result)``, except a list, which it passes through as
multimodal content blocks. So a tool returning ``None`` or an object reached the model as ``'None'`` or
``'<object object at 0x...>'`` (a different text every run, and nothing said), and one returning a plain list crashed
the chat template 76 lines later (``TypeError: can only concatenate str``). Here:

- a string, a number, a bool and a JSON-serializable dict pass unchanged (TRL renders them as before);
- a list of content blocks (dicts with a ``type``, TRL's multimodal answer) passes unchanged; any other
  JSON-serializable list is converted to its JSON text, with a one-time warning saying so: the model can read it, and
  the text is the same every run;
- anything else (``None``, an object, a dict or list holding one) is refused: there is no text that says what the
  tool meant, so the call fails and training stops after the batch in one line naming the tool and the type
  (:class:`~gdpo_trl.trainer.tool_watch.ToolWatch`), rather than training on a placeholder.
"""

from __future__ import annotations

import json
import warnings


class ToolAnswerError(TypeError):
    """A tool answered with something the model cannot read (the message names the tool and the type)."""


def json_text(value) -> str | None:
    """``value`` as JSON text, or None when it is not JSON-serializable."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return None


def content_blocks(value: list) -> bool:
    return bool(value) and all(isinstance(part, dict) and "type" in part for part in value)


def readable_answer(name: str, value, converted: set[str]):
    """The answer of tool ``name`` as the model will read it; ``converted``: tools already warned about (updated)."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict) and json_text(value) is not None:
        return value
    if isinstance(value, list) and content_blocks(value):
        return value
    if isinstance(value, (list, tuple)) and (text := json_text(list(value))) is not None:
        if name not in converted:
            converted.add(name)
            warnings.warn(
                f"Tool '{name}' returned a {type(value).__name__}: the model reads it as its JSON text (e.g. "
                f"{text[:60]}). Return a string to choose the text yourself. Warned once per tool.",
                UserWarning,
                stacklevel=3,
            )
        return text
    raise ToolAnswerError(
        f"tool '{name}' returned {type(value).__name__}, which the model cannot read: a tool must return a string "
        "or a JSON-serializable value (dict, list, number, bool)"
    )

"""Right answers to BFCL entries, built from BFCL's possible answers, in the tool-calling task's completion format.

BFCL's possible answer for an entry is a list of calls ``{function_name: {parameter: [options...]}}``. Each option is
a value, except that ``""`` means "may be left out", and that options can nest: a dictionary parameter's option is
``{key: [options...]}``, and a list-of-dictionaries parameter's option is a list of such dictionaries. A rendering
resolves every option list the same way at every depth:

- ``keep_optional=True``: the first option that is not ``""``; a parameter whose only option is ``""`` is left out.
- ``keep_optional=False``: left out wherever ``""`` is an option, else the first option.

:func:`answer_completion` writes the result as a completion of the tool-calling task (``<think>`` then a
``<tool_call>`` block, one ``{"name", "parameters"}`` JSON object per line), which
:func:`gdpo_trl.eval.bfcl.score_completion` scores exactly like a model's. Useful to check the evaluation pipeline
end to end (every BFCL entry has a rendering its checker accepts), or as a gold baseline. Stdlib-only.
"""

from __future__ import annotations

import json

__all__ = ["answer_calls", "answer_completion", "render_completion"]

_OMIT = object()  # a resolved option list that leaves its parameter (or dictionary key) out


def _choose(options: list, keep_optional: bool):
    """One value from an option list (resolved recursively), or ``_OMIT``."""
    if not isinstance(options, list):
        raise ValueError(f"expected a list of options, got {options!r}")
    concrete = [option for option in options if option != ""]
    if not concrete or (not keep_optional and len(concrete) < len(options)):
        return _OMIT
    return _resolve(concrete[0], keep_optional)


def _resolve(value, keep_optional: bool):
    """A chosen option as a plain value: nested ``{key: [options]}`` dictionaries (and lists of them) resolved."""
    if isinstance(value, dict):
        return _resolve_mapping(value, keep_optional)
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [_resolve_mapping(item, keep_optional) for item in value]
    return value


def _resolve_mapping(mapping: dict, keep_optional: bool) -> dict:
    chosen = {key: _choose(options, keep_optional) for key, options in mapping.items()}
    return {key: value for key, value in chosen.items() if value is not _OMIT}


def answer_calls(entry: dict, *, keep_optional: bool = True) -> list[dict]:
    """The calls ``[{"name", "parameters"}]`` of one rendering of ``entry["possible_answer"]`` (see the module doc).

    ``entry`` is what :func:`gdpo_trl.eval.bfcl.load_category` returns. Raises ``ValueError`` for a possible answer
    that is not a list of one-key ``{function: {parameter: [options]}}`` mappings.
    """
    calls = []
    for call in entry["possible_answer"]:
        if not isinstance(call, dict) or len(call) != 1:
            raise ValueError(
                f"BFCL entry {entry.get('id')}: a possible call must be one {{name: params}}, got {call!r}"
            )
        ((name, params),) = call.items()
        if not isinstance(params, dict):
            raise ValueError(f"BFCL entry {entry.get('id')}: parameters of {name!r} are not a mapping: {params!r}")
        calls.append({"name": name, "parameters": _resolve_mapping(params, keep_optional)})
    return calls


def render_completion(calls: list[dict], think: str = "I will call the tools.") -> str:
    """``calls`` as a completion of the tool-calling task: a ``<think>`` block, then the ``<tool_call>`` block."""
    lines = "\n".join(json.dumps(call, ensure_ascii=False) for call in calls)
    return f"<think>{think}</think>\n<tool_call>\n{lines}\n</tool_call>"


def answer_completion(entry: dict, *, keep_optional: bool = True) -> str:
    """:func:`render_completion` of :func:`answer_calls`: a completion BFCL's checker should accept for ``entry``."""
    return render_completion(answer_calls(entry, keep_optional=keep_optional))

"""Two rewards for examples/your_task/prompts.jsonl, on different scales (docs/your_task.md).

Each has TRL's reward signature: keyword arguments, one float per completion. Every dataset column other than
`prompt` arrives by name (`color` here), as a list with one entry per completion.
"""


def says_color(completions, color, **kwargs):
    """1.0 when the answer names the row's colour, else 0.0."""
    pairs = zip(completions, color, strict=True)  # one colour per completion: a mismatch is a bug, not a 0
    return [1.0 if c.lower() in completion[0]["content"].lower() else 0.0 for completion, c in pairs]


def brevity(completions, **kwargs):
    """From 3.0 for an empty answer down to 0.0 at 80 characters or more: a reward on another scale."""
    return [3.0 * max(0.0, 1.0 - len(completion[0]["content"]) / 80) for completion in completions]

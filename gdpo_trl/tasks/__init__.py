"""The study tasks: generated word problems, the tool-calling and multi-turn agent tasks, their held-out splits, the
flawed traces their warm starts are trained on, and the data sources that name them (``--dataset_name warmstart``).

A plugin on top of the package: nothing below imports it; :mod:`gdpo_trl.data.sources` reaches it through the entry
points in pyproject.toml.
"""

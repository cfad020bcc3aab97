"""The built-in models behind ``builtin:NAME``: tiny random models, Qwen2.5-shaped ones, the tasks' SFT warm starts
(shipped with the package, rebuilt on demand) and, where its package is installed, SmolLM2 from its GGUF file.

A plugin on top of the package: :func:`gdpo_trl.core.plugins.resolve_model` reaches it through entry points.
"""

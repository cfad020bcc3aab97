"""The studies of docs/results/: their runners and analyses, outside the library (the wheel holds none of it).

Run from the repository's root, where ``studies`` is importable: ``python -m studies.seed_study --task <task> ...``,
``python -m studies.qwen_runner run --data DATA``. What they build on stays in the package: ``gdpo_trl.results``
(training logs, ``gdpo compare``, the statistics, plots) and the ``gdpo`` commands the runners call.
"""

"""The source of the figures docs/results/README.md states from H8's and H9's secondary reading
(docs/results/second_reading.json and .md, which tests/studies/test_second_reading.py recomputes byte for byte from
the committed evaluations)."""

from __future__ import annotations

from tests.helpers.figure_real_sources import analysis_text


def second_reading(tmp) -> str:
    """The secondary reading's tables and every number of its analysis, one a line."""
    return analysis_text("second_reading")

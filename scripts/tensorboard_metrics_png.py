"""Render GDPO's per-reward metrics as TensorBoard recorded them: the picture in README's "What it logs".

    gdpo train --config cpu/gdpo --report_to tensorboard --output_dir outputs/cpu-gdpo-tensorboard
    python scripts/tensorboard_metrics_png.py outputs/cpu-gdpo-tensorboard docs/images/tensorboard_metrics.png

Reads the run's ``runs/*/events.out.tfevents.*`` back with TensorBoard's own reader (what its dashboard shows) and
draws three panels: each reward's ``advantage_share``, each reward's ``frac_zero_std``, and
``advantages/distinct_per_group`` under GDPO next to ``..._grpo`` on the same rewards. Also prints every scalar
tag found, so the names in the docs can be checked against a real run.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(run_dir: str, out: str) -> None:
    from matplotlib.figure import Figure
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = sorted(Path(run_dir).glob("runs/*/events.out.tfevents.*"))
    if not events:
        raise SystemExit(f"no TensorBoard events under {run_dir}/runs: train with --report_to tensorboard")
    logged = EventAccumulator(str(events[-1])).Reload()
    tags = sorted(logged.Tags()["scalars"])
    print("\n".join(tags))

    def series(tag):
        points = logged.Scalars(tag)
        return [p.step for p in points], [p.value for p in points]

    rewards = sorted(
        {t.split("/")[2] for t in tags if t.startswith("train/rewards/") and t.endswith("/advantage_share")}
    )
    figure = Figure(figsize=(13, 3.6), layout="constrained")
    panels = figure.subplots(1, 3)
    for name in rewards:
        panels[0].plot(*series(f"train/rewards/{name}/advantage_share"), label=name)
        panels[1].plot(*series(f"train/rewards/{name}/frac_zero_std"), label=name)
    panels[2].plot(*series("train/advantages/distinct_per_group"), label="GDPO (used)")
    panels[2].plot(*series("train/advantages/distinct_per_group_grpo"), label="GRPO, same rewards")
    titles = ["train/rewards/<name>/advantage_share", "train/rewards/<name>/frac_zero_std", "train/advantages/..."]
    for panel, title in zip(panels, titles, strict=True):
        panel.set_title(title, fontsize=10)
        panel.set_xlabel("step")
        panel.legend(fontsize=8)
    panels[2].set_ylabel("distinct advantage values per group")
    figure.suptitle(f"What TensorBoard recorded: {Path(run_dir).name}", fontsize=11)
    figure.savefig(out, dpi=90)
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="the run's output_dir (trained with --report_to tensorboard)")
    parser.add_argument("out", help="the PNG to write")
    args = parser.parse_args()
    main(args.run_dir, args.out)

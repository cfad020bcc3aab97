"""Which sources back which figures (tests/docs/test_figures.py applies it): per file and section, the sources that
recompute its figures, the tables whose rows come whole from a source, and each file's design values.

A file is a regular expression matched against the whole path: the README's long sections move to docs/ pages, so
their entries name both (:data:`PAGE`). A section is a regular expression searched in the headings above a figure.
"""

from __future__ import annotations

from tests.helpers.figure_printed import demo_printout
from tests.helpers.figure_real_sources import (
    h8_study,
    h9_audit,
    h9_pilot,
    h9_study,
    real_model_counts,
    real_model_steps,
)
from tests.helpers.figure_rules_sources import h10_shares, h10_study
from tests.helpers.figure_second_reading import second_reading
from tests.helpers.figure_sources import (
    advantage_groups,
    advantage_rows,
    agent_demo,
    bad_input_cases,
    compare_demo,
    cross_cpu,
    demo_shipped,
    eval_demo,
    every_study,
    pairing_example,
    real_model,
    shipped_records,
    study,
    toolcall_demo,
    toolrl_sample_rows,
    worked_example,
)
from tests.helpers.figure_study_sources import (
    committed,
    conflict_shares,
    first_steps,
    lengths,
    runtime_rows,
    study_at_stop,
    study_summary,
    study_summary_rows,
)
from tests.helpers.studies import LOGGED, PILOTS

H7_AT_STOP = [study_at_stop("gd2po_toolcall"), study_at_stop("gd2po_gsm8k_style")]
H7_TEN = [study("gd2po_toolcall"), study("gd2po_gsm8k_style")]

PAGE = r"README\.md|docs/[a-z0-9_]+\.md"  # the README or a page of docs/ (not docs/results)

# (file, section pattern) -> a source of whole table rows: a figure in a table row there passes only if its whole row
# is one of them (small counts collide too easily one by one).
ROW_SOURCES = [
    (PAGE, r"Advantage collapse", advantage_rows),
    (r"docs/results/README\.md", r"Every comparison, with Holm", study_summary_rows),
    (r"docs/results/README\.md", r"Part 2: results$", runtime_rows),
]

# (file, section pattern, line pattern) -> a source of printed lines: a figure on a line that matches the pattern there
# passes only if its whole line (stripped) is one of them (tests/helpers/figure_printed.py says why).
LINE_SOURCES = [
    (
        r"README\.md",
        r"Quick start",
        r"step \d+/\d+ \||Training finished|metric |rewards/|reward |conflict/",
        demo_printout,
    ),
]

# Tables that summarise several tables of their sources: a row's figures come from different source rows, so the
# rule that a table row's figures come from one source row does not apply there.
SUMMARY_TABLES = [
    (PAGE, r"Does GDPO beat GRPO"),
    (r"README\.md", r"## Results$"),
    (r"docs/results/README\.md", r"### Summary"),
]


# (file, a regular expression searched in the figure's section) -> its sources. Every matching entry counts.
SOURCES = [
    (PAGE, r"Quick start", [eval_demo, shipped_records, demo_shipped]),
    # The page's counts come from the completions themselves, listed first so that the lock names that source; the
    # rewards section states only counts, which a source of every number in the folder would match by chance.
    (r"docs/real_model\.md", r"The rewards on real text|Before and after", [real_model_counts]),
    (r"docs/real_model\.md", r"The GDPO run", [real_model_steps]),
    (r"docs/real_model\.md", r"^(?!.*The rewards on real text)", [real_model]),
    (r"README\.md", r"## Results$", [real_model]),
    # Study H8 (GDPO, GRPO and SFT on SmolLM2), where its answer is written once every run is evaluated.
    (r"docs/real_model\.md", r"GDPO against GRPO", [h8_study]),
    (r"README\.md", r"## Results$", [h8_study]),
    (r"docs/results/README\.md", r"### H8", [h8_study]),
    # H8 and H9 read again with statistics chosen after the runs (studies/second_reading.py), appended to each.
    (r"docs/results/README\.md", r"### H8.* > #### H8 read again", [second_reading]),
    (r"docs/results/README\.md", r"### H9,.* > #### H9 read again", [second_reading]),
    # Study H9's pilot, in the Qwen page and in H9's pre-registration.
    (r"docs/qwen\.md", r"The pilot", [h9_pilot]),
    (r"docs/results/README\.md", r"H9", [h9_pilot]),
    # Study H9 itself, where its answer is written once it is analysed by its stopping rule.
    (r"docs/qwen\.md", r"H9's answer", [h9_study]),
    (r"README\.md", r"## Results$", [h9_study]),
    (r"docs/results/README\.md", r"### H9,", [h9_study, h8_study]),  # H9's section quotes H8's conflict shares
    # H9's counts as its audit states them (whole numbers in prose: 1,169 of 1,200, 47 of 60), from the committed files.
    (r"docs/results/README\.md", r"### H9,", [h9_audit]),
    (r"docs/qwen\.md", r"H9", [h9_audit]),
    (r"README\.md", r"## Results$", [h9_audit]),
    # Study H10 (the published multi-reward rules against GDPO and GRPO), where its answer is written.
    (r"docs/rules\.md", r"H10", [h10_study]),
    (r"docs/results/README\.md", r"### H10,", [h10_study, h10_shares]),
    (r"docs/results/reproducibility\.md", r".", [cross_cpu, shipped_records]),
    (PAGE, r"Advantage collapse", [advantage_groups]),
    (PAGE, r"Process rewards", [worked_example]),
    (PAGE, r"When things go wrong", [bad_input_cases]),
    (PAGE, r"Does GDPO beat GRPO", [every_study, study_summary]),
    # The studies' summary, from studies/study_summary.py, and H7's (GD2PO) rows.
    (r"README\.md", r"## Results$", [study_summary, study("gd2po_toolcall"), study("gd2po_gsm8k_style")]),
    # H7 as in docs/gd2po.md: the six seeds of its stop lead, the ten seeds and the conflict shares in sections of
    # their own, each with its own sources only.
    (r"docs/results/README\.md", r"### H7,[^>]*$", H7_AT_STOP),
    (r"docs/results/README\.md", r"### H7,.* > #### At the pre-registered stop", H7_AT_STOP),
    (r"docs/results/README\.md", r"### H7,.* > #### Ten seeds", H7_TEN),
    (r"docs/results/README\.md", r"### H7,.* > #### How often the rewards conflicted", [conflict_shares]),
    (PAGE, r"Tool calling: the paper", [toolcall_demo, toolrl_sample_rows]),
    (PAGE, r"Does GDPO learn better here", [compare_demo]),
    (PAGE, r"Multi-turn agents", [agent_demo]),
    (r"docs/process_rewards\.md", r"The rule", [worked_example]),
    (r"docs/toolcall\.md", r"Tool calling \(README section\)|Data: ToolRL", [toolrl_sample_rows]),
    (r"docs/toolcall\.md", r"The reward rules", [pairing_example]),
    # Each section of part 2 is scoped to its own study (and the ones it quotes); only part 2's opening (the re-run
    # and its time table) and the summary draw on every study.
    (r"docs/results/README\.md", r"Part 1", [study(t) for t in PILOTS if t in LOGGED]),
    (r"docs/results/README\.md", r"Addendum[^>]*H4", [study("toolcall")]),  # quotes H1's diagnostics
    (r"docs/results/README\.md", r"Part 2: results$", [every_study]),
    # The summary quotes studies/study_summary.py's comparisons, H6b's warm start (0.38) and H6's success (0.05).
    (r"docs/results/README\.md", r"### Summary", [study_summary, agent_demo, study("agent")]),
    (r"docs/results/README\.md", r"### H1", [study("toolcall"), committed("b9f2dbd", "docs/results/toolcall.md")]),
    (r"docs/results/README\.md", r"### H2", [study("gsm8k_style")]),
    (r"docs/results/README\.md", r"### H3", [study("length"), lengths("length")]),
    (r"docs/results/README\.md", r"### H4", [study("scale6"), study("gsm8k_style")]),
    (r"docs/results/README\.md", r"### H5", [study("process")]),
    (r"docs/results/README\.md", r"### H6,", [study("agent"), first_steps("agent")]),
    (r"docs/results/README\.md", r"### H6b", [study("agent_midrange"), agent_demo]),
    (r"docs/results/README\.md", r"Addendum.*H6b", [agent_demo]),  # the shipped warm start's check and recipe run
    (r"docs/results/README\.md", r"Addendum.*H6c", [study("agent_midrange")]),  # quotes H6b's diagnostics
    (r"docs/results/README\.md", r"### H6c", [study("agent_scale6")]),
    # H7: the six seeds of its pre-registered stop first, then the ten (four of them run after the stop); the conflict
    # shares from a source of only those (tests/helpers/figure_study_sources.py's conflict_shares says why).
    (r"docs/gd2po\.md", r"\(H7\)$", H7_AT_STOP),
    (r"docs/gd2po\.md", r"\(H7\) > ### Ten seeds", H7_TEN),
    (r"docs/gd2po\.md", r"\(H7\) > ### How often the rewards conflicted", [conflict_shares]),
    (
        r"docs/agents\.md",
        r"Does GDPO beat GRPO here",
        [study("agent_midrange"), study("agent"), study("agent_scale6"), first_steps("agent"), study_summary],
    ),
    (r"docs/agents\.md", r"The shop task|Two tasks in one run", [agent_demo]),
]

# Design values stated as such (not results), per file: text as written -> why it is not a result.
_PREREGISTERED = "the pre-registration's design (docs/results/README.md, part 1)"
SETTINGS: dict[str, dict[str, str]] = {
    "docs/results/README.md": {
        "1.0": "sampling temperature, " + _PREREGISTERED,
        "8 completions": _PREREGISTERED,
        "4 prompts": _PREREGISTERED,
        "32 completions": _PREREGISTERED,
        "30 runs": _PREREGISTERED,
        "20 runs": _PREREGISTERED,
        "10 seeds": _PREREGISTERED,
        "40 steps": _PREREGISTERED,
        "60 steps": _PREREGISTERED,
        "80 steps": "the pilot's length, " + _PREREGISTERED,
        "10 steps": "the final value's window and the blocks, " + _PREREGISTERED,
        "95%": "the confidence level, " + _PREREGISTERED,
        "10,000 resamples": _PREREGISTERED,
        "0.05": "the significance level, " + _PREREGISTERED,
        "6 comparisons": "H4's Bonferroni count, " + _PREREGISTERED,
        "0.2": "the warm start's error rate, " + _PREREGISTERED,
        "64 tokens": "H5's completion length, " + _PREREGISTERED,
        "25 min": "the study's time budget per task, " + _PREREGISTERED,
        "25-minute": "the study's time budget per task, " + _PREREGISTERED,
        "5 steps": "the curves' smoothing window",
        "20 steps": "the run length of H6-H6c and of H7 as amended, each " + _PREREGISTERED,
        "20-step": "the run length of H7 as first amended, " + _PREREGISTERED,
        "60 runs": "H7's runs (2 tasks x 3 methods x 10 seeds), " + _PREREGISTERED,
        "30 steps": "the H6 pilot's length and H7's first design, " + _PREREGISTERED,
        "80 s": "H6's target length of a run, from its pilot, " + _PREREGISTERED,
        "50 s": "the estimate of a GSM8K-style run that set the study's lengths, " + _PREREGISTERED,
        "35-40 min": "the estimate of 30 tool runs of 60 steps that set the study's lengths, " + _PREREGISTERED,
        "3,000": "the draws of H9's power simulation, " + _PREREGISTERED,
        "120 runs": "H10's runs (2 tasks x 6 arms x 10 seeds), " + _PREREGISTERED,
        "90-110 minutes": "the estimate of H10's runs that set its design, " + _PREREGISTERED,
    },
    "README.md": {
        "10 s": "when a slow reward is first named (gdpo_trl/trainer/reward_checks.py)",
        "30 s": "how often a slow reward is named again (gdpo_trl/trainer/reward_checks.py)",
        "10 steps": "the final value's window, docs/results/README.md part 1",
        "95%": "the confidence level, docs/results/README.md part 1",
        "10 seeds": "the study's design, docs/results/README.md part 1",
    },
    "docs/studies.md": {
        "5 steps": "gdpo compare's final window (the mean of the last 5 steps), a column of its table",
        "10%": "gdpo compare's --gain default: its steps-to column's threshold, a share of each reward's range",
    },
    "docs/evaluation.md": {
        "10%": "gdpo compare's --gain default: its steps-to column's threshold, a share of each reward's range",
    },
    # Sizes of data and of test batteries, written as whole numbers grouped by thousands (counted as figures).
    "docs/gsm8k_fidelity.md": {"2,000": "the seeded battery's size in tests/rewards/test_rewards_gsm8k_reference.py"},
    "docs/qwen.md": {"491,400,064": "the GGUF file's size in bytes, a constant of gdpo_trl/models/qwen_gguf.py"},
    "docs/real_model.md": {"1,319": "GSM8K's test set (openai/grade-school-math test.jsonl), as published"},
    "docs/toolcall.md": {
        "1,000": "BFCL's AST entries (400 + 200 + 200 + 200), the data tests/eval/test_eval_bfcl_all.py renders",
        "1,500": "the seeded battery's size in tests/rewards/test_rewards_toolcall_parity.py",
        "4,000": "the traces the toolcall warm start is fine-tuned on (its recipe's steps x batch size)",
    },
    "docs/pilot.md": {
        "0.90": "the verdict rule's threshold (gdpo_trl/results/pilot.py DIFFERENT_CORRELATION)",
        "0.15": "the verdict rule's threshold (gdpo_trl/results/pilot.py DIFFERENT_SHARE_SHIFT)",
        "0.95": "the verdict rule's threshold (gdpo_trl/results/pilot.py SAME_CORRELATION)",
        "0.10": "the verdict rule's threshold (gdpo_trl/results/pilot.py SAME_SHARE_SHIFT)",
        "0.03": "gdpo pilot's --difference default (gdpo_trl/cli/pilot.py)",
        "80%": "the plan's power (gdpo_trl/results/pilot.py plan)",
        "0.032": "the plan's between-seed SD (gdpo_trl/results/seed_power.py STUDY_SEED_SD, recomputed by its test)",
    },
    "docs/your_task.md": {"0.03": "gdpo pilot's --difference default (gdpo_trl/cli/pilot.py)"},
    "docs/training.md": {
        "10 s": "when a slow reward is first named (gdpo_trl/trainer/reward_checks.py)",
        "30 s": "how often a slow reward is named again (gdpo_trl/trainer/reward_checks.py)",
        "40 s": "the example notice's elapsed time (10 s, then every 30 s)",
    },
}

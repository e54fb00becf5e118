"""`sluice generate`: one prompt through the real model path (tokenizer, forward on
the CPU backend, sampler, incremental detokenizer), without the daemon."""
import os
import subprocess

import pytest

from conftest import DEFAULT_MODEL, SLUICE_BIN, require_model

FIXTURE_MODELS = DEFAULT_MODEL.parents[1] / "tests" / "fixtures" / "models"


def generate(*args, timeout=300):
    if not SLUICE_BIN.exists():
        pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    return subprocess.run([str(SLUICE_BIN), "generate", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture
def smollm2():
    require_model(DEFAULT_MODEL, "`make model`")
    return DEFAULT_MODEL


def test_greedy_completion_knows_the_capital_of_france(smollm2):
    result = generate("--model", smollm2, "--prompt", "The capital of France is", "--max-tokens", 8,
                      "--threads", 2, "--stats")
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout
    assert "prompt tokens:" in result.stderr
    assert "generated tokens:  8" in result.stderr
    assert "generation speed:" in result.stderr


def test_chat_prompt_stops_at_end_of_turn(smollm2):
    prompt = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    result = generate("--model", smollm2, "--prompt", prompt, "--max-tokens", 48, "--stats")
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout
    assert "<|im_end|>" not in result.stdout
    generated = int(result.stderr.split("generated tokens:")[1].split()[0])
    assert generated < 48


def test_seeded_sampling_is_reproducible(smollm2):
    args = ("--model", smollm2, "--prompt", "Once upon a time", "--max-tokens", 12,
            "--temperature", 0.9, "--top-p", 0.95, "--seed", 1234)
    first, second = generate(*args), generate(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout


@pytest.mark.parametrize("name", ["llama", "llama3", "qwen3", "gemma3"])
def test_every_fixture_architecture_generates(name):
    # Tiny random weights: the text is noise, but each architecture's GGUF (with its
    # tokenizer) must load, prefill, decode and stop at max-tokens or EOS.
    result = generate("--model", FIXTURE_MODELS / name / f"{name}-q8_0.gguf", "--prompt", "hello world",
                      "--max-tokens", 6, "--stats")
    assert result.returncode == 0, result.stderr
    assert int(result.stderr.split("generated tokens:")[1].split()[0]) <= 6


def test_a_missing_model_fails_with_its_path():
    result = generate("--model", "/nonexistent/model.gguf", "--prompt", "hi")
    assert result.returncode == 1
    assert "/nonexistent/model.gguf" in result.stderr

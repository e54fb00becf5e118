"""Greedy completions of the real models match the reference implementation.

tests/fixtures/real_models/greedy_goldens.json holds, per real model (keyed by GGUF file
name, with its sha256) and prompt, what Hugging Face transformers generates greedily on
the same GGUF weights dequantized to float32 (make_greedy_goldens.py writes it). Here
`sluice generate --model PATH --prompt TEXT --max-tokens 16` must print the same text:
it prints only the completion (no prompt echo) and a final newline, and no token ids, so
the text is compared, and `--stats` gives the number of generated tokens, which is
compared too (sluice does not count the EOS it stops at; the golden ids include it).

It runs on the CPU's reference path (SLUICE_CPU_KERNELS=f32, F32 activations), whose
numerics are the reference's; the served integer path is held to this one by the unit
test tests/unit/engine/models/test_model_greedy.cpp.

Float order: sluice and torch sum in different orders, so logits differ in the last
bits. Where the reference's top-1/top-2 logit margin at a step is below the golden's
`small_margin` (0.05 logits), such a difference could legitimately flip the argmax, and
everything after that step would diverge for a reason that is no bug. So the comparison
stops before the first such step: the output must start with the reference text of the
steps before it. The prompts were chosen so that nearly all completions have no such
step (the summary of make_greedy_goldens.py prints each prompt's smallest margin).

A model whose file is missing is skipped (a failure when SLUICE_REQUIRE_MODELS=1, as
`make test` sets), one whose sha256 differs from the golden's (another quantization
or revision: its completions would legitimately differ) is skipped.
"""
import functools
import hashlib
import json
import os
import subprocess

import pytest

from conftest import REPO, SLUICE_BIN, require_model

GOLDEN = REPO / "tests" / "fixtures" / "real_models" / "greedy_goldens.json"
FETCH = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": "scripts/fetch-model.sh",
    "gemma-3-270m-q4_k_m.gguf": "scripts/fetch-gemma3.sh",
}


def load_golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


GOLDENS = load_golden()
CASES = [(name, case) for name, model in GOLDENS["models"].items() for case in model["prompts"]]


@functools.lru_cache(maxsize=None)
def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_path(name):
    path = REPO / "models" / name
    require_model(path, FETCH.get(name, "a fetch script"))
    expected = GOLDENS["models"][name]["sha256"]
    if sha256(path) != expected:
        pytest.skip(f"{path} is not the file the goldens were made from (sha256 {sha256(path)[:16]}…, "
                    f"golden {expected[:16]}…): rerun tests/fixtures/real_models/make_greedy_goldens.py")
    return path


def trusted_steps(case, small):
    """How many leading generated steps have a reference margin of at least `small`."""
    for step, margin in enumerate(case["margins"]):
        if margin < small:
            return step
    return len(case["margins"])


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n.split('.')[0]}:{c['prompt']}" for n, c in CASES])
def test_greedy_completion_matches_reference(name, case):
    path = model_path(name)
    if not SLUICE_BIN.exists():
        pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    # The reference's numerics: F32 activations (the served integer kernels round
    # activations to int8 blocks, which moves logits by ~1e-2 of their range and can
    # flip a near tie; test_model_greedy.cpp bounds that path against this one).
    env["SLUICE_CPU_KERNELS"] = "f32"
    max_tokens = GOLDENS["max_new_tokens"]
    result = subprocess.run([str(SLUICE_BIN), "generate", "--model", str(path), "--prompt", case["prompt"],
                             "--max-tokens", str(max_tokens), "--stats"],
                            capture_output=True, text=True, encoding="utf-8", errors="replace",
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\n"), repr(result.stdout)
    output = result.stdout[:-1]  # generate ends the completion with one newline
    prompt_tokens = int(result.stderr.split("prompt tokens:")[1].split()[0])
    assert prompt_tokens == len(case["prompt_ids"]), (
        f"sluice encodes {case['prompt']!r} as {prompt_tokens} tokens, the reference as {case['prompt_ids']}")

    steps = trusted_steps(case, GOLDENS["small_margin"])
    if steps == len(case["generated_ids"]):
        assert output == case["generated_text"], (
            f"prompt {case['prompt']!r}\n  sluice:    {output!r}\n  reference: {case['generated_text']!r}")
        generated = int(result.stderr.split("generated tokens:")[1].split()[0])
        expected = len(case["generated_ids"]) - (1 if case["stopped_at_eos"] else 0)
        assert generated == expected, result.stderr
    else:
        # The reference's argmax at step `steps` is a near tie: compare the steps before it.
        prefix = case["text_by_step"][steps - 1].rstrip("\ufffd") if steps > 0 else ""
        assert output.startswith(prefix), (
            f"prompt {case['prompt']!r} (compared up to step {steps}, margin "
            f"{case['margins'][steps]:.4f} there)\n  sluice:    {output!r}\n  reference: {prefix!r}")

"""`sluice bench`: the forward pass of a model shape on random weights, timed on the
CPU backend, printed as a table and written as JSON."""
import json
import os
import subprocess

import pytest

from conftest import SLUICE_BIN, TINY_MODEL


def bench(*args, timeout=300):
    if not SLUICE_BIN.exists():
        pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    return subprocess.run([str(SLUICE_BIN), "bench", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def positive(value):
    return isinstance(value, (int, float)) and value > 0


def test_tiny_model_reports_every_measure(tmp_path):
    out = tmp_path / "out.json"
    result = bench("--model-shape", "tiny", "--backend", "cpu", "--batches", "1,2", "--context", 32,
                   "--prompt", 16, "--steps", 2, "--warmup", 1, "--json", out)
    assert result.returncode == 0, result.stderr
    for heading in ("machine", "copy", "decode", "prefill", "tokens/s", "GB/s"):
        assert heading in result.stdout

    report = json.loads(out.read_text())
    assert report["machine"]["backend"] == "cpu"
    assert positive(report["machine"]["memory_total_bytes"])
    assert report["model"]["shape"] == "tiny" and report["model"]["layers"] == 2
    assert positive(report["model"]["weight_bytes"])
    for key in ("bytes", "best_seconds", "peak_gbps"):
        assert positive(report["copy"][key]), key
    assert "read + write" in report["copy"]["convention"]

    assert [row["batch"] for row in report["decode"]] == [1, 2]
    for row in report["decode"]:
        for key in ("step_seconds", "tokens_per_second", "weight_bytes_per_step", "kv_bytes_per_step",
                    "achieved_gbps", "share_of_copy_peak"):
            assert positive(row[key]), (row["batch"], key)
        assert row["context"] == 32
        assert abs(row["tokens_per_second"] * row["step_seconds"] - row["batch"]) < 1e-6
    # Twice the sequences read twice the KV.
    assert report["decode"][1]["kv_bytes_per_step"] == 2 * report["decode"][0]["kv_bytes_per_step"]

    prefill = report["prefill"]
    assert prefill["prompt"] == 16
    assert positive(prefill["seconds"]) and positive(prefill["tokens_per_second"])


def test_prefill_in_chunks_and_a_quantized_qwen3_shape_run():
    result = bench("--model-shape", "qwen3-8b", "--layers", 1, "--dtype", "q4_k", "--backend", "cpu",
                   "--batches", 1, "--context", 16, "--prompt", 32, "--chunk", 16, "--steps", 1,
                   "--warmup", 0, "--prefill-runs", 1, "--copy-bytes", 1 << 24)
    assert result.returncode == 0, result.stderr
    assert "Q4_K matrices" in result.stdout
    assert "2 steps of up to 16" in result.stdout


def test_a_model_file_adds_generation_and_engine_streams(tmp_path):
    def run(quantize):
        out = tmp_path / f"{quantize}.json"
        result = bench("--model", TINY_MODEL, "--backend", "cpu", "--batches", 1, "--context", 16, "--prompt", 16,
                       "--steps", 1, "--warmup", 0, "--prefill-runs", 1, "--copy-bytes", 1 << 24, "--generate", 8,
                       "--streams", "1,3", "--stream-prompt", 5, "--quantize", quantize, "--json", out)
        assert result.returncode == 0, result.stderr
        return result.stdout, json.loads(out.read_text())

    stdout, report = run("none")
    assert "S streams submitted at once to the engine" in stdout
    assert report["generate"]["tokens"] == 8 and positive(report["generate"]["tokens_per_second"])
    assert [row["streams"] for row in report["engine"]] == [1, 3]
    for row in report["engine"]:
        # Every stream ran to its token limit through the scheduler and sampler.
        assert row["generated_tokens"] == 8 * row["streams"]
        assert row["prompt_tokens"] == 5 and row["preemptions"] == 0
        assert 0 < row["ttft_mean_seconds"] <= row["ttft_max_seconds"] <= row["seconds"]
        assert abs(row["tokens_per_second"] * row["seconds"] - row["generated_tokens"]) < 1e-6 * row["generated_tokens"]
    # Quantized at load, a token reads the quantized matrices: fewer bytes.
    _, quantized = run("q8_0")
    assert quantized["generate"]["weight_bytes_per_token"] < report["generate"]["weight_bytes_per_token"] / 2


def test_speculative_on_against_off(tmp_path):
    out = tmp_path / "spec.json"
    result = bench("--model", TINY_MODEL, "--backend", "cpu", "--batches", 1, "--context", 16, "--prompt", 16,
                   "--steps", 1, "--warmup", 0, "--prefill-runs", 1, "--copy-bytes", 1 << 24, "--generate", 12,
                   "--streams", "1,6", "--stream-prompt", 5, "--speculative", "ngram", "--speculative-tokens", 3,
                   "--json", out)
    assert result.returncode == 0, result.stderr
    assert "speculative  ngram, 3 tokens per step" in result.stdout
    report = json.loads(out.read_text())["speculative"]
    assert report["method"] == "ngram" and report["num_speculative_tokens"] == 3
    assert [(row["task"], row["streams"]) for row in report["rows"]] == [
        ("repetitive", 1), ("repetitive", 6), ("chat", 1), ("chat", 6)]
    for row in report["rows"]:
        # Greedy: speculation changes no token, so both runs stop at the same place.
        assert row["off_generated_tokens"] == row["on_generated_tokens"] > 0
        assert positive(row["off_tokens_per_second"]) and positive(row["on_tokens_per_second"])
        assert 0 <= row["accepted_tokens"] <= row["draft_tokens"]
    # Above disable_by_batch_size (4) decoding sequences nothing is drafted, except
    # in the few steps where streams are still starting or already done.
    one = report["rows"][0]
    assert one["draft_tokens"] > 0 and one["tokens_per_verify"] >= 1


@pytest.mark.parametrize("args, message", [
    (("--model-shape", "gpt-5"), "unknown model shape 'gpt-5'"),
    (("--speculative", "ngram"), "--speculative: needs --model"),
    (("--model", TINY_MODEL, "--speculative", "draft_model"), "--speculative draft_model: needs --draft-model"),
    (("--dtype", "q3_k"), "--dtype: 'q3_k' is not one of"),
    (("--backend", "tpu"), "invalid backend 'tpu'"),
])
def test_bad_options_exit_2_naming_the_problem(args, message):
    result = bench(*args)
    assert result.returncode == 2
    assert message in result.stderr

"""`sluice serve` of a Hugging Face text model folder (config.json, safetensors,
tokenizer.json), as vLLM users point a server at one.

tests/fixtures/tiny-llama-hf/ is tests/fixtures/tiny-llama.gguf written the way
transformers stores it (make_fixtures.py: q/k rows in the NeoX order, the tokenizer as
tokenizer.json): served side by side, the two must give the same tokens and answers.
"""
import json
import math
import shutil

from conftest import REPO, TINY_MODEL
from http_util import get_json, request

HF_FOLDER = REPO / "tests" / "fixtures" / "tiny-llama-hf"
PROMPTS = ["hello world, the cat is in the", "Once upon a time 12345", "héllo ünïcode 🙂 and more"]


def post(daemon, path, body):
    status, _, text = request(daemon, "POST", path, json.dumps(body), {"Content-Type": "application/json"},
                              timeout=60)
    assert status == 200, text
    return json.loads(text)


def test_a_folder_serves_what_its_gguf_serves(start_daemon):
    daemon = start_daemon("--model", f"hf={HF_FOLDER}")
    status, _, listed = get_json(daemon, "/v1/models")
    assert status == 200
    models = {m["id"]: m for m in listed["data"]}
    hf, gguf = models["hf"], models["tiny"]
    assert hf["meta"]["architecture"] == "llama"
    assert hf["meta"]["file_type"] == "F32"
    assert hf["meta"]["num_parameters"] == gguf["meta"]["num_parameters"]
    assert hf["context_length"] == gguf["context_length"] == 256
    assert hf["meta"]["endpoints"] == gguf["meta"]["endpoints"]
    assert "/v1/chat/completions" in hf["meta"]["endpoints"]

    for prompt in PROMPTS:
        tokens = {m: post(daemon, "/tokenize", {"model": m, "prompt": prompt})["tokens"] for m in ("hf", "tiny")}
        assert tokens["hf"] == tokens["tiny"], prompt
        answers = {m: post(daemon, "/v1/completions", {"model": m, "prompt": prompt, "max_tokens": 24,
                                                       "temperature": 0, "logprobs": 1})
                   for m in ("hf", "tiny")}
        hf_choice, gguf_choice = answers["hf"]["choices"][0], answers["tiny"]["choices"][0]
        assert hf_choice["text"] == gguf_choice["text"], prompt
        assert hf_choice["logprobs"]["tokens"] == gguf_choice["logprobs"]["tokens"]
        for a, b in zip(hf_choice["logprobs"]["token_logprobs"], gguf_choice["logprobs"]["token_logprobs"]):
            assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4), (a, b)

    chat = {m: post(daemon, "/v1/chat/completions", {
        "model": m, "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 16, "temperature": 0})
        for m in ("hf", "tiny")}
    assert chat["hf"]["choices"][0]["message"] == chat["tiny"]["choices"][0]["message"]

    vectors = [post(daemon, "/v1/embeddings", {"model": m, "input": PROMPTS[0]})["data"][0]["embedding"]
               for m in ("hf", "tiny")]
    assert sum(a * b for a, b in zip(*vectors)) > 0.9999


def test_a_folder_takes_the_quantize_option(start_daemon, tmp_path):
    config = tmp_path / "sluice.json"
    config.write_text(json.dumps({"models": [{"name": "hf-q8", "path": str(HF_FOLDER), "quantize": "q8_0"}]}))
    daemon = start_daemon("--config", str(config), model=None)
    assert "hf-q8" in [m["id"] for m in get_json(daemon, "/v1/models")[2]["data"]]
    answer = post(daemon, "/v1/completions", {"model": "hf-q8", "prompt": PROMPTS[0], "max_tokens": 8,
                                              "temperature": 0})
    assert answer["usage"]["completion_tokens"] > 0
    assert "q8_0" in daemon.log


def broken_folder(tmp_path, drop=None, config_edit=None):
    folder = tmp_path / "model"
    shutil.copytree(HF_FOLDER, folder)
    if drop:
        (folder / drop).unlink()
    if config_edit:
        config = json.loads((folder / "config.json").read_text())
        config.update(config_edit)
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_folder_without_its_tokenizer_fails_at_load_naming_the_file(start_daemon, tmp_path):
    folder = broken_folder(tmp_path, drop="tokenizer.json")
    daemon = start_daemon(model=folder, ready=False)
    assert daemon.wait_exit(timeout=60) == 1
    assert f"{folder}/tokenizer.json: missing" in daemon.log


def test_a_folder_of_an_unsupported_architecture_fails_naming_the_key(start_daemon, tmp_path):
    folder = broken_folder(tmp_path, config_edit={"model_type": "mistral"})
    daemon = start_daemon(model=folder, ready=False)
    assert daemon.wait_exit(timeout=60) == 1
    assert "config.json" in daemon.log and "model_type" in daemon.log and "mistral" in daemon.log


def test_a_folder_with_a_tensor_of_the_wrong_shape_fails_naming_the_tensor(start_daemon, tmp_path):
    folder = broken_folder(tmp_path, config_edit={"intermediate_size": 96})
    daemon = start_daemon(model=folder, ready=False)
    assert daemon.wait_exit(timeout=60) == 1
    assert "model.safetensors" in daemon.log and "mlp." in daemon.log or "ffn_" in daemon.log, daemon.log

"""POST /v1/embeddings against the real daemon through the official `openai` client:
the llama parity fixture (its vectors against the committed transformers goldens), the
tiny fixture model and SmolLM2;
base64 decodes to the float list, a batch equals its inputs one by one bit for bit,
and bad input gets the OpenAI error shape naming the field.
"""
import base64
import json
import math
import struct

import openai
import pytest

from conftest import DEFAULT_MODEL, REPO, TINY_MODEL, on_gpu, require_model, start_module_daemon
from http_util import assert_openai_error, request

GOLDENS = REPO / "tests" / "fixtures" / "embeddings" / "llama.json"
LLAMA_FIXTURE = REPO / "tests" / "fixtures" / "models" / "llama" / "llama-f32.gguf"
TTS_FIXTURE = REPO / "tests" / "fixtures" / "qwen3_tts" / "custom_voice_small"
TEXTS = ["The quick brown fox jumps over the lazy dog.", "hello", "Embeddings map text to vectors, 1 2 3!"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    # The tiny model and the llama parity fixture, each twice (its default pooling,
    # last; and mean from the config), and a speech model, which has no embeddings.
    config = {"models": [{"path": str(TINY_MODEL), "name": "tiny"},
                         {"path": str(TINY_MODEL), "name": "tiny-mean", "pooling": "mean"},
                         {"path": str(LLAMA_FIXTURE), "name": "llama"},
                         {"path": str(LLAMA_FIXTURE), "name": "llama-mean", "pooling": "mean"},
                         {"path": str(TTS_FIXTURE), "name": "tts"}]}
    path = tmp_path_factory.mktemp("embeddings") / "sluice.json"
    path.write_text(json.dumps(config))
    daemon = start_module_daemon("--config", str(path), "--compute-threads", "1")
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=120)


def decode(b64):
    raw = base64.b64decode(b64)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def post(daemon, body):
    return request(daemon, "POST", "/v1/embeddings", json.dumps(body), {"Content-Type": "application/json"},
                   timeout=60)


@pytest.mark.parametrize("model,pooling", [("llama", "last"), ("llama-mean", "mean")])
def test_token_inputs_match_the_transformers_goldens(client, model, pooling):
    cases = json.loads(GOLDENS.read_text())["cases"]
    got = client.embeddings.create(model=model, input=[c["tokens"] for c in cases])
    assert got.object == "list" and got.model == model
    assert [d.index for d in got.data] == list(range(len(cases)))
    assert got.usage.prompt_tokens == got.usage.total_tokens == sum(len(c["tokens"]) for c in cases)
    for case, item in zip(cases, got.data):
        assert item.object == "embedding"
        assert len(item.embedding) == 64
        assert cosine(item.embedding, case[pooling]) >= 0.9999
        assert abs(math.sqrt(sum(x * x for x in item.embedding)) - 1.0) < 1e-5


def test_base64_decodes_to_the_float_list(client):
    floats = client.embeddings.create(model="tiny", input=TEXTS, encoding_format="float")
    encoded = client.embeddings.with_raw_response.create(model="tiny", input=TEXTS, encoding_format="base64")
    data = json.loads(encoded.text)["data"]
    for item, raw in zip(floats.data, data):
        assert isinstance(raw["embedding"], str)
        assert decode(raw["embedding"]) == item.embedding
    # The client's own default (it asks for base64 and decodes) gives the same floats.
    default = client.embeddings.create(model="tiny", input=TEXTS)
    assert [d.embedding for d in default.data] == [d.embedding for d in floats.data]


@pytest.mark.parametrize("model", ["tiny", "tiny-mean"])
def test_a_batch_equals_its_inputs_one_by_one_bit_for_bit(client, model):
    """Bit for bit on the CPU; on a GPU (see conftest.on_gpu) within 1e-5 per element."""
    batch = client.embeddings.create(model=model, input=TEXTS, encoding_format="base64")
    for i, text in enumerate(TEXTS):
        alone = client.embeddings.create(model=model, input=text, encoding_format="base64")
        if not on_gpu():
            assert alone.data[0].embedding == batch.data[i].embedding
            continue
        a, b = decode(alone.data[0].embedding), decode(batch.data[i].embedding)
        assert len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= 1e-5


def test_truncate_prompt_tokens_keeps_the_last_tokens(client):
    tokens = json.loads(GOLDENS.read_text())["cases"][3]["tokens"]
    whole = client.embeddings.create(model="tiny", input=[tokens[-5:]])
    cut = client.embeddings.create(model="tiny", input=[tokens], extra_body={"truncate_prompt_tokens": 5})
    assert cut.data[0].embedding == whole.data[0].embedding
    assert cut.usage.prompt_tokens == 5


def test_bad_input_gets_the_openai_error(served, client):
    long_input = [5] * 257  # the tiny model's context is 256
    cases = [
        ({"model": "tiny", "input": long_input}, "input", "context_length_exceeded"),
        ({"model": "tiny", "input": ""}, "input", None),
        ({"model": "tiny", "input": [[1, 2], []]}, "input", None),
        ({"model": "tiny", "input": [1, 300]}, "input", None),  # outside the vocabulary
        ({"model": "tiny", "input": "a", "encoding_format": "int8"}, "encoding_format", None),
        ({"model": "tiny", "input": "a", "dimensions": 32}, "dimensions", None),
        ({"model": "tts", "input": "a"}, "model", None),
    ]
    for body, param, code in cases:
        status, _, raw = post(served, body)
        assert status == 400, (body, raw)
        assert_openai_error(raw, param=param, code=code)
    status, _, raw = post(served, {"model": "nope", "input": "a"})
    assert status == 404
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="tiny", input="a", dimensions=8)
    # The model's own width is no truncation: accepted.
    assert len(client.embeddings.create(model="tiny", input="a", dimensions=64).data[0].embedding) == 64


def test_smollm2_embeddings(served):
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_module_daemon("--model", f"smol={DEFAULT_MODEL}")
    try:
        smol = openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0, timeout=120)
        batch = smol.embeddings.create(model="smol", input=TEXTS)
        assert len(batch.data) == len(TEXTS)
        assert all(len(d.embedding) == 576 for d in batch.data)
        for i, text in enumerate(TEXTS):
            alone = smol.embeddings.create(model="smol", input=text)
            assert alone.data[0].embedding == batch.data[i].embedding
        same = smol.embeddings.create(model="smol", input=[TEXTS[0], TEXTS[0]])
        assert same.data[0].embedding == same.data[1].embedding
        assert cosine(batch.data[0].embedding, batch.data[1].embedding) < 0.9999
    finally:
        daemon.kill()

"""The daemon as `make serve` runs it: the default model, SmolLM2-135M-Instruct Q4_1."""
import json
import re

import pytest

from conftest import DEFAULT_MODEL, require_model
from http_util import get_json, post_json, request


@pytest.fixture
def smollm2(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    return start_daemon(model=DEFAULT_MODEL)


def test_default_model_is_listed_from_its_gguf_metadata_and_answers_a_chat_turn(smollm2):
    status, _, body = get_json(smollm2, "/v1/models")
    assert status == 200
    [model] = body["data"]
    assert model["id"] == "SmolLM2-135M-Instruct.Q4_1"
    assert model["context_length"] == 8192
    assert model["meta"]["architecture"] == "llama"
    assert model["meta"]["file_type"] == "Q4_1"
    assert 130e6 < model["meta"]["num_parameters"] < 140e6
    assert request(smollm2, "GET", "/health")[0] == 200
    assert request(smollm2, "GET", "/metrics")[0] == 200
    # The ready line the daemon prints once its model is loaded (serve_command.cpp).
    assert re.search(r"ready: 1 model\(s\) registered, serving /v1/completions, /v1/chat/completions, "
                     r"/v1/responses, /v1/messages and /v1/embeddings$", smollm2.log, re.M), smollm2.log
    # And it serves what that line says: the default model answers a chat turn with text.
    status, _, body = post_json(smollm2, "/v1/chat/completions",
                                {"model": model["id"], "temperature": 0, "max_tokens": 16,
                                 "messages": [{"role": "user", "content": "What is the capital of France?"}]},
                                timeout=60)
    assert status == 200, body
    answer = json.loads(body)
    [choice] = answer["choices"]
    assert choice["finish_reason"] in ("stop", "length"), answer
    assert choice["message"]["content"].strip(), answer
    assert 1 <= answer["usage"]["completion_tokens"] <= 16, answer

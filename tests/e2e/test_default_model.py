"""The daemon as `make serve` runs it: the default model, SmolLM2-135M-Instruct Q4_1."""
import pytest

from conftest import DEFAULT_MODEL, require_model
from http_util import get_json, request


@pytest.fixture
def smollm2(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    return start_daemon(model=DEFAULT_MODEL)


def test_default_model_is_listed_from_its_gguf_metadata(smollm2):
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
    assert "text generation is not built yet" not in smollm2.log
    assert "serving /v1/completions, /v1/chat/completions, /v1/responses, /v1/messages and /v1/embeddings" in smollm2.log

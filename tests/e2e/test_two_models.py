"""`serve --model a.gguf --model b=c.gguf`: both real models at once, each context
shrunk to its KV cache with a warning unless context_length (--context-length) is set,
and /v1/models reporting what each serves."""
import re

from conftest import DEFAULT_MODEL, GEMMA_MODEL, require_model
from http_util import get_json

KV_BYTES = str(64 << 20)  # less than either trained context needs


def served(daemon):
    status, _, body = get_json(daemon, "/v1/models")
    assert status == 200
    return {m["id"]: m for m in body["data"]}


def test_two_models_shrink_each_context_to_its_kv_cache(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    require_model(GEMMA_MODEL)
    daemon = start_daemon("--model", f"gemma={GEMMA_MODEL}", "--kv-cache-bytes", KV_BYTES, model=DEFAULT_MODEL)
    models = served(daemon)
    assert set(models) == {"SmolLM2-135M-Instruct.Q4_1", "gemma"}
    for name, model in models.items():
        # What the engine logged its KV cache holds is what the model serves.
        kv_tokens = int(re.search(rf"engine {re.escape(name)}: KV cache \d+ blocks x \d+ tokens = (\d+) tokens",
                                  daemon.log).group(1))
        assert model["context_length"] == kv_tokens, model
        assert model["max_model_len"] == kv_tokens, model
        trained = model["meta"]["trained_context_length"]
        assert kv_tokens < trained, model
        assert re.search(rf"engine {re.escape(name)}: the KV cache holds {kv_tokens} tokens, less than the "
                         rf"model's context of {trained}", daemon.log)
    # Different shapes, different per-token KV sizes: the two contexts differ.
    assert len({m["context_length"] for m in models.values()}) == 2


def test_context_length_flag_sets_every_models_context(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    require_model(GEMMA_MODEL)
    daemon = start_daemon("--model", f"gemma={GEMMA_MODEL}", "--kv-cache-bytes", KV_BYTES,
                          "--context-length", "1024", model=DEFAULT_MODEL)
    for model in served(daemon).values():
        assert model["context_length"] == 1024, model
    assert "less than the model's context" not in daemon.log


def test_a_context_length_that_does_not_fit_names_the_options(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_daemon("--kv-cache-bytes", str(8 << 20), "--context-length", "8192", model=DEFAULT_MODEL,
                          ready=False)
    assert daemon.wait_exit(timeout=60) != 0
    assert "does not fit the KV cache" in daemon.log
    assert "--kv-cache-bytes" in daemon.log and "--context-length" in daemon.log

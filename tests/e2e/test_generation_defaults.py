"""Server-side generation defaults: fields a request leaves out come from the model's
defaults (--generation-config, a model entry's "generation", the model file), the
ones it sets are its own, and a chat without max_tokens stops at --default-max-tokens."""
import json

from conftest import DEFAULT_MODEL, require_model
from http_util import request


def post_json(daemon, path, body):
    status, _, raw = request(daemon, "POST", path, body=json.dumps(body),
                             headers={"Content-Type": "application/json"}, timeout=60)
    assert status == 200, raw
    return json.loads(raw)


def test_omitted_fields_take_the_generation_config(start_daemon):
    daemon = start_daemon("--generation-config", '{"temperature": 0, "max_tokens": 6}')
    daemon.wait_for_log(r"model tiny: generation defaults for fields a request leaves out: "
                        r"temperature=0 max_tokens=6 unbounded_max_tokens=512", timeout=5)
    base = {"model": "tiny", "prompt": "hello world", "ignore_eos": True}
    defaulted = post_json(daemon, "/v1/completions", base)
    assert defaulted["usage"]["completion_tokens"] == 6  # not the API's 16
    # Greedy by default: the same text as an explicit temperature 0, every time.
    explicit = post_json(daemon, "/v1/completions", {**base, "temperature": 0, "max_tokens": 6})
    again = post_json(daemon, "/v1/completions", base)
    assert defaulted["choices"][0]["text"] == explicit["choices"][0]["text"] == again["choices"][0]["text"]
    # The request's own fields win.
    assert post_json(daemon, "/v1/completions", {**base, "max_tokens": 3})["usage"]["completion_tokens"] == 3
    sampled = [post_json(daemon, "/v1/completions", {**base, "temperature": 2, "seed": s, "max_tokens": 6})
               ["choices"][0]["text"] for s in range(4)]
    assert len(set(sampled)) > 1  # temperature 2 really sampled


def test_chat_without_max_tokens_stops_at_the_default(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_daemon("--default-max-tokens", "7", model=DEFAULT_MODEL)
    name = DEFAULT_MODEL.stem
    body = {"model": name, "messages": [{"role": "user", "content": "Tell me a long story."}],
            "ignore_eos": True}
    assert post_json(daemon, "/v1/chat/completions", body)["usage"]["completion_tokens"] == 7
    given = post_json(daemon, "/v1/chat/completions", {**body, "max_tokens": 9})
    assert given["usage"]["completion_tokens"] == 9
    assert given["choices"][0]["finish_reason"] == "length"

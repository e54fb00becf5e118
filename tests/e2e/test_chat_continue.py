"""vLLM's `continue_final_message`: the answer continues the final assistant message
(a prefill) instead of opening a new turn. On the tiny fixture model, whose template is
ChatML, the continuation must be exactly what /v1/completions gives for the rendered
conversation cut after the prefill."""
import json

from conftest import tiny  # noqa: F401  (module fixture)
from http_util import assert_openai_error, request

PREFILL = "hello wor"
MESSAGES = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": PREFILL}]
RENDERED = "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n" + PREFILL


def post(daemon, path, body):
    return request(daemon, "POST", path, json.dumps(body), {"Content-Type": "application/json"}, timeout=60)


def test_the_final_assistant_message_is_continued(tiny):  # noqa: F811
    status, _, raw = post(tiny, "/v1/chat/completions", {
        "model": "tiny", "messages": MESSAGES, "continue_final_message": True, "max_tokens": 12,
        "temperature": 0})
    assert status == 200, raw
    chat = json.loads(raw)
    status, _, raw = post(tiny, "/v1/completions", {"model": "tiny", "prompt": RENDERED, "max_tokens": 12,
                                                    "temperature": 0})
    assert status == 200, raw
    completion = json.loads(raw)
    assert chat["choices"][0]["message"]["content"] == completion["choices"][0]["text"]
    assert chat["usage"]["prompt_tokens"] == completion["usage"]["prompt_tokens"]
    # /tokenize (where routers such as vllm-router tokenize chat requests) agrees.
    status, _, raw = post(tiny, "/tokenize", {"model": "tiny", "messages": MESSAGES, "continue_final_message": True})
    assert status == 200, raw
    assert json.loads(raw)["count"] == chat["usage"]["prompt_tokens"]
    # Without it the same messages end the assistant's turn and open a new one.
    status, _, raw = post(tiny, "/v1/chat/completions", {"model": "tiny", "messages": MESSAGES, "max_tokens": 12,
                                                         "temperature": 0})
    assert json.loads(raw)["usage"]["prompt_tokens"] > chat["usage"]["prompt_tokens"]


def test_continuing_needs_a_final_assistant_message_and_no_generation_prompt(tiny):  # noqa: F811
    status, _, raw = post(tiny, "/v1/chat/completions", {
        "model": "tiny", "messages": MESSAGES[:1], "continue_final_message": True, "max_tokens": 4})
    assert status == 400
    assert_openai_error(raw, param="messages")
    status, _, raw = post(tiny, "/v1/chat/completions", {
        "model": "tiny", "messages": MESSAGES, "continue_final_message": True, "add_generation_prompt": True,
        "max_tokens": 4})
    assert status == 400
    assert_openai_error(raw, param="continue_final_message")

"""Unknown keys inside a body's objects (messages, content blocks, input items, tools)
follow `strict_request_fields` as the top-level ones do: ignored and logged at debug by
their path, or a 400 naming that path when strict. What the current SDKs send back in
the documented tool loops (anthropic 2.14's `caller` on every `tool_use` block, an
OpenAI answer's `annotations`, an earlier response's item ids and statuses) is accepted
by name even when strict. Plain HTTP on the tiny fixture model (ChatML template).
"""
import json

import pytest

from conftest import TINY_MODEL, start_module_daemon
from http_util import assert_openai_error, post_json

# The Anthropic tool loop: the assistant's content as the SDK dumps it from the answer
# (`caller` included), then the tool's result.
TOOL_LOOP = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Checking.", "citations": None},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"},
         "caller": {"type": "direct"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]},
]


@pytest.fixture(scope="module")
def lenient():
    daemon = start_module_daemon("--model", f"tiny={TINY_MODEL}", "--log-level", "debug")
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def strict():
    daemon = start_module_daemon("--model", f"tiny={TINY_MODEL}", "--strict-request-fields", "true")
    yield daemon
    daemon.kill()


def messages_body(messages):
    # No tools: the tiny model's 256-token context has no room for their description.
    return {"model": "tiny", "max_tokens": 4, "temperature": 0, "messages": messages}


def post(daemon, path, body):
    status, _, raw = post_json(daemon, path, body, timeout=60)
    return status, json.loads(raw)


def test_anthropic_tool_loop_with_caller_passes_strict_or_not(lenient, strict):
    for daemon in (lenient, strict):
        status, data = post(daemon, "/v1/messages", messages_body(TOOL_LOOP))
        assert status == 200, data
        assert data["type"] == "message"
    lenient.wait_for_log(r"field 'messages\[1\]\.content\[1\]\.caller' accepted and ignored")


def test_anthropic_nested_unknown_key_is_ignored_or_refused_by_path(lenient, strict):
    odd = json.loads(json.dumps(TOOL_LOOP))
    odd[1]["content"][1]["trace_id"] = "t-1"
    status, data = post(lenient, "/v1/messages", messages_body(odd))
    assert status == 200, data
    lenient.wait_for_log(r"field 'messages\[1\]\.content\[1\]\.trace_id' accepted and ignored")
    status, data = post(strict, "/v1/messages", messages_body(odd))
    assert status == 400
    assert data["type"] == "error" and data["error"]["type"] == "invalid_request_error"
    assert "messages[1].content[1].trace_id" in data["error"]["message"]


def test_chat_echoed_answer_and_nested_unknown_keys(lenient, strict):
    echoed = {"role": "assistant", "content": "Paris.", "refusal": None, "annotations": [], "audio": None,
              "function_call": None, "tool_calls": None}
    body = {"model": "tiny", "max_tokens": 2, "temperature": 0,
            "messages": [{"role": "user", "content": "Capital of France?"}, echoed,
                         {"role": "user", "content": "And Italy?"}]}
    for daemon in (lenient, strict):
        status, data = post(daemon, "/v1/chat/completions", body)
        assert status == 200, data
    body["messages"][2]["content"] = [{"type": "text", "text": "And Italy?", "lang": "en"}]
    status, data = post(lenient, "/v1/chat/completions", body)
    assert status == 200, data
    status, _, raw = post_json(strict, "/v1/chat/completions", body, timeout=60)
    assert status == 400
    assert_openai_error(raw, param="messages[2].content[0].lang")


def test_responses_earlier_output_items_pass_strict(strict):
    body = {"model": "tiny", "max_output_tokens": 2, "temperature": 0, "input": [
        {"role": "user", "content": "Hi"},
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hello.", "annotations": [], "logprobs": []}]},
        {"role": "user", "content": "Bye"}]}
    status, data = post(strict, "/v1/responses", body)
    assert status == 200, data
    body["input"][1]["content"][0]["bogus"] = 1
    status, _, raw = post_json(strict, "/v1/responses", body, timeout=60)
    assert status == 400
    assert_openai_error(raw, param="input[1].content[0].bogus")


def test_tokenize_follows_the_same_rule(lenient, strict):
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi", "mood": "ok"}]}
    status, data = post(lenient, "/tokenize", body)
    assert status == 200, data
    assert data["count"] > 0
    status, _, raw = post_json(strict, "/tokenize", body)
    assert status == 400
    assert_openai_error(raw, param="messages[0].mood")

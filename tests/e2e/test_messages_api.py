"""The Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens) against
the real daemon, through the official `anthropic` client: SmolLM2 with sluice's tool
template. A plain message, a stream (text_stream and the final message), a tool
forced with tool_choice {"type": "tool"} whose input validates against its
input_schema, the tool_use -> tool_result round trip, count_tokens, the x-api-key
check, and errors in Anthropic's shape. The SDK's own types parse every body and
event; small max_tokens keep each call short.
"""
import json

import anthropic
import jsonschema
import pytest

from conftest import DEFAULT_MODEL, REPO, require_model, start_module_daemon
from http_util import request

TOOLS_TEMPLATE = REPO / "deploy" / "chat_templates" / "smollm2_tools.jinja"
API_KEY = "sk-messages-test"

WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40},
                       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
# The SDK (2.x) has no sampling arguments any more; sluice still takes them in the body.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_model(DEFAULT_MODEL, "`make model`")
    config = tmp_path_factory.mktemp("messages") / "sluice.json"
    config.write_text(json.dumps({
        "api_keys": [API_KEY],
        "models": [{"path": str(DEFAULT_MODEL), "name": "smol-tools", "chat_template": str(TOOLS_TEMPLATE)}],
    }))
    daemon = start_module_daemon("--config", str(config))
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return anthropic.Anthropic(base_url=served.url, api_key=API_KEY, max_retries=0, timeout=600)


def test_create_plain(client):
    message = client.messages.create(model="smol-tools", max_tokens=12, extra_body=GREEDY,
                                     system="You are terse.", messages=ASK)
    assert isinstance(message, anthropic.types.Message)
    assert message.id.startswith("msg_")
    assert message.type == "message" and message.role == "assistant"
    assert message.model == "smol-tools"
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text
    assert message.usage.input_tokens > 0
    assert 0 < message.usage.output_tokens <= 12


def test_stop_sequence_is_reported(client):
    # Greedy, so the plain answer is known; its first word is then a stop sequence.
    plain = client.messages.create(model="smol-tools", max_tokens=12, extra_body=GREEDY, messages=ASK)
    word = plain.content[0].text.split()[1]
    stopped = client.messages.create(model="smol-tools", max_tokens=12, extra_body=GREEDY, messages=ASK,
                                     stop_sequences=[word])
    assert stopped.stop_reason == "stop_sequence"
    assert stopped.stop_sequence == word
    assert word not in stopped.content[0].text


def test_stream_text_and_final_message(client):
    whole = client.messages.create(model="smol-tools", max_tokens=12, extra_body=GREEDY, messages=ASK)
    with client.messages.stream(model="smol-tools", max_tokens=12, extra_body=GREEDY, messages=ASK) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == whole.content[0].text
    assert final.content[0].text == text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens
    assert final.usage.input_tokens == whole.usage.input_tokens


def test_raw_event_sequence(client):
    events = list(client.messages.create(model="smol-tools", max_tokens=6, extra_body=GREEDY, messages=ASK,
                                         stream=True))
    names = [event.type for event in events]
    assert names[0] == "message_start"
    assert names[1:3] == ["content_block_start", "content_block_delta"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert events[-2].delta.stop_reason == "max_tokens"
    assert events[-2].usage.output_tokens == 6


def forced_weather(client, messages=ASK, stream=False):
    kwargs = dict(model="smol-tools", max_tokens=60, extra_body=GREEDY, messages=messages, tools=[WEATHER],
                  tool_choice={"type": "tool", "name": "get_weather"})
    if not stream:
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as events:
        return events.get_final_message()


def test_forced_tool_use_validates(client):
    message = forced_weather(client)
    assert message.stop_reason == "tool_use"
    calls = [block for block in message.content if block.type == "tool_use"]
    assert len(calls) == 1, message.content
    assert calls[0].name == "get_weather"
    assert calls[0].id.startswith("toolu_")
    jsonschema.validate(calls[0].input, WEATHER["input_schema"])


def test_streamed_tool_use_equals_whole(client):
    whole = forced_weather(client)
    streamed = forced_weather(client, stream=True)
    assert streamed.stop_reason == "tool_use"
    pick = lambda m: [(b.type, b.name, b.input) for b in m.content if b.type == "tool_use"]
    assert pick(streamed) == pick(whole)


def test_tool_result_round_trip(client):
    first = forced_weather(client)
    call = next(block for block in first.content if block.type == "tool_use")
    messages = ASK + [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18 degrees, sunny"}]},
    ]
    answer = client.messages.create(model="smol-tools", max_tokens=16, extra_body=GREEDY, messages=messages,
                                    tools=[WEATHER])
    assert answer.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert answer.content
    # The result reached the prompt: it counts.
    without = client.messages.count_tokens(model="smol-tools", messages=messages[:2] + [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": ""}]}],
        tools=[WEATHER])
    assert answer.usage.input_tokens > without.input_tokens


def test_count_tokens(client):
    plain = client.messages.count_tokens(model="smol-tools", messages=ASK)
    message = client.messages.create(model="smol-tools", max_tokens=1, messages=ASK)
    assert plain.input_tokens == message.usage.input_tokens
    with_tools = client.messages.count_tokens(model="smol-tools", messages=ASK, tools=[WEATHER])
    assert with_tools.input_tokens > plain.input_tokens


def test_missing_max_tokens_is_anthropic_400(client, served):
    # The SDK's create() insists on max_tokens itself: post the body as is.
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body={"model": "smol-tools", "messages": ASK}, cast_to=object)
    assert caught.value.status_code == 400
    body = caught.value.body
    assert set(body) == {"type", "error"} and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in body["error"]["message"]
    status, _, raw = request(served, "POST", "/v1/messages", json.dumps({"model": "smol-tools", "messages": ASK}),
                             {"x-api-key": API_KEY, "content-type": "application/json"})
    assert status == 400
    assert json.loads(raw) == body


def test_a_refused_input_schema_is_named_in_this_apis_words(client):
    # Refused when the tool grammar is compiled, after parsing.
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="smol-tools", max_tokens=8, messages=ASK,
                               tools=[{"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": 5}}}}],
                               tool_choice={"type": "any"})
    message = caught.value.body["error"]["message"]
    assert "tools[0].input_schema" in message and "function" not in message, message


def test_a_final_assistant_message_is_a_prefill(client, served):
    prefill = "The weather in Paris is"
    message = client.messages.create(model="smol-tools", max_tokens=12, extra_body=GREEDY,
                                     messages=ASK + [{"role": "assistant", "content": prefill}])
    # The chat route continuing the same messages gives the same text.
    status, _, raw = request(served, "POST", "/v1/chat/completions", json.dumps({
        "model": "smol-tools", "messages": ASK + [{"role": "assistant", "content": prefill}],
        "continue_final_message": True, "max_tokens": 12, **GREEDY}),
        {"Authorization": f"Bearer {API_KEY}", "content-type": "application/json"})
    assert status == 200, raw
    assert message.content[0].text == json.loads(raw)["choices"][0]["message"]["content"]
    assert message.usage.input_tokens == json.loads(raw)["usage"]["prompt_tokens"]


def test_unknown_model_is_not_found(client):
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(model="nope", max_tokens=4, messages=ASK)
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "not_found_error"


def test_api_key_is_checked(served):
    wrong = anthropic.Anthropic(base_url=served.url, api_key="sk-wrong", max_retries=0, timeout=60)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        wrong.messages.create(model="smol-tools", max_tokens=4, messages=ASK)
    assert caught.value.body == {"type": "error", "error": {"type": "authentication_error",
                                                          "message": caught.value.body["error"]["message"]}}


def test_x_api_key_is_accepted(served):
    # The 2.x SDK sends its api_key as a Bearer token; older clients and curl examples
    # send x-api-key, which must work alone.
    body = json.dumps({"model": "smol-tools", "max_tokens": 2, "messages": ASK})
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    status, _, raw = request(served, "POST", "/v1/messages", body, {**headers, "x-api-key": API_KEY}, timeout=300)
    assert status == 200, raw
    assert json.loads(raw)["type"] == "message"
    status, _, _ = request(served, "POST", "/v1/messages", body, {**headers, "x-api-key": "sk-wrong"})
    assert status == 401

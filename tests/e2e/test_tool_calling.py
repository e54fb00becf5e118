"""Tool calling and reasoning against the real daemon, through the official `openai`
client: SmolLM2 with sluice's tool template (deploy/chat_templates/smollm2_tools.jinja)
for constrained calls (tool_choice required, a named function, parallel_tool_calls
false), streamed and whole, and the tool-result round trip; the tiny fixture model
with forced outputs (a regex constraint that spells the output) for the parser
through the engine and HTTP path: calls after text, two calls, reasoning, a call cut
by max_tokens; SmolLM2 with its own template for the clear 400; bad tool input.
"""
import json

import jsonschema
import openai
import pytest

from conftest import DEFAULT_MODEL, REPO, TINY_MODEL, require_model, start_module_daemon
from http_util import assert_openai_error, request

TOOLS_TEMPLATE = REPO / "deploy" / "chat_templates" / "smollm2_tools.jinja"
TINY_TEMPLATE = REPO / "tests" / "fixtures" / "chat" / "tiny_tools.jinja"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 40},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The local time in a time zone.",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 30}},
                       "required": ["zone"], "additionalProperties": False},
    },
}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}
ASK = [{"role": "user", "content": "What is the weather in Paris, and the time in Tokyo?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One daemon: SmolLM2 with the tool template, SmolLM2 with its own template, and
    the tiny model with a short tool template, the hermes parser and the qwen3 reasoning parser."""
    require_model(DEFAULT_MODEL, "`make model`")
    config = tmp_path_factory.mktemp("tools") / "sluice.json"
    config.write_text(json.dumps({"models": [
        {"path": str(DEFAULT_MODEL), "name": "smol-tools", "chat_template": str(TOOLS_TEMPLATE)},
        {"path": str(DEFAULT_MODEL), "name": "smol"},
        {"path": str(TINY_MODEL), "name": "tiny-tools", "chat_template": str(TINY_TEMPLATE),
         "tool_call_parser": "hermes", "reasoning_parser": "qwen3"},
    ]}))
    daemon = start_module_daemon("--config", str(config))
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=600)


def assert_valid_call(call, allowed=("get_weather", "get_time")):
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name in allowed
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def collect_stream(stream):
    """The message a client rebuilds from the deltas, and the finish reason."""
    content, reasoning, calls, finish = "", "", [], None
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            reasoning += getattr(delta, "reasoning_content", None) or ""
            for call in delta.tool_calls or []:
                if call.id:
                    assert call.index == len(calls), "a call's first delta comes once, in order"
                    calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
                calls[call.index]["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return content, reasoning, calls, finish


# --- SmolLM2: constrained calls ---------------------------------------------------------

def test_required_returns_valid_calls(client):
    completion = client.chat.completions.create(model="smol-tools", messages=ASK, tools=[WEATHER, TIME],
                                                tool_choice="required", temperature=0, max_tokens=200)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls, choice.message
    for call in choice.message.tool_calls:
        assert_valid_call(call)
    assert "<tool_call>" not in (choice.message.content or "")


def test_named_function_is_the_one_called(client):
    completion = client.chat.completions.create(
        model="smol-tools", messages=ASK, tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}}, temperature=0.8, seed=5, max_tokens=200)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [c.function.name for c in choice.message.tool_calls] == ["get_time"]
    assert_valid_call(choice.message.tool_calls[0], allowed=("get_time",))


def test_streamed_required_equals_the_whole_answer(client):
    kwargs = dict(model="smol-tools", messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                  temperature=0, max_tokens=200)
    whole = client.chat.completions.create(**kwargs).choices[0]
    content, _, calls, finish = collect_stream(client.chat.completions.create(stream=True, **kwargs))
    assert finish == whole.finish_reason == "tool_calls"
    assert content == (whole.message.content or "")
    assert [(c["name"], c["arguments"]) for c in calls] == [
        (c.function.name, c.function.arguments) for c in whole.message.tool_calls]
    for call in calls:
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])


def test_parallel_tool_calls_false_gives_one_call(client):
    for seed in range(3):
        completion = client.chat.completions.create(
            model="smol-tools", messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
            parallel_tool_calls=False, temperature=1.0, seed=seed, max_tokens=200)
        choice = completion.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert len(choice.message.tool_calls) == 1
        assert_valid_call(choice.message.tool_calls[0])


def test_tool_result_round_trip_renders_and_answers(client):
    first = client.chat.completions.create(model="smol-tools", messages=ASK, tools=[WEATHER],
                                           tool_choice="required", parallel_tool_calls=False,
                                           temperature=0, max_tokens=200).choices[0].message
    call = first.tool_calls[0]
    messages = ASK + [first.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21, "sky": "sunny"}'}]
    answer = client.chat.completions.create(model="smol-tools", messages=messages, tools=[WEATHER],
                                            tool_choice="none", temperature=0, max_tokens=40)
    choice = answer.choices[0]
    assert choice.finish_reason in ("stop", "length")
    assert choice.message.tool_calls is None
    assert choice.message.content
    # The legacy fields say the same through the same path.
    legacy = client.chat.completions.create(model="smol-tools", messages=ASK, functions=[WEATHER["function"]],
                                            function_call={"name": "get_weather"}, temperature=0, max_tokens=200)
    assert legacy.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_auto_answers_text_or_valid_calls(client):
    for seed in range(3):
        choice = client.chat.completions.create(model="smol-tools", messages=ASK, tools=[WEATHER, TIME],
                                                temperature=1.0, seed=seed, max_tokens=120).choices[0]
        assert "<tool_call>" not in (choice.message.content or "")
        if choice.message.tool_calls:
            assert choice.finish_reason in ("tool_calls", "length")
            if choice.finish_reason == "tool_calls":
                for call in choice.message.tool_calls:
                    assert_valid_call(call)
        else:
            assert choice.finish_reason in ("stop", "length")


# --- the tiny model: forced outputs through the parser ----------------------------------

def forced(client, text, **kwargs):
    """`text` spelled by a regex constraint (the tiny model's weights are random)."""
    pattern = "".join("\\" + c if c in "\\^$.|?*+()[]{}" else c for c in text)
    return dict(model="tiny-tools", messages=[{"role": "user", "content": "go"}], tools=[WEATHER, TIME],
                extra_body={"structured_outputs": {"regex": pattern}}, temperature=0, max_tokens=200, **kwargs)


CASES = {
    "text then a call": ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": '
                         '{"city": "Paris", "unit": "celsius"}}\n</tool_call>',
                         "Let me check.", "", [("get_weather", '{"city": "Paris", "unit": "celsius"}')]),
    "two calls": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}\n</tool_call>\n'
                  '<tool_call>\n{"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}\n</tool_call>',
                  "", "", [("get_weather", '{"city": "Oslo", "unit": "celsius"}'),
                           ("get_time", '{"zone": "Asia/Tokyo"}')]),
    "reasoning then a call": ('<think>\nThe user wants <tool_call> weather.\n</think>\n\n<tool_call>\n'
                              '{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>',
                              "", "The user wants <tool_call> weather.", [("get_time", '{"zone": "UTC"}')]),
    "invalid JSON stays text": ("<tool_call>\nnot json\n</tool_call>", "<tool_call>\nnot json\n</tool_call>", "", []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_forced_outputs_parse_the_same_streamed_and_whole(client, case):
    text, content, reasoning, calls = CASES[case]
    whole = client.chat.completions.create(**forced(client, text)).choices[0]
    assert (whole.message.content or "") == content
    assert (getattr(whole.message, "reasoning_content", None) or "") == reasoning
    got = [(c.function.name, c.function.arguments) for c in whole.message.tool_calls or []]
    assert got == calls
    assert whole.finish_reason == ("tool_calls" if calls else "stop")
    s_content, s_reasoning, s_calls, s_finish = collect_stream(
        client.chat.completions.create(stream=True, **forced(client, text)))
    assert (s_content, s_reasoning, s_finish) == (content, reasoning, whole.finish_reason)
    assert [(c["name"], c["arguments"]) for c in s_calls] == calls


def test_a_call_cut_by_max_tokens_keeps_its_partial_arguments(client):
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Reykjavik", "unit": "celsius"}}\n</tool_call>'
    body = forced(client, text)
    body["max_tokens"] = 60
    choice = client.chat.completions.create(**body).choices[0]
    assert choice.finish_reason == "length"
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert '{"city": "Reykjavik", "unit": "celsius"}'.startswith(call.function.arguments)
    assert (choice.message.content or "") == ""


# --- refusals ----------------------------------------------------------------------------

def test_a_template_without_tools_is_refused_clearly(served):
    status, _, raw = request(served, "POST", "/v1/chat/completions", body=json.dumps(
        {"model": "smol", "messages": ASK, "tools": [WEATHER]}), headers={"Content-Type": "application/json"})
    assert status == 400
    error = assert_openai_error(raw, param="tools")
    assert "does not render tools" in error["message"]


@pytest.mark.parametrize("tools, extra, param", [
    ([{"type": "function", "function": {"description": "x"}}], {}, "tools[0].function.name"),
    ([WEATHER, WEATHER], {}, "tools[1].function.name"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}], {"tool_choice": "required"},
     "tools[0].function.parameters"),
    ([WEATHER], {"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
])
def test_bad_tools_are_refused_with_their_param(served, tools, extra, param):
    body = {"model": "smol-tools", "messages": ASK, "tools": tools, **extra}
    status, _, raw = request(served, "POST", "/v1/chat/completions", body=json.dumps(body),
                             headers={"Content-Type": "application/json"})
    assert status == 400, raw
    assert_openai_error(raw, param=param)


def test_a_tool_message_without_a_matching_call_is_refused(served):
    messages = ASK + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_b", "content": "x"}]
    status, _, raw = request(served, "POST", "/v1/chat/completions", body=json.dumps(
        {"model": "smol-tools", "messages": messages, "tools": [WEATHER]}), headers={"Content-Type": "application/json"})
    assert status == 400, raw
    assert_openai_error(raw, param="messages[2].tool_call_id")

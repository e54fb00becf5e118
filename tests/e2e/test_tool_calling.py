"""Tool calling and reasoning against the real daemon, through the official `openai`
client: SmolLM2 with sluice's tool template (deploy/chat_templates/smollm2_tools.jinja)
for constrained calls (tool_choice required, a named function, parallel_tool_calls
false), streamed and whole, and the tool-result round trip; the tiny fixture model
with forced outputs (a regex constraint that spells the output) for the parser
through the engine and HTTP path: calls after text, two calls, reasoning, a call cut
by max_tokens; the generic format on templates that do not render tools (the tiny
model's, SmolLM2's and Gemma 3's own): enforced calls, forced envelopes, the tool loop,
the Responses and Messages APIs; tool_call_parser none for the clear 400; bad tool input.
"""
import json

import jsonschema
import openai
import pytest

from conftest import DEFAULT_MODEL, GEMMA_MODEL, REPO, TINY_MODEL, on_gpu, require_model, start_module_daemon
from http_util import assert_openai_error, request

TOOLS_TEMPLATE = REPO / "deploy" / "chat_templates" / "smollm2_tools.jinja"
TINY_TEMPLATE = REPO / "tests" / "fixtures" / "chat" / "tiny_tools.jinja"
GEMMA_TEMPLATE = REPO / "tests" / "fixtures" / "chat" / "templates" / "gemma3.jinja"

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
    """One daemon: SmolLM2 with the tool template, SmolLM2 with its own template (the
    generic format), the tiny model with a short tool template, the hermes parser and the
    qwen3 reasoning parser, and the tiny model with its own template (generic; and with
    tool_call_parser none)."""
    require_model(DEFAULT_MODEL, "`make model`")
    config = tmp_path_factory.mktemp("tools") / "sluice.json"
    config.write_text(json.dumps({"models": [
        {"path": str(DEFAULT_MODEL), "name": "smol-tools", "chat_template": str(TOOLS_TEMPLATE)},
        {"path": str(DEFAULT_MODEL), "name": "smol"},
        {"path": str(TINY_MODEL), "name": "tiny-tools", "chat_template": str(TINY_TEMPLATE),
         "tool_call_parser": "hermes", "reasoning_parser": "qwen3"},
        {"path": str(TINY_MODEL), "name": "tiny-generic"},
        {"path": str(TINY_MODEL), "name": "tiny-none", "tool_call_parser": "none"},
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


# --- the generic format: templates that do not render tools -----------------------------

# The tiny model's context is 256 tokens, its vocabulary nearly bytes: the generic
# instructions with one tool of no arguments (held to {}) and its call just fit.
PING = {"type": "function", "function": {"name": "ping", "parameters": {"additionalProperties": False}}}
PING_SCHEMA = {"type": "object", "additionalProperties": False}
UNIT = {"type": "function", "function": {"name": "unit", "parameters": {
    "type": "object", "properties": {"u": {"enum": ["c", "f"]}}, "required": ["u"]}}}
GO = [{"role": "user", "content": "go"}]


def test_generic_required_on_the_tiny_model_gives_a_valid_call(client):
    """The tiny model's weights are random: only the grammar makes its output a call."""
    for seed in range(3):
        choice = client.chat.completions.create(model="tiny-generic", messages=GO, tools=[PING],
                                                tool_choice="required", parallel_tool_calls=False,
                                                temperature=1.0, seed=seed).choices[0]
        assert choice.finish_reason == "tool_calls"
        [call] = choice.message.tool_calls
        assert call.type == "function" and call.id.startswith("call_") and call.function.name == "ping"
        jsonschema.validate(json.loads(call.function.arguments), PING_SCHEMA)
        assert choice.message.content is None


def test_generic_named_and_streamed_on_the_tiny_model(client):
    kwargs = dict(model="tiny-generic", messages=GO, tools=[PING],
                  tool_choice={"type": "function", "function": {"name": "ping"}}, temperature=1.0, seed=7)
    whole = client.chat.completions.create(**kwargs).choices[0]
    assert whole.finish_reason == "tool_calls"
    assert [c.function.name for c in whole.message.tool_calls] == ["ping"]
    jsonschema.validate(json.loads(whole.message.tool_calls[0].function.arguments), PING_SCHEMA)
    content, _, calls, finish = collect_stream(client.chat.completions.create(stream=True, **kwargs))
    assert (content, finish) == ("", "tool_calls")
    assert [(c["name"], c["arguments"]) for c in calls] == [
        (c.function.name, c.function.arguments) for c in whole.message.tool_calls]


def forced_generic(text, **kwargs):
    """`text` spelled by a regex constraint, which under tool_choice auto covers the
    whole output; the generic parser still reads it as the envelope (SmolLM2 as shipped:
    the tiny model's context has no room for the auto instructions and an envelope)."""
    pattern = "".join("\\" + c if c in "\\^$.|?*+()[]{}" else c for c in text)
    return dict(model="smol", messages=GO, tools=[UNIT], extra_body={"structured_outputs": {"regex": pattern}},
                temperature=0, max_tokens=100, **kwargs)


GENERIC_CASES = {
    "a response with escapes and unicode": (
        '{"response": "Caf\\u00e9 \\"ok\\"\\n\\ud83d\\ude00 \u00fc."}', 'Caf\u00e9 "ok"\n\U0001F600 \u00fc.', []),
    "two calls": ('{"tool_calls": [{"name": "unit", "arguments": {"u": "c"}}, {"name": "unit", "arguments": {"u": "f"}}]}',
                  "", [("unit", '{"u": "c"}'), ("unit", '{"u": "f"}')]),
    "not the envelope": ("Hello there.", "Hello there.", []),
}


@pytest.mark.parametrize("case", list(GENERIC_CASES))
def test_generic_envelopes_parse_the_same_streamed_and_whole(client, case):
    text, content, calls = GENERIC_CASES[case]
    whole = client.chat.completions.create(**forced_generic(text)).choices[0]
    assert (whole.message.content or "") == content
    assert [(c.function.name, c.function.arguments) for c in whole.message.tool_calls or []] == calls
    assert whole.finish_reason == ("tool_calls" if calls else "stop")
    s_content, _, s_calls, s_finish = collect_stream(
        client.chat.completions.create(stream=True, **forced_generic(text)))
    assert (s_content, s_finish) == (content, whole.finish_reason)
    assert [(c["name"], c["arguments"]) for c in s_calls] == calls


def test_generic_smollm2_as_shipped_calls_and_answers(client):
    """SmolLM2's own template does not render tools: the generic format carries them."""
    required = client.chat.completions.create(model="smol", messages=ASK, tools=[WEATHER, TIME],
                                              tool_choice="required", temperature=0, max_tokens=200).choices[0]
    assert required.finish_reason == "tool_calls"
    assert required.message.tool_calls
    for call in required.message.tool_calls:
        assert_valid_call(call)
    one = client.chat.completions.create(model="smol", messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                                         parallel_tool_calls=False, temperature=1.0, seed=3,
                                         max_tokens=200).choices[0]
    assert one.finish_reason == "tool_calls" and len(one.message.tool_calls) == 1
    assert_valid_call(one.message.tool_calls[0])
    for seed in range(3):
        choice = client.chat.completions.create(model="smol", messages=ASK, tools=[WEATHER, TIME],
                                                temperature=1.0, seed=seed, max_tokens=120).choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason in ("tool_calls", "length")
            if choice.finish_reason == "tool_calls":
                for call in choice.message.tool_calls:
                    assert_valid_call(call)
                assert choice.message.content is None
        else:
            assert choice.finish_reason in ("stop", "length")
            assert not (choice.message.content or "").lstrip().startswith('{"response"')


def test_generic_tool_loop_on_smollm2_as_shipped(client):
    first = client.chat.completions.create(model="smol", messages=ASK, tools=[WEATHER], tool_choice="required",
                                           parallel_tool_calls=False, temperature=0, max_tokens=200)
    message = first.choices[0].message
    call = message.tool_calls[0]
    messages = ASK + [message.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21, "sky": "sunny"}'}]
    kwargs = dict(model="smol", messages=messages, tools=[WEATHER], temperature=0, max_tokens=80)
    whole = client.chat.completions.create(**kwargs).choices[0]
    assert whole.finish_reason in ("stop", "tool_calls", "length")
    if whole.message.tool_calls is None:
        assert whole.message.content
    content, _, calls, finish = collect_stream(client.chat.completions.create(stream=True, **kwargs))
    assert (content, finish) == (whole.message.content or "", whole.finish_reason)
    assert [(c["name"], c["arguments"]) for c in calls] == [
        (c.function.name, c.function.arguments) for c in whole.message.tool_calls or []]
    # tool_choice none: no tool text, no grammar, the history still renders.
    plain = client.chat.completions.create(model="smol", messages=messages, tools=[WEATHER], tool_choice="none",
                                           temperature=0, max_tokens=20).choices[0]
    assert plain.message.tool_calls is None and plain.message.content


def test_generic_response_format_holds_the_response(client):
    """A JSON response_format constrains the envelope's "response"; calls stay possible.
    (SmolLM2 answers the capital question at temperature 0 on the CPU: the response path.)"""
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
              "additionalProperties": False}
    answered = 0
    for question in ("What is the capital of France? Answer with the city.", "Name a big city in Italy."):
        choice = client.chat.completions.create(
            model="smol", messages=[{"role": "user", "content": question}], tools=[TIME], temperature=0,
            max_tokens=60, response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
        ).choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason == "tool_calls"
            for call in choice.message.tool_calls:
                assert_valid_call(call)
        else:
            assert choice.finish_reason == "stop"
            jsonschema.validate(json.loads(choice.message.content), schema)
            answered += 1
    if not on_gpu():
        assert answered >= 1


def test_generic_through_the_responses_and_messages_apis(served):
    status, _, raw = request(served, "POST", "/v1/responses", body=json.dumps({
        "model": "smol", "input": ASK[0]["content"], "tool_choice": "required", "parallel_tool_calls": False,
        "max_output_tokens": 200,
        "temperature": 0, "tools": [{"type": "function", **WEATHER["function"]}]}),
        headers={"Content-Type": "application/json"}, timeout=600)
    assert status == 200, raw
    calls = [item for item in json.loads(raw)["output"] if item["type"] == "function_call"]
    assert len(calls) == 1 and calls[0]["name"] == "get_weather"
    for call in calls:
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS["get_weather"])

    status, _, raw = request(served, "POST", "/v1/messages", body=json.dumps({
        "model": "smol", "max_tokens": 200, "messages": ASK, "temperature": 0,
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "tools": [{"name": "get_weather", "description": WEATHER["function"]["description"],
                   "input_schema": WEATHER["function"]["parameters"]}]}),
        headers={"Content-Type": "application/json"}, timeout=600)
    assert status == 200, raw
    message = json.loads(raw)
    assert message["stop_reason"] == "tool_use"
    uses = [block for block in message["content"] if block["type"] == "tool_use"]
    assert len(uses) == 1 and uses[0]["name"] == "get_weather"
    for use in uses:
        jsonschema.validate(use["input"], SCHEMAS["get_weather"])


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    """Gemma 3 270M with Gemma 3's own template (the GGUF carries none; the committed copy
    is the one Google ships), which renders no tools and insists on alternating roles."""
    require_model(GEMMA_MODEL)
    config = tmp_path_factory.mktemp("gemma-tools") / "sluice.json"
    config.write_text(json.dumps({"models": [
        {"path": str(GEMMA_MODEL), "name": "gemma", "chat_template": str(GEMMA_TEMPLATE)}]}))
    daemon = start_module_daemon("--config", str(config))
    yield openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0, timeout=600)
    daemon.kill()


def test_generic_on_gemma3_as_shipped(gemma):
    first = gemma.chat.completions.create(model="gemma", messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                                          parallel_tool_calls=False, temperature=0, max_tokens=100).choices[0]
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert_valid_call(call)
    # The tool loop keeps Gemma's user/model alternation: the result goes in as user text.
    messages = ASK + [first.message.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": "18 C, cloudy"}]
    answer = gemma.chat.completions.create(model="gemma", messages=messages, tools=[WEATHER, TIME],
                                           parallel_tool_calls=False, temperature=0, max_tokens=60).choices[0]
    if answer.message.tool_calls:
        assert answer.finish_reason in ("tool_calls", "length")
    else:
        assert answer.finish_reason in ("stop", "length")


# --- refusals ----------------------------------------------------------------------------

def test_a_template_without_tools_and_parser_none_is_refused_clearly(served):
    status, _, raw = request(served, "POST", "/v1/chat/completions", body=json.dumps(
        {"model": "tiny-none", "messages": ASK, "tools": [WEATHER]}), headers={"Content-Type": "application/json"})
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

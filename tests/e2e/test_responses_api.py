"""The OpenAI Responses API (/v1/responses) against the real daemon, through the
official `openai` client: SmolLM2 with sluice's tool template. Plain and with
instructions, a forced function call and the function_call_output round trip,
text.format json_schema, streamed (the SDK's event iterator and
client.responses.stream), previous_response_id over three turns, store false then
retrieval (not found), GET and DELETE, and the 400s that name the field.
"""
import json

import jsonschema
import openai
import pytest

from conftest import DEFAULT_MODEL, REPO, require_model, start_module_daemon
from http_util import assert_openai_error, request

TOOLS_TEMPLATE = REPO / "deploy" / "chat_templates" / "smollm2_tools.jinja"
MODEL = "smol-tools"

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40},
                       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "strict": True,
}
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"sunny": {"type": "boolean"}, "city": {"type": "string", "maxLength": 20}},
    "required": ["sunny", "city"],
    "additionalProperties": False,
}
JSON_FORMAT = {"format": {"type": "json_schema", "name": "answer", "schema": ANSWER_SCHEMA, "strict": True}}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_model(DEFAULT_MODEL, "`make model`")
    config = tmp_path_factory.mktemp("responses") / "sluice.json"
    config.write_text(json.dumps({
        "models": [{"path": str(DEFAULT_MODEL), "name": MODEL, "chat_template": str(TOOLS_TEMPLATE)}],
        "responses_store_max_count": 50,
    }))
    daemon = start_module_daemon("--config", str(config))
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=600)


def test_plain_create(client):
    response = client.responses.create(model=MODEL, input="Say hello.", max_output_tokens=8, temperature=0)
    assert response.id.startswith("resp_")
    assert response.object == "response"
    assert response.model == MODEL
    assert response.status in ("completed", "incomplete")
    if response.status == "incomplete":
        assert response.incomplete_details.reason == "max_output_tokens"
    assert len(response.output) == 1
    message = response.output[0]
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert message.content[0].type == "output_text"
    assert response.output_text == message.content[0].text and response.output_text
    usage = response.usage
    assert usage.input_tokens > 0 and 0 < usage.output_tokens <= 8
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.output_tokens_details.reasoning_tokens == 0
    assert response.store is True and response.max_output_tokens == 8


def test_instructions_reach_the_prompt(client):
    short = client.responses.create(model=MODEL, input="Say hello.", instructions="You are a pirate.",
                                    max_output_tokens=4, temperature=0)
    longer = client.responses.create(model=MODEL, input="Say hello.",
                                     instructions="You are a pirate. " + "Say arr in every sentence. " * 4,
                                     max_output_tokens=4, temperature=0)
    assert short.instructions == "You are a pirate."
    # The instructions are the prompt's system message: longer ones, more input tokens.
    assert longer.usage.input_tokens >= short.usage.input_tokens + 4 * 5


def test_function_call_and_output_round_trip(client):
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.responses.create(model=MODEL, input=ask, tools=[WEATHER], tool_choice="required",
                                    parallel_tool_calls=False, temperature=0, max_output_tokens=200)
    assert first.status == "completed"
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1, first.output
    call = calls[0]
    assert call.name == "get_weather" and call.call_id.startswith("call_") and call.id.startswith("fc_")
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"])
    assert first.tools[0].name == "get_weather" and first.tool_choice == "required"
    follow_up = ask + [item.model_dump(exclude_none=True) for item in first.output] + [
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"temperature": 21, "sky": "sunny"}'}]
    answer = client.responses.create(model=MODEL, input=follow_up, tools=[WEATHER], tool_choice="none",
                                     temperature=0, max_output_tokens=16, store=False)
    assert answer.output_text
    assert not [item for item in answer.output if item.type == "function_call"]
    # The tool output is in the prompt.
    assert answer.usage.input_tokens > first.usage.input_tokens


def test_json_schema_text_format(client):
    response = client.responses.create(model=MODEL, input="Is it sunny in Rome? Answer in JSON.",
                                       text=JSON_FORMAT, temperature=0, max_output_tokens=60)
    assert response.status == "completed"
    jsonschema.validate(json.loads(response.output_text), ANSWER_SCHEMA)
    assert response.text.format.type == "json_schema"


def test_streamed_events_come_in_order(client):
    stream = client.responses.create(model=MODEL, input="Say hello.", max_output_tokens=8, temperature=0,
                                     stream=True)
    events = list(stream)
    types = [event.type for event in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] in ("response.completed", "response.incomplete")
    assert [event.sequence_number for event in events] == list(range(len(events)))
    order = ["response.output_item.added", "response.content_part.added", "response.output_text.delta",
             "response.output_text.done", "response.content_part.done", "response.output_item.done"]
    positions = [types.index(name) for name in order]
    assert positions == sorted(positions), types
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    final = events[-1].response
    assert deltas == final.output_text
    assert events[0].response.id == final.id
    whole = client.responses.create(model=MODEL, input="Say hello.", max_output_tokens=8, temperature=0)
    assert whole.output_text == final.output_text


def test_stream_helper_final_response(client):
    with client.responses.stream(model=MODEL, input="Is it sunny in Rome? Answer in JSON.", text=JSON_FORMAT,
                                 temperature=0, max_output_tokens=60) as stream:
        texts = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert "".join(texts) == final.output_text
    jsonschema.validate(json.loads(final.output_text), ANSWER_SCHEMA)


def test_stream_helper_function_call(client):
    with client.responses.stream(model=MODEL, input="What is the weather in Oslo?", tools=[WEATHER],
                                 tool_choice="required", parallel_tool_calls=False, temperature=0,
                                 max_output_tokens=200) as stream:
        arguments = "".join(e.delta for e in stream if e.type == "response.function_call_arguments.delta")
        final = stream.get_final_response()
    call = [item for item in final.output if item.type == "function_call"][0]
    assert call.arguments == arguments
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"])


def test_previous_response_id_over_three_turns(client):
    first = client.responses.create(model=MODEL, input="My name is Ada.", max_output_tokens=8, temperature=0)
    second = client.responses.create(model=MODEL, input="I live in Paris.", previous_response_id=first.id,
                                     max_output_tokens=8, temperature=0)
    third = client.responses.create(model=MODEL, input="What is my name?", previous_response_id=second.id,
                                    max_output_tokens=8, temperature=0)
    assert third.previous_response_id == second.id
    alone = client.responses.create(model=MODEL, input="What is my name?", max_output_tokens=8, temperature=0,
                                    store=False)
    # Each turn's prompt holds every earlier input and output.
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    assert third.usage.input_tokens > second.usage.input_tokens + second.usage.output_tokens
    assert third.usage.input_tokens > alone.usage.input_tokens


def test_previous_response_carries_function_calls(client):
    first = client.responses.create(model=MODEL, input="What is the weather in Paris?", tools=[WEATHER],
                                    tool_choice="required", parallel_tool_calls=False, temperature=0,
                                    max_output_tokens=200)
    call = [item for item in first.output if item.type == "function_call"][0]
    # Only the output answers the call: the stored conversation must hold the call itself.
    answer = client.responses.create(
        model=MODEL, previous_response_id=first.id, tools=[WEATHER], tool_choice="none", temperature=0,
        max_output_tokens=8,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"sky": "sunny"}'}])
    assert answer.status in ("completed", "incomplete")
    assert answer.usage.input_tokens > first.usage.input_tokens


def test_store_false_is_not_retrievable(client):
    response = client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, previous_response_id=response.id)
    assert caught.value.body["param"] == "previous_response_id"
    assert caught.value.body["type"] == "invalid_request_error"


def test_retrieve_and_delete(client):
    response = client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, temperature=0,
                                       metadata={"case": "retrieve"})
    fetched = client.responses.retrieve(response.id)
    assert fetched.id == response.id
    assert fetched.output_text == response.output_text
    assert fetched.metadata == {"case": "retrieve"}
    client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(response.id)


@pytest.mark.parametrize("extra,param", [
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"background": True}, "background"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x"}]}]},
     "input[0].content[0].type"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    # Refused when its grammar is compiled (after parsing): still this API's name.
    ({"tools": [{"type": "function", "name": "f", "parameters": {"type": 5}}], "tool_choice": "required"},
     "tools[0].parameters"),
])
def test_bad_requests_name_the_field(served, extra, param):
    body = {"model": MODEL, "input": "Hi", **extra}
    status, _, data = request(served, "POST", "/v1/responses", body=json.dumps(body),
                              headers={"Content-Type": "application/json"})
    assert status == 400, data
    assert_openai_error(data, param=param)


def test_unknown_model_is_404(served):
    status, _, data = request(served, "POST", "/v1/responses", body=json.dumps({"model": "nope", "input": "Hi"}),
                              headers={"Content-Type": "application/json"})
    assert status == 404, data
    assert_openai_error(data)

"""The libraries applications are written with, unchanged, against the real daemon:
langchain-openai, langchain-anthropic, instructor, the OpenAI Agents SDK and
pydantic-ai (pinned in requirements.txt). A library that cannot parse what sluice
sends is a sluice defect, whatever a hand-written check says.

SmolLM2-135M serves as `smol-tools` (deploy/chat_templates/smollm2_tools.jinja: hermes
tool calls) and as `smol` (its own template, which renders no tools: the generic
format). A 135M model's answers are not checked for sense: structured output and
forced tool calls are held by the grammar, so what is checked is that each library
got a typed, parsed result or call. Everything talks to 127.0.0.1 only; tracing and
telemetry are off.
"""
import json
import os

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
for key in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
    os.environ.pop(key, None)

import anthropic  # noqa: E402
import instructor  # noqa: E402
import openai  # noqa: E402
import pydantic  # noqa: E402
from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner,  # noqa: E402
                    function_tool, set_tracing_disabled)
from langchain_anthropic import ChatAnthropic  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from pydantic_ai import Agent as PydanticAgent  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from conftest import DEFAULT_MODEL, REPO, require_model, start_module_daemon  # noqa: E402

TOOLS_TEMPLATE = REPO / "deploy" / "chat_templates" / "smollm2_tools.jinja"
KEY = "unused"

set_tracing_disabled(True)


class Country(pydantic.BaseModel):
    """A country, as a client's pydantic model (no additionalProperties in its schema)."""
    name: str = pydantic.Field(max_length=30)
    capital: str = pydantic.Field(max_length=30)
    population: int


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"sunny in {city}"


ASK_COUNTRY = "Extract the country: Italy, whose capital is Rome, has 59 million people."


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_model(DEFAULT_MODEL, "`make model`")
    config = tmp_path_factory.mktemp("libraries") / "sluice.json"
    config.write_text(json.dumps({"models": [
        {"path": str(DEFAULT_MODEL), "name": "smol-tools", "chat_template": str(TOOLS_TEMPLATE)},
        {"path": str(DEFAULT_MODEL), "name": "smol"},
    ]}))
    daemon = start_module_daemon("--config", str(config))
    yield daemon
    daemon.kill()


def chat_openai(served, model="smol-tools", **kwargs):
    return ChatOpenAI(model=model, base_url=f"{served.url}/v1", api_key=KEY, max_retries=0, timeout=300,
                      temperature=0, **kwargs)


def chat_anthropic(served, **kwargs):
    return ChatAnthropic(model="smol-tools", base_url=served.url, api_key=KEY, max_retries=0, timeout=300,
                         temperature=0, **kwargs)


# ---- langchain-openai

def test_langchain_openai_invoke_and_stream(served):
    llm = chat_openai(served, max_tokens=24)
    answer = llm.invoke("Say hello.")
    assert isinstance(answer.content, str) and answer.content
    assert answer.usage_metadata["output_tokens"] > 0
    chunks = list(llm.stream("Say hello."))
    assert len(chunks) > 2
    assert "".join(c.content for c in chunks) == answer.content  # greedy: the same text


def test_langchain_openai_structured_output_json_schema(served):
    structured = chat_openai(served, max_tokens=200).with_structured_output(Country, method="json_schema")
    country = structured.invoke(ASK_COUNTRY)
    assert isinstance(country, Country)


@pytest.mark.parametrize("model", ["smol-tools", "smol"])  # hermes, and the generic format
def test_langchain_openai_bind_tools_forced(served, model):
    llm = chat_openai(served, model=model, max_tokens=100).bind_tools([get_weather], tool_choice="get_weather")
    answer = llm.invoke("What is the weather in Paris?")
    assert len(answer.tool_calls) >= 1
    call = answer.tool_calls[0]
    assert call["name"] == "get_weather"
    assert isinstance(call["args"]["city"], str)
    assert call["id"]


def test_langchain_openai_responses_api(served):
    llm = chat_openai(served, max_tokens=24, use_responses_api=True)
    answer = llm.invoke("Say hello.")
    assert answer.text
    assert answer.response_metadata.get("id", "").startswith("resp")
    chunks = list(llm.stream("Say hello."))
    assert len(chunks) > 2
    assert "".join(c.text for c in chunks) == answer.text


# ---- langchain-anthropic (/v1/messages)

def test_langchain_anthropic_invoke_and_stream(served):
    llm = chat_anthropic(served, max_tokens=24)
    answer = llm.invoke("Say hello.")
    assert answer.text
    assert answer.usage_metadata["output_tokens"] > 0
    chunks = list(llm.stream("Say hello."))
    assert len(chunks) > 2
    assert "".join(c.text for c in chunks) == answer.text


def test_langchain_anthropic_tools(served):
    llm = chat_anthropic(served, max_tokens=100).bind_tools([get_weather], tool_choice="get_weather")
    question = ("human", "What is the weather in Paris?")
    answer = llm.invoke([question])
    assert answer.tool_calls and answer.tool_calls[0]["name"] == "get_weather"
    call = answer.tool_calls[0]
    assert isinstance(call["args"]["city"], str)
    # The documented loop: the AI message goes back as it came, with the tool's result.
    from langchain_core.messages import ToolMessage
    result = ToolMessage(content=get_weather(**call["args"]), tool_call_id=call["id"])
    follow_up = chat_anthropic(served, max_tokens=24).bind_tools([get_weather]).invoke([question, answer, result])
    assert follow_up.content is not None


# ---- instructor

# JSON_SCHEMA and TOOLS hold the output to the model's schema. JSON asks only for some
# JSON object (the schema is in its system prompt, which SmolLM2 copies instead of
# filling in), so that case shows the model one worked example first.
ONE_SHOT = [{"role": "user", "content": "France: capital Paris, 68000000 people."},
            {"role": "assistant", "content": '{"name": "France", "capital": "Paris", "population": 68000000}'}]


@pytest.mark.parametrize("mode, example", [
    (instructor.Mode.JSON_SCHEMA, []), (instructor.Mode.TOOLS, []), (instructor.Mode.JSON, ONE_SHOT)])
def test_instructor_modes(served, mode, example):
    client = instructor.from_openai(
        openai.OpenAI(base_url=f"{served.url}/v1", api_key=KEY, max_retries=0, timeout=300), mode=mode)
    country = client.chat.completions.create(
        model="smol-tools", response_model=Country, max_retries=2, temperature=0, max_tokens=200,
        messages=example + [{"role": "user", "content": "Italy: capital Rome, 59000000 people."
                                                        if example else ASK_COUNTRY}])
    assert isinstance(country, Country)


# ---- OpenAI Agents SDK

def async_client(served):
    return openai.AsyncOpenAI(base_url=f"{served.url}/v1", api_key=KEY, max_retries=0, timeout=300)


def test_agents_function_tool_over_responses(served):
    calls = []

    @function_tool
    def weather(city: str) -> str:
        """Current weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    agent = Agent(name="weather", instructions="Answer with the weather tool.", tools=[weather],
                  model=OpenAIResponsesModel(model="smol-tools", openai_client=async_client(served)),
                  model_settings=ModelSettings(tool_choice="weather", max_tokens=100, temperature=0),
                  tool_use_behavior="stop_on_first_tool")
    result = Runner.run_sync(agent, "What is the weather in Paris?", max_turns=3)
    assert len(calls) == 1 and isinstance(calls[0], str)
    assert result.final_output == f"sunny in {calls[0]}"


def test_agents_typed_output_over_chat_completions(served):
    agent = Agent(name="extract", instructions="Extract the country.", output_type=Country,
                  model=OpenAIChatCompletionsModel(model="smol", openai_client=async_client(served)),
                  model_settings=ModelSettings(max_tokens=200, temperature=0))
    result = Runner.run_sync(agent, ASK_COUNTRY, max_turns=2)
    assert isinstance(result.final_output, Country)


# ---- pydantic-ai

def test_pydantic_ai_typed_output(served):
    model = OpenAIChatModel("smol-tools", provider=OpenAIProvider(base_url=f"{served.url}/v1", api_key=KEY))
    agent = PydanticAgent(model, output_type=Country, model_settings={"max_tokens": 200, "temperature": 0})
    result = agent.run_sync(ASK_COUNTRY)
    assert isinstance(result.output, Country)


def test_anthropic_sdk_tool_loop_sends_back_its_own_blocks(served):
    # anthropic 2.14 writes `caller` into every tool_use block it returns; the
    # documented loop sends response.content back as it came.
    client = anthropic.Anthropic(base_url=served.url, api_key=KEY, max_retries=0, timeout=300)
    tools = [{"name": "get_weather", "description": "Current weather in a city.",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    # Greedy, so the call is the same every run: sampled at the default temperature 1
    # it once came back with an "arguments" key in its input (the SDK's create() takes
    # no temperature argument, hence extra_body).
    first = client.messages.create(model="smol-tools", max_tokens=100, tools=tools, messages=messages,
                                   tool_choice={"type": "tool", "name": "get_weather"},
                                   extra_body={"temperature": 0})
    use = next(block for block in first.content if block.type == "tool_use")
    messages += [{"role": "assistant", "content": first.content},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                               "content": get_weather(**use.input)}]}]
    second = client.messages.create(model="smol-tools", max_tokens=24, tools=tools, messages=messages)
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use")

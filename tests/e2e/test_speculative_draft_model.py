"""Speculative decoding with a draft model on the default model (SmolLM2-135M Q4_1)
through the official openai client: greedy and seeded text is the text without
speculation, a draft model with the target's weights has every draft accepted (the
vllm:spec_decode_* counters say so), and a draft model with another tokenizer, or
none at the path, is refused at start with the reason."""
import json

import openai
import pytest

from conftest import DEFAULT_MODEL, TINY_MODEL, Daemon, require_model
from http_util import request
from speculative_util import serve_speculative, spec_counters

PROMPTS = [
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog.",
    "List the days of the week, one per line.",
    "Write a short poem about the sea.",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    # The target as its own draft: the same weights give the same greedy tokens, so
    # every draft must be accepted (a row's logits do not depend on its step).
    daemon = serve_speculative(tmp_path_factory, {"method": "draft_model", "model": str(DEFAULT_MODEL),
                                                  "num_speculative_tokens": 3})
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=300)


def chat(client, prompt, speculative, **extra):
    return client.chat.completions.create(
        model="smol", messages=[{"role": "user", "content": prompt}], max_tokens=64,
        extra_body={"speculative": speculative}, **extra)


def test_greedy_text_is_the_same_and_every_draft_is_accepted(served, client):
    before = spec_counters(served)
    for prompt in PROMPTS:
        plain = chat(client, prompt, speculative=False, temperature=0)
        speculated = chat(client, prompt, speculative=True, temperature=0)
        assert speculated.choices[0].message.content == plain.choices[0].message.content, prompt
        assert speculated.usage.completion_tokens == plain.usage.completion_tokens
    after = spec_counters(served)
    drafted = after["num_draft_tokens"] - before["num_draft_tokens"]
    assert after["num_drafts"] > before["num_drafts"]
    assert drafted > 0
    assert after["num_accepted_tokens"] - before["num_accepted_tokens"] == drafted


def test_streamed_seeded_and_n_are_the_same(served, client):
    def streamed(speculative):
        chunks = list(client.chat.completions.create(
            model="smol", messages=[{"role": "user", "content": PROMPTS[2]}], temperature=0.8, seed=11, n=2,
            max_tokens=40, stream=True, logprobs=True, extra_body={"speculative": speculative}))
        texts = ["", ""]
        logprobs = [[], []]
        for chunk in chunks:
            for choice in chunk.choices:
                texts[choice.index] += choice.delta.content or ""
                if choice.logprobs:
                    logprobs[choice.index] += [(t.token, t.logprob) for t in choice.logprobs.content]
        return texts, logprobs
    assert streamed(True) == streamed(False)


def test_structured_output_is_the_same(served, client):
    # Drafts the grammar refuses end the draft; what is accepted is still the target's.
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city", "days"], "additionalProperties": False}
    def answer(speculative):
        r = chat(client, "Plan a trip to Paris as JSON.", speculative=speculative, temperature=0,
                 response_format={"type": "json_schema", "json_schema": {"name": "trip", "schema": schema}})
        return r.choices[0].message.content
    plain = answer(False)
    assert answer(True) == plain
    assert set(json.loads(plain)) == {"city", "days"}


@pytest.mark.parametrize("draft,message", [
    (TINY_MODEL, "has another tokenizer than the model"),
    ("/nonexistent/draft.gguf", "the draft model /nonexistent/draft.gguf does not exist"),
])
def test_a_draft_model_that_cannot_draft_is_refused(tmp_path, draft, message):
    require_model(DEFAULT_MODEL, "`make model`")
    path = tmp_path / "sluice.json"
    path.write_text(json.dumps({"models": [{"path": str(DEFAULT_MODEL), "name": "smol", "speculative": {
        "method": "draft_model", "model": str(draft)}}]}))
    daemon = Daemon(["--config", str(path), "--port", "0"])
    assert daemon.wait_exit(timeout=60) != 0
    assert message in daemon.log
